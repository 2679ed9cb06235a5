"""Tiered storage (KIP-405) on the disk cluster (conftest `disk_cluster`: Kafka's LocalTieredStorage on a local
directory): a topic whose older segments are already only in remote storage gains a replica under a throttle
through `reassign-monitor execute`, watched by `reassign-monitor run`. The new replica copies the leader's local
log only: that is the target, the ETA is that copy's, and the remote bytes are shown apart (docs/progress.md
"Tiered storage")."""

import shutil
from pathlib import Path

import pytest
from kafka.protocol.consumer import ListOffsetsRequest

from streaming.cluster.admin import KafkaClusterAdmin

from tests import eta_scenario as eta
from tests.cluster_cli import MB, cli, throttles, write_plan
from tests.job_process import JobProcess, read_topic
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

SOURCE, DESTINATION = eta.SOURCE, eta.DESTINATION  # the judged records' key is topic:0:DESTINATION
WRITTEN_MB = 40
# 1 MiB segments, 8 MiB kept locally: about 31 MB end up only in remote storage, about 9 MB stay local.
TOPIC_CONFIGS = {"remote.storage.enable": "true", "segment.bytes": "1048576", "local.retention.bytes": "8388608"}
RATE = 320_000  # bytes/s, leader and follower: the ~9 MB local log copies in about 28 s
# What local.retention.bytes leaves on the leader's disk, the active segment included (9.3 MB measured).
LOCAL_AT_MOST = 8388608 + 1048576 + 200_000
REMOTE_METRIC = "kafka_reassignment_replica_remote_bytes"
EARLIEST, EARLIEST_LOCAL, LATEST = -2, -4, -1  # ListOffsets timestamps (KIP-405 added -4)


def leader_offsets(admin, topic):
    """{timestamp: offset} of partition 0 from its leader (SOURCE): earliest, earliest local and latest."""
    manager = admin._manager
    found = {}
    for spec in (EARLIEST, EARLIEST_LOCAL, LATEST):
        request = ListOffsetsRequest(isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=0, timestamp=spec)])])

        async def ask(request=request):
            return await manager.send(request, node_id=SOURCE)

        [partition] = manager.run(ask).topics[0].partitions
        found[spec] = partition.offset
    return found


def local_size(admin, topic, broker):
    """Bytes of the partition's log on `broker` as DescribeLogDirs reports it (its local log), or None."""
    for response in admin.describe_log_dirs(brokers=[broker]):
        for log_dir in response["log_dirs"]:
            for found in log_dir["topics"]:
                if found["name"] == topic:
                    return sum(p["partition_size"] for p in found["partitions"] if p["partition_index"] == 0)
    return None


def only_remote_bytes(cluster, topic, local_log_start):
    """Bytes of the segments LocalTieredStorage holds for the partition below the leader's local log start (each
    segment file is named by its base offset)."""
    root = Path(cluster.env["CLUSTER_DIR"]) / "remote-storage"
    segments = [path for path in root.rglob("*.log") if f"{topic}-0-" in str(path.parent)]
    return sum(path.stat().st_size for path in segments if int(path.name.split("-")[0]) < local_log_start)


@pytest.fixture(scope="module")
def tiered_job(disk_cluster):
    """The job on the disk cluster: 2 s trigger, the janitor as an operator runs it (owned throttles removed)."""
    directory = Path(disk_cluster.env["CLUSTER_DIR"]) / "jobs" / "tiered"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    job = JobProcess(disk_cluster.bootstrap, directory / "checkpoint", directory / "job.log", "--master", "local[2]",
                     "--trigger-interval", "2s", "--rate-window", "10s").start()
    yield job
    job.stop()
    print(job.log()[-3000:])


def test_a_replica_of_a_tiered_topic_copies_the_local_log_and_shows_the_remote_bytes_apart(disk_cluster, tiered_job,
                                                                                          tmp_path):
    cluster, job = disk_cluster, tiered_job
    topic = cluster.create_topic(cluster.unique_topic("tiered"), {0: [SOURCE]}, megabytes=WRITTEN_MB,
                                 configs=TOPIC_CONFIGS)
    admin = cluster.admin()
    watch = None
    try:
        # The older segments reach remote storage and leave the leader's disk within seconds (1 s RLM task and
        # retention check), one segment after another: wait until the local log is what local.retention.bytes
        # keeps, and the same at two looks.
        looks = []

        def settled():
            looks.append((leader_offsets(admin, topic), local_size(admin, topic, SOURCE)))
            if len(looks) > 1 and looks[-1] == looks[-2] and looks[-1][1] <= LOCAL_AT_MOST:
                return looks[-1]
            return None

        offsets, local_bytes = wait_for(settled, 90, interval_s=2,
                                        message="the older segments to be only in remote storage")
        assert offsets[EARLIEST] == 0 < offsets[EARLIEST_LOCAL]  # the log start counts the remote segments
        door = KafkaClusterAdmin(cluster.bootstrap)
        try:
            [polled] = door.list_offsets({(topic, 0): SOURCE})
        finally:
            door.close()
        assert (polled["log_start"], polled["local_log_start"], polled["log_end"]) == (
            offsets[EARLIEST], offsets[EARLIEST_LOCAL], offsets[LATEST])
        remote = only_remote_bytes(cluster, topic, offsets[EARLIEST_LOCAL])
        assert remote > 25 * MB, (remote, offsets)
        job.wait_first_batch()

        watch = eta.FinishWatch(cluster.bootstrap, [topic]).start()
        plan = write_plan(tmp_path / "plan.json", [(topic, 0, [SOURCE, DESTINATION])])
        code, out, err = cli("execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan,
                             "--throttle", RATE)
        assert code == 0, err
        labels = {"topic": topic, "partition": 0, "broker": DESTINATION}
        shown = []  # /metrics' remote bytes of the move, every second while it moves

        def finished_and_seen():
            value = job.metric(REMOTE_METRIC, **labels)
            if value is not None:
                shown.append(value)
            return watch.done()

        wait_for(finished_and_seen, 180, interval_s=1, message="the new replica to join the ISR")
        copied = local_size(admin, topic, DESTINATION)  # the new replica's whole log: its copy
        key = f"{topic}:0:{DESTINATION}"
        wait_for(lambda: any(r["state"] == "COMPLETED" for k, r in read_topic(job.bootstrap, job.progress_topic)
                             if k == key), 60, message="its COMPLETED record")
        wait_for(lambda: not throttles(cluster, [topic]), 60, message="the job to remove the throttles it owns")

        records = read_topic(job.bootstrap, job.progress_topic)
        replica = [r for k, r in records if k == key]
        moving = [r for r in replica if r["state"] in ("PENDING", "COPYING")]
        print(f"local log {local_bytes} B, copied {copied} B, remote only {remote} B (LocalTieredStorage), "
              f"offsets {offsets}; records: " + "; ".join(
                  f"{r['state']} {r['numerator']}/{r['denominator']} eta {r['eta_seconds']} "
                  f"remote {r['remote_bytes']} behind {r['messages_behind_estimate']}" for r in replica))
        assert [r["state"] for r in replica].count("COMPLETED") == 1
        # The target is the leader's local log - what the new replica copies - never the remote segments.
        assert copied == pytest.approx(local_bytes, abs=MB), (copied, local_bytes)
        assert moving and all(r["denominator"] == pytest.approx(copied, abs=MB) for r in moving), moving
        assert all(r["numerator"] is None or r["numerator"] <= local_bytes + MB for r in replica)
        # The remote bytes apart, in the records and on /metrics: the estimate within 5 % of LocalTieredStorage's.
        assert all(r["remote_bytes"] == pytest.approx(remote, rel=0.05) for r in moving), (remote, moving)
        assert shown and all(value == pytest.approx(remote, rel=0.05) for value in shown), (remote, shown)
        partition = [r for k, r in records if k == f"{topic}:0"]
        assert partition and all(r["remote_bytes"] == pytest.approx(remote, rel=0.05) for r in partition
                                 if r["state"] in ("PENDING", "COPYING"))
        # Never "behind": messages behind count the local log's offsets only.
        local_offsets = offsets[LATEST] - offsets[EARLIEST_LOCAL]
        assert all(r["messages_behind_estimate"] is None or r["messages_behind_estimate"] <= local_offsets
                   for r in moving), moving
        # The ETA of the local copy, judged as the shared-throttle ETA test judges it (tests/eta_scenario.py).
        rows = eta.judged(records, watch.finished)
        judged = eta.summary(rows, 2)
        print(eta.describe("tiered move ETA", judged))
        assert rows and judged["nulls"] == 0 and judged["within"] == judged["judged"], (
            "\n".join(f"actual {a:.1f}s eta {e}" for _, a, e, _ in rows))
    finally:
        if watch is not None:
            watch.stop()
        admin.close()
        cli("cancel", "--bootstrap-server", cluster.bootstrap, "--all")
        cluster.delete_topics([topic])

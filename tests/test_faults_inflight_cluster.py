"""Changes made by others while a move is in flight, on the real cluster with the job running and owning
throttles: a replica that leaves the adding list without joining the ISR, a deleted
topic, added partitions, a changed target, a throttle entry removed by someone else, and a cancel after one
adding replica joined the ISR. All on the dedicated `fault_cluster` with the shared `fault_job`."""

import json

import pytest
from tests.cluster_cli import cli
from tests.fault_support import (
    TRIGGER_S, atoms, cleanup, execute, figure, moving, prepare, records, replica_states, seconds_until)
from tests.job_process import last_batch, running
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

SOURCE, DESTINATION, OTHER = 1, 2, 3  # no node is killed here: fixed roles keep the cases readable
COPIED = "kafka_reassignment_replica_copied_bytes"
MEGABYTES = 20  # the rate is averaged over 11 one-second windows: a fresh move bursts ~10 MB before it bites
CONVERGE_S = 60  # the longest case finishes a second 20 MB move after the change, then removes


def copying(job, topic, broker=DESTINATION, at_least=1_500_000):
    labels = {"topic": topic, "partition": 0, "broker": broker}
    wait_for(lambda: (job.metric(COPIED, **labels) or 0) > at_least, 60, interval_s=0.2,
             message=f"over {at_least} bytes copied to broker {broker}")


def copying_move(cluster, job, tmp_path, created):
    """A fresh topic (added to `created`) whose partition 0 moves from SOURCE to DESTINATION under a throttle,
    once the job shows bytes copied: (topic, the throttles that were set before the move's execute)."""
    topic = prepare(cluster, SOURCE, OTHER, megabytes=MEGABYTES)
    created.append(topic)
    before = atoms(cluster, [topic])
    execute(cluster, tmp_path, [(topic, 0, [SOURCE, DESTINATION])])
    copying(job, topic)
    return topic, before


def isr(cluster, topic, partition=0):
    """(sorted ISR, sorted replicas) of one partition; retried while a dead broker refuses the first try."""
    def read():
        try:
            admin = cluster.admin()
        except Exception:  # bootstrap picked the dead broker: try again
            return None
        try:
            for described in admin.describe_topics([topic]):
                for p in described["partitions"]:
                    if p["partition_index"] == partition:
                        return sorted(p["isr_nodes"]), sorted(p["replica_nodes"])
        except Exception:  # the request went to the dead broker: try again
            return None
        finally:
            admin.close()
        return None

    return wait_for(read, 20, interval_s=0.3, message=f"the ISR of {topic}-{partition}")


def adding_replicas(cluster, topic, partition=0):
    admin = cluster.admin()
    try:
        for tp, state in admin.list_partition_reassignments().items():
            if (tp.topic, tp.partition) == (topic, partition):
                return sorted(state["adding_replicas"])
    finally:
        admin.close()
    return []


def cancel(cluster, tmp_path, topic):
    plan = tmp_path / "cancel.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0}]}))
    code, _, err = cli("cancel", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan,
                       "--timeout", "15")
    assert code == 0, f"cancel exited {code}: {err.strip()}"


def change_target(replicas):
    """A second `execute --additional` of partition 0 with a new target: the way an operator changes it."""
    def change(cluster, tmp_path, topic):
        execute(cluster, tmp_path, [(topic, 0, replicas)], 1_000_000, "--additional")
    return change


# Each way a replica leaves the adding list without ever joining the ISR: the change after bytes were
# copied. Broker 2 had bytes, never all of them.
LEAVING = {
    # [1] -> [1,2], then [1,3]: broker 2 is dropped (it was written COMPLETED, progress 1.0, in_isr true)
    "target-changed": change_target([SOURCE, OTHER]),
    # cancelled: KIP-455 reverts to [1]
    "cancelled": cancel,
    # [1] -> [1,2], then [1,2,3]: the controller's adding list becomes [3] (target minus current replicas),
    # so broker 2 stays as a plain replica that has not caught up: not a completed move
    "made-plain-replica": change_target([SOURCE, DESTINATION, OTHER]),
}


@pytest.mark.parametrize("case", list(LEAVING))
def test_replica_leaving_adding_list_without_joining_isr_is_cancelled(fault_cluster, fault_job, tmp_path, case):
    cluster, job, created = fault_cluster, running(fault_job), []
    try:
        start_batch = last_batch(job.log())
        topic, before = copying_move(cluster, job, tmp_path, created)
        LEAVING[case](cluster, tmp_path, topic)
        in_isr_after, replicas_after = isr(cluster, topic)
        # The case's premise, from the cluster: broker 2 is no longer being added, and not in the ISR.
        adding = adding_replicas(cluster, topic)
        assert DESTINATION not in adding and DESTINATION not in in_isr_after, (
            f"{case}: the change did not take broker {DESTINATION} out of the adding list before it joined the "
            f"ISR (adding {adding}, ISR {in_isr_after}): the case tests nothing")

        def ended():  # the replica's records up to the one that says its move ended, either way
            states = replica_states(job, topic, 0, DESTINATION, after_batch=start_batch)
            return states if states and states[-1][1] in ("CANCELLED", "COMPLETED") else None

        wait_for(lambda: ended() or job.process.poll() is not None, 30, interval_s=1,
                 message=f"{case}: the job to end broker {DESTINATION}'s move "
                         f"(states: {[s for _, s, _ in replica_states(job, topic, 0, DESTINATION, start_batch)]})")
        assert job.process.poll() is None, f"{case}: the job exited {job.process.poll()}: {job.log()[-3000:]}"
        states = ended()
        last = states[-1][2]
        ratio = (min(last["numerator"] / last["denominator"], 1.0)
                 if last["numerator"] is not None and last["denominator"] else None)
        figure(f"leaving_adding_list[{case}]", states=[s for _, s, _ in states][-4:], numerator=last["numerator"],
               denominator=last["denominator"], progress=last["progress"], in_isr=last["in_isr"],
               cluster_isr=in_isr_after, cluster_replicas=replicas_after)
        assert "COMPLETED" not in [s for _, s, _ in states], (
            f"{case}: broker {DESTINATION} left the adding list without joining the ISR but was written "
            f"COMPLETED: {[(b, s, v['progress'], v['in_isr']) for b, s, v in states]}")
        assert last["numerator"] and last["numerator"] > 0, (
            f"{case}: CANCELLED record lost the bytes copied (numerator {last['numerator']})")
        assert last["progress"] is not None and 0 < last["progress"] < 1.0 and ratio == pytest.approx(last["progress"]), (
            f"{case}: CANCELLED record's progress {last['progress']} is not its real numerator / denominator "
            f"{last['numerator']}/{last['denominator']}")
        # The cluster: broker 2 is not in the ISR right after the change (it had not caught up).
        assert DESTINATION not in in_isr_after and last["in_isr"] is False, (
            f"{case}: in_isr {last['in_isr']} in the CANCELLED record; the cluster's ISR {in_isr_after}")
        converged = seconds_until(lambda: not moving(cluster, topic) and atoms(cluster, [topic]) == before, CONVERGE_S)
        assert converged is not None, (
            f"{case}: the janitor did not converge within {CONVERGE_S}s: throttles now "
            f"{sorted(atoms(cluster, [topic]), key=str)}, before execute {sorted(before, key=str)}")
    finally:
        cleanup(cluster, created)


def delete_topic(cluster, tmp_path, topic):
    cluster.delete_topics([topic])


def add_partitions(cluster, tmp_path, topic):
    admin = cluster.admin()
    try:
        admin.create_partitions({topic: 4})
    finally:
        admin.close()


def remove_owned_entry(cluster, tmp_path, topic):
    """Somebody else takes the destination's follower entry out (the move then copies unthrottled)."""
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

    admin = cluster.admin()
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={
            "follower.replication.throttled.replicas": (AlterConfigOp.SUBTRACT, f"0:{DESTINATION}")})],
            raise_on_unknown=False)
    finally:
        admin.close()


# (change, brokers whose replica of partition 0 the job must track right after it, topic survives)
IN_FLIGHT = {
    "topic-deleted": (delete_topic, set(), False),
    "partitions-added": (add_partitions, {DESTINATION}, True),
    "target-changed": (change_target([SOURCE, OTHER]), {OTHER}, True),
    "throttle-entry-removed-by-someone-else": (remove_owned_entry, {DESTINATION}, True),
}


@pytest.mark.parametrize("case", list(IN_FLIGHT))
def test_in_flight_change_never_breaks_the_job(fault_cluster, fault_job, tmp_path, case):
    change, tracked, survives = IN_FLIGHT[case]
    cluster, job, created = fault_cluster, running(fault_job), []
    try:
        log_from = len(job.log())
        topic, before = copying_move(cluster, job, tmp_path, created)
        broker_rates_before = {a for a in before if isinstance(a[0], int)}
        change(cluster, tmp_path, topic)
        changed_batch = last_batch(job.log())

        def shown():  # brokers the job reports partition 0 moving to
            return {b for b in (1, 2, 3) if job.metric(COPIED, topic=topic, partition=0, broker=b) is not None}

        # Progress follows the cluster: the job shows exactly the adding replicas the cluster has now (a move
        # whose throttle was taken out may simply finish first).
        followed = seconds_until(lambda: shown() == tracked or (survives and not moving(cluster, topic)),
                                 6 * TRIGGER_S + 10)
        converged = seconds_until(
            lambda: not moving(cluster, topic)
            and (atoms(cluster, [topic]) == before if survives
                 else {a for a in atoms(cluster, []) if isinstance(a[0], int)} == broker_rates_before),
            CONVERGE_S)
        log = job.log()[log_from:]
        failed_actions = [line for line in log.splitlines() if line.startswith("throttle janitor:") and "FAILED" in line]
        figure(f"in_flight[{case}]", progress_follows_s=followed, janitor_converged_s=converged,
               tracebacks=log.count("Traceback"), failed_throttle_actions=len(failed_actions),
               job_alive=job.process.poll() is None)
        assert job.process.poll() is None, f"{case}: the job exited {job.process.poll()}; log:\n{log[-3000:]}"
        assert "Traceback" not in log, f"{case}: a traceback in the job's log:\n{log[log.index('Traceback'):][:3000]}"
        assert followed is not None, (
            f"{case}: within {6 * TRIGGER_S + 10:g}s the job did not report exactly brokers {sorted(tracked)} moving "
            f"for partition 0 (it shows {sorted(shown())})")
        assert converged is not None, (
            f"{case}: the janitor did not converge within {CONVERGE_S}s: throttles now "
            f"{sorted(atoms(cluster, [topic] if survives else []), key=str)}, before execute {sorted(before, key=str)}")
        assert not failed_actions, f"{case}: janitor actions failed: {failed_actions[:5]}"
        if not survives:
            ended = [s for _, s, _ in replica_states(job, topic, 0, DESTINATION, changed_batch - 1)]
            assert "COMPLETED" not in ended, f"{case}: the move of a deleted topic was written COMPLETED: {ended}"
        phantom = sorted({k for k, v in records(job, f"{topic}:") if v["kind"] == "replica"
                          and v["batch_id"] > changed_batch and int(v["partition"]) != 0})
        assert not phantom, f"{case}: replicas reported moving that the cluster never moved: {phantom}"
    finally:
        cleanup(cluster, created)


def test_cancel_after_one_adding_replica_joined_the_isr(fault_cluster, fault_job, tmp_path):
    """[s] -> [s,j,k]; broker k is SIGKILLed at once, so broker j gets the whole leader budget, catches up
    and joins the ISR while k cannot. Cancel then takes both adding replicas out (an offline adding replica
    is no reason to refuse), and no throttle may stay (Kafka's own tool leaves a broker rate here)."""
    cluster, job, created = fault_cluster, running(fault_job), []
    # The killed node must not be the active controller (that would be a controller failover instead).
    controller = cluster.active_controller()
    killed = next(n for n in (3, 2, 1) if n != controller)
    source, joins = [n for n in (1, 2, 3) if n != killed]
    try:
        topic = cluster.unique_topic("fault-cancel")
        cluster.create_topic(topic, {0: [source]}, megabytes=4)
        created.append(topic)
        start_batch = last_batch(job.log())
        execute(cluster, tmp_path, [(topic, 0, [source, joins, killed])], 1_000_000)
        cluster.kill(killed)
        wait_for(lambda: joins in isr(cluster, topic)[0], 40, interval_s=0.3,
                 message=f"broker {joins} to join the ISR while broker {killed} is down")
        in_isr_at_cancel = isr(cluster, topic)[0]
        # No wait for the dead broker to be fenced: an operator cancels a move to a dead broker at once.
        cancel(cluster, tmp_path, topic)
        replicas_after = wait_for(lambda: (lambda r: r if r == [source] else None)(isr(cluster, topic)[1]), 30,
                                  message=f"replicas back to [{source}]")
        cluster.restart()
        ended = {}
        for broker in (joins, killed):
            wait_for(lambda b=broker: (lambda s: s and s[-1][1] in ("CANCELLED", "COMPLETED"))(
                replica_states(job, topic, 0, b, start_batch)), 30, interval_s=1,
                message=f"the job to end broker {broker}'s move")
            ended[broker] = [s for _, s, _ in replica_states(job, topic, 0, broker, start_batch)]
        left = seconds_until(lambda: not atoms(cluster, [topic]), 20)
        figure("cancel_after_one_joined_isr", isr_at_cancel=in_isr_at_cancel, replicas_after=replicas_after,
               states={b: s[-3:] for b, s in ended.items()}, throttles_left=len(atoms(cluster, [topic])),
               throttles_gone_s=left, job_alive=job.process.poll() is None)
        assert joins in in_isr_at_cancel and killed not in in_isr_at_cancel, (
            f"the case needs exactly one adding replica in the ISR at the cancel: ISR {in_isr_at_cancel}")
        assert all(s[-1] == "CANCELLED" for s in ended.values()), f"adding replicas after the cancel: {ended}"
        assert left is not None, f"throttles left behind after the cancel: {sorted(atoms(cluster, [topic]), key=str)}"
        assert job.process.poll() is None, f"the job exited: {job.log()[-3000:]}"
    finally:
        cleanup(cluster, created)

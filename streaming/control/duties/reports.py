"""The `throttle` records of what the controller did (streaming.sinks' throttle_record): logged, counted in
kafka_reassignment_monitor_throttle_actions_total, and written to the progress topic - kept and written again next
tick if that write fails."""

from sinks import records as progress_records
from sinks.throttle_records import describe, throttle_record
from streaming.vocabulary.kafka_apis import PRODUCE

JANITOR_PREFIX = "throttle janitor: "


class Reports:
    """`writer`: write(keyed records) to the progress topic (None: kept, never written); `cluster`: the cluster's
    name in the records (streaming.vocabulary.cluster_name)."""

    def __init__(self, writer, metrics, cluster, wall, log, say):
        self.writer, self.metrics, self.cluster, self.wall, self.log, self.say = writer, metrics, cluster, wall, log, say
        self._unwritten = []

    def report(self, actions, cluster_id, batch_id, prefix=JANITOR_PREFIX):
        """Log, count and queue the `throttle` record of each action; the actions."""
        ts_ms = int(self.wall() * 1000)
        for action in actions:
            self.log(f"{prefix}{describe(action)}")
            self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            key, value = throttle_record(action, ts_ms, batch_id, cluster_id, cluster=self.cluster)
            self._unwritten.append((key, progress_records.encode(value)))
        return list(actions)

    def write(self):
        if not self._unwritten or self.writer is None:
            return
        try:
            self.writer.write(self._unwritten)
            self._unwritten = []
        except Exception as error:
            self.metrics.poll_errors.labels(api=PRODUCE).inc()
            self.say(f"writing {len(self._unwritten)} throttle record(s) failed, retrying next tick: {error}")

"""The job's one driver-side watch: a light poll about every second, from the moment `run` starts (rules:
streaming.watch.rules, pure; the thread: streaming.watch.watch; what it tells the streaming source:
streaming.watch.gate)."""

"""The controller's duties (docs/architecture.md "The controller"): each a module that owns its state, takes what
it needs (the look, the clock, the ledger's records, a read taken now) as arguments, and returns what it decided -
actions for the one writer (streaming.control.applier), records to write, a reason for a batch. No duty reads
another's fields; the scheduler (streaming.control.controller) hands each what it needs and hands what it decided
to where it goes. Only `plans` acts itself: a plan's step interleaves reads and writes (streaming.control.plans.step),
so its advancer is given the applier.

- `looks`: ListPartitionReassignments by any of the controller's looks, and the gap between two of them;
- `handover`: the one place the batch handler's thread and the controller's threads share, under one lock;
- `owned`: the ledger's reads (and when one is due), the owned partitions, the moves Kafka accepted since the read
  before;
- `janitor`: when the throttle janitor sweeps and what a sweep decides, a batch's due removals (dry runs reported
  once);
- `adoption`: throttles another tool set with its move, compared across views of the whole cluster;
- `steering`: `--throttle auto`, the owned rates moved as a batch's findings say;
- `plans`: one step of every plan whose lease this job holds;
- `pictures`: the controller's own whole polls for /metrics (the first look, and while a batch is late), and
  adoption's own reads of every throttle;
- `liveness`: the gate (whether a batch is wanted, the moves it must report) and the liveness published;
- `reports`: the `throttle` records of what was done, kept until the progress topic took them.
"""

"""Plans of any size: a reassignment advanced a few partitions at a time under limits, crash-safe.

`plan.py` (value types and their codec), `states.py` (what each partition of a plan is now, pure),
`scheduler.py` (which pending partitions to submit now, pure), `plan_store.py` (the plan in the
ownership topic), `submit.py` (one wave: ownership record, throttles, AlterPartitionReassignments),
`advance.py` (`advance_once`: one step of a plan, what `execute --wait` loops on and the job's watch calls).
"""

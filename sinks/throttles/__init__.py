"""The throttle janitor, one job per module (README "Throttle janitor").

Value types: `actions` (ThrottleAction, Policy and their names), `ownership` (the records of what this
tool set, their codec and the store protocol), `entries` (the `p:b` lists), `view` (the cluster as the
rules see it). Pure decisions: `plan` (the safety rules and their order), `bookkeeping` (read-back
confirmation, settled records), `claims` (what `execute` sets), `observe` (throttles another tool set).
I/O through the admin door it is given: `read`, `apply`, `ownership_store`. Output: `report`.
Orchestration: `janitor`.
"""

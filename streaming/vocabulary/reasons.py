"""Why a replica move is not healthy: the enumerated reason codes, defined once. The `reason_code` of
progress records, the `progress` report and the `reason_code` label of
kafka_reassignment_replica_diagnosis carry these names (a bounded set, never free text); the one-line
`reason` beside a code carries the numbers. The rules that pick a code live in streaming.core.diagnosis.
"""

from enum import Enum


class ReasonCode(Enum):
    DESTINATION_OFFLINE = "the destination broker is offline or does not answer"
    LOG_DIR_OFFLINE = "the destination broker took the log dir holding the replica offline (full or failed)"
    LEADER_OFFLINE = "the partition's leader is offline, does not answer, or there is none"
    UNOBSERVED = "the destination or the leader broker does not answer the job while Kafka lists it alive"
    TARGET_REPLICA_OUT_OF_ISR = "in the ISR, but the reassignment waits for a target replica that is not moving and is out of the ISR"
    CAUGHT_UP_NOT_IN_ISR = "all bytes copied but the replica has not joined the ISR"
    THROTTLE_TOO_LOW = "no bytes arrive and the throttle that binds the move is below what one fetch per quota window carries"
    LEADER_NOT_SENDING = "no bytes arrive although the leader answers"
    COPY_BELOW_GROWTH = "the move's copy rate (its share of its budgets) is at or below the leader's growth: it cannot finish"
    WAITING_FOR_BUDGET = "no bytes yet: the budget it needs is shared by other moves"
    NO_BYTES_YET = "no bytes yet, with no other move on its budget"


REASON_CODES = tuple(code.name for code in ReasonCode)

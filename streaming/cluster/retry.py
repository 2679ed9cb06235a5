"""Bounded retries of one cluster call, as the error table (streaming.vocabulary.errors.kind_of) says.

`next_step` is the rule, in this order:
1. an error no retry can fix (refused, not authorized, unreachable) is raised at once;
2. a connection the other side closed or refused (GONE) will not come back within the call: no pause,
   no waiting on that node. The call is tried again at once when it can go elsewhere (`reroute()`: the
   door now holds that node as gone and steers around it, and a live node remains), or once after the
   first such error of the call. Otherwise no live node is left to ask: raised;
3. a transient error (leader change, coordinator loading, request timed out) is retried after a pause
   that doubles from `first_pause_s` up to `max_pause_s`; an error meaning the client's view of the
   cluster is stale (unknown broker id, not controller) first calls `refresh` (the caller rebuilds its
   client). Both only while the next attempt can start before the call's deadline.
The clock and the sleep are arguments, so the rule is tested without waiting.
"""

import time

from streaming.vocabulary.errors import GONE, REFRESH, RETRIABLE_KINDS, from_kafka_error, kind_of

FIRST_PAUSE_S = 0.1
MAX_PAUSE_S = 1.0

RAISE = "raise"
RETRY_NOW = "retry now"
RETRY_AFTER_PAUSE = "retry after pause"


def next_step(kind, left_s, pause_s, rerouted, gone_before):
    """What to do after an error of `kind` with `left_s` seconds left before the deadline. `rerouted`: the
    call can go to another node; `gone_before`: an earlier error of this call was GONE."""
    if kind not in RETRIABLE_KINDS or left_s <= 0:
        return RAISE
    if kind == GONE:
        return RETRY_NOW if rerouted or not gone_before else RAISE
    return RETRY_AFTER_PAUSE if pause_s < left_s else RAISE


def retrying(call, doing, timeout_s, refresh=None, reroute=None, on_retry=None, clock=time.monotonic,
             sleep=time.sleep, first_pause_s=FIRST_PAUSE_S, max_pause_s=MAX_PAUSE_S):
    """`call()`'s result; its errors retried as `next_step` says, then raised as our exceptions.
    `reroute()` (after a GONE error) answers the nodes the call now avoids, or None when no other node is
    left: the call goes elsewhere when that set grew, so immediate retries end once nodes stop failing anew.
    `on_retry(error, kind)` hears about every error that is retried (counting, logging)."""
    deadline = clock() + timeout_s
    pause = first_pause_s
    gone_before = False
    avoided = frozenset()
    while True:
        try:
            return call()
        except Exception as error:
            kind = kind_of(error)
            rerouted = False
            if kind == GONE and reroute is not None:
                now_avoided = reroute()
                rerouted = now_avoided is not None and not now_avoided <= avoided
                avoided = now_avoided or avoided
            step = next_step(kind, deadline - clock(), pause, rerouted, gone_before)
            gone_before = gone_before or kind == GONE
            if step == RAISE:
                raise from_kafka_error(error, doing) from error
            if on_retry is not None:
                on_retry(error, kind)
            if step == RETRY_AFTER_PAUSE:
                if kind == REFRESH and refresh is not None:
                    refresh()
                sleep(pause)
                pause = min(pause * 2, max_pause_s)

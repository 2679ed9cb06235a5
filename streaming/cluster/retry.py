"""Bounded retries of one cluster call, as the error table (streaming.vocabulary.errors.kind_of) says.

A transient error (leader change, coordinator loading, request timed out) is retried after a pause that
doubles from `first_pause_s` up to `max_pause_s`; an error meaning the client's view of the cluster is
stale (unknown broker id, not controller, lost connection) first calls `refresh` (the caller rebuilds
its client), then retries. Everything happens inside the call's deadline: the last error is raised,
mapped to our exceptions, once the next attempt could not start before it. Any other error is raised
at once. The clock and the sleep are arguments, so the rule is tested without waiting.
"""

import time

from streaming.vocabulary.errors import REFRESH, RETRIABLE_KINDS, from_kafka_error, kind_of

FIRST_PAUSE_S = 0.1
MAX_PAUSE_S = 1.0


def retrying(call, doing, timeout_s, refresh=None, on_retry=None, clock=time.monotonic, sleep=time.sleep,
             first_pause_s=FIRST_PAUSE_S, max_pause_s=MAX_PAUSE_S):
    """`call()`'s result; its errors retried while retriable and time remains, then raised as our exceptions.
    `on_retry(error, kind)` hears about every error that is retried (counting, logging)."""
    deadline = clock() + timeout_s
    pause = first_pause_s
    while True:
        try:
            return call()
        except Exception as error:
            kind = kind_of(error)
            if kind not in RETRIABLE_KINDS or clock() + pause >= deadline:
                raise from_kafka_error(error, doing) from error
            if on_retry is not None:
                on_retry(error, kind)
            if kind == REFRESH and refresh is not None:
                refresh()
            sleep(pause)
            pause = min(pause * 2, max_pause_s)

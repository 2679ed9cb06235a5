"""The progress spool: a batch's records made durable on the driver's disk, then delivered to the progress topic
by a thread of their own, in order (docs/architecture.md "The progress spool").

A write appends one file to the spool directory (inside a local checkpoint location) and fsyncs it: once `write`
returns, the records survive a crash of the job, so Spark may commit the batch. The sender delivers the files
oldest first through `publish` (the progress topic's publisher: an idempotent `acks=all` producer) and deletes
each once Kafka acknowledged it; a delivery that fails is retried, in order, after a pause. A job that starts
over a spool that still holds files delivers those first (they are the oldest). Every record is keyed and
carries its batch id, so a file delivered twice (a crash between the acknowledgement and the delete) writes
nothing a reader has not seen: the later record supersedes.

Without it, a batch waited in foreachBatch for Kafka to acknowledge its records: a broker that hangs while it
holds a replica of the progress topic held that write until Kafka took it out of the ISR (about 9 s), and no
batch ran meanwhile. The spool's backlog is bounded (`max_bytes`): past it a write waits for the sender, as a
batch waited before.

Files: `<sequence>-<records>.records` (the count lets a start show the backlog without reading them), written
as `.partial` and renamed once synced; a `.partial` left by a crash was never acknowledged to its writer and is
removed. Each file holds its records as (4-byte key length, 4-byte value length, key, value), big-endian.
"""

import os
import struct
import threading
import time

DIRECTORY = "progress-spool"  # inside a local checkpoint location
SUFFIX, PARTIAL = ".records", ".partial"
_LENGTHS = struct.Struct(">II")
FIRST_RETRY_S, MAX_RETRY_S = 0.5, 10.0
DELIVERY_FILES = 64  # files delivered in one write while catching up


def encode(keyed_values):
    """The bytes of a file holding (key str, value bytes) pairs."""
    parts = []
    for key, value in keyed_values:
        key_bytes = key.encode("utf-8")
        parts += [_LENGTHS.pack(len(key_bytes), len(value)), key_bytes, value]
    return b"".join(parts)


def decode(data):
    """The (key str, value bytes) pairs of a file's bytes (`encode`'s inverse)."""
    out, at = [], 0
    while at < len(data):
        key_length, value_length = _LENGTHS.unpack_from(data, at)
        at += _LENGTHS.size
        key = data[at:at + key_length].decode("utf-8")
        at += key_length
        out.append((key, data[at:at + value_length]))
        at += value_length
    return out


def file_name(sequence, records):
    return f"{sequence:012d}-{records}{SUFFIX}"


def parse_name(name):
    """(sequence, records) of a spool file's name, or None for any other name."""
    if not name.endswith(SUFFIX):
        return None
    sequence, _, records = name[:-len(SUFFIX)].partition("-")
    return (int(sequence), int(records)) if sequence.isdigit() and records.isdigit() else None


class Spool:
    """`directory`: the spool's (created if missing); `publish(keyed_values)`: deliver and wait for Kafka's
    acknowledgement, raise when not (streaming.control.applier.Publisher.write); `on_failure(error, records)`:
    told of each failed delivery (counted and logged by the job); `max_bytes`: the backlog past which `write`
    waits for the sender, at most `full_wait_s` (then TimeoutError: a batch fails as a failed write did)."""

    def __init__(self, directory, publish, on_failure=lambda error, records: None, max_bytes=256 << 20,
                 full_wait_s=30.0, clock=time.monotonic):
        self.directory, self._publish, self._on_failure = directory, publish, on_failure
        self.max_bytes, self.full_wait_s, self._clock = max_bytes, full_wait_s, clock
        os.makedirs(directory, exist_ok=True)
        for name in os.listdir(directory):
            if name.endswith(PARTIAL):
                os.unlink(os.path.join(directory, name))
        files = self._files()
        self._next = max((sequence for sequence, _, _ in files), default=-1) + 1
        self._records = sum(records for _, records, _ in files)
        self._bytes = sum(os.path.getsize(path) for _, _, path in files)
        self._changed = threading.Condition()
        self._writing = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def _files(self):
        """[(sequence, records, path)] of the spool's files, oldest first."""
        found = ((parse_name(name), name) for name in os.listdir(self.directory))
        return sorted((parsed[0], parsed[1], os.path.join(self.directory, name)) for parsed, name in found if parsed)

    @property
    def backlog_records(self):
        """Records written and not yet delivered (the metric of docs/metrics.md)."""
        return self._records

    # -- the writers' side (foreachBatch, the controller's reports) --

    def write(self, keyed_values):
        """Append (key, value) pairs as one file, durable when this returns; the sender delivers them."""
        if not keyed_values:
            return
        data = encode(keyed_values)
        with self._changed:
            deadline = self._clock() + self.full_wait_s
            while self._bytes and self._bytes + len(data) > self.max_bytes:
                left_s = deadline - self._clock()
                if left_s <= 0:
                    raise TimeoutError(f"the progress spool holds {self._bytes} bytes not delivered to Kafka "
                                       f"(bound {self.max_bytes}) after {self.full_wait_s:g}s")
                self._changed.wait(min(left_s, 0.5))
        with self._writing:  # one file at a time: sequences are delivered in the order they were synced
            sequence, self._next = self._next, self._next + 1
            final = os.path.join(self.directory, file_name(sequence, len(keyed_values)))
            partial = final[:-len(SUFFIX)] + PARTIAL
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(descriptor, data)
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.rename(partial, final)
            _sync_directory(self.directory)
            with self._changed:
                self._records += len(keyed_values)
                self._bytes += len(data)
                self._changed.notify_all()

    # -- the sender --

    def start(self):
        self._thread = threading.Thread(target=self._run, name="reassign-monitor-progress-spool", daemon=True)
        self._thread.start()
        return self

    def deliver_once(self):
        """Deliver the oldest files (up to DELIVERY_FILES in one write) and delete them: True when some were
        delivered, False when the spool was empty; raises what the delivery raised (the files stay)."""
        files = self._files()[:DELIVERY_FILES]
        if not files:
            return False
        keyed, sizes = [], 0
        for _, _, path in files:
            with open(path, "rb") as handle:
                data = handle.read()
            keyed += decode(data)
            sizes += len(data)
        self._publish(keyed)
        for _, _, path in files:
            os.unlink(path)
        with self._changed:
            self._records -= len(keyed)
            self._bytes -= sizes
            self._changed.notify_all()
        return True

    def _run(self):
        pause_s = FIRST_RETRY_S
        while not self._stop.is_set():
            try:
                delivered = self.deliver_once()
                pause_s = FIRST_RETRY_S
            except Exception as error:
                self._on_failure(error, self._records)
                self._stop.wait(pause_s)
                pause_s = min(2 * pause_s, MAX_RETRY_S)
                continue
            if not delivered:
                with self._changed:
                    if not self._records and not self._stop.is_set():
                        # Until a write or close notifies: an idle job's sender costs nothing (it looked at its
                        # directory every second, one cluster's share of an idle fleet's CPU).
                        self._changed.wait()

    def close(self, timeout_s):
        """Stop the sender once it delivered what the spool holds, or after `timeout_s`: what is left stays on
        disk and is delivered first by the next start."""
        deadline = self._clock() + timeout_s
        with self._changed:
            while self._records and self._thread is not None and self._thread.is_alive() and self._clock() < deadline:
                self._changed.wait(min(0.1, max(0.0, deadline - self._clock())))
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - self._clock()) + 1.0)


def _write_all(descriptor, data):
    """os.write may write less than it was given."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _sync_directory(directory):
    """A rename is durable once its directory is synced."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)

"""The processes of one session (a job started with start_new_session: its driver, Spark JVM and Python
workers), read from /proc: their CPU, memory and number."""

import os
from pathlib import Path


def _stats(sid):
    """{pid: the fields of /proc/PID/stat after the command name} of the live processes of session `sid`."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # fields after ")": state ppid pgrp session ... utime(11) stime(12)
            found[int(entry)] = fields
    return found


def session_cpu_by_pid(sid):
    """{pid: CPU seconds (user + system)} of the live processes of one session."""
    tick = os.sysconf("SC_CLK_TCK")
    return {pid: (int(fields[11]) + int(fields[12])) / tick for pid, fields in _stats(sid).items()}


def session_rss_mb(sid):
    total = 0
    for pid in _stats(sid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total / 1024


def session_pss_mb(sid):
    """The session's proportional set size: each shared page divided among the processes sharing it. Spark's
    Python workers are forked from a daemon and share most of their pages with it, so the sum of VmRSS counts
    those pages once per process; PSS counts them once in all."""
    total = 0
    for pid in _stats(sid):
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
    return total / 1024


def session_processes(sid):
    return len(_stats(sid))

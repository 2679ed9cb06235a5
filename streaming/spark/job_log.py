"""The job's log: stderr, from the driver and from the source's executor (local mode: the same process's)."""

import sys


def log_line(line):
    """One line of the job's log: the door's lines about held nodes, the driver's own."""
    print(line, file=sys.stderr, flush=True)

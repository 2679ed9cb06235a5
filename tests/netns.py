"""A network namespace of the test's own, where a fault can cut one port off without touching the host: its own
loopback (127.0.0.1 there is not the host's), its own nftables ruleset (`drop_to`), gone when it is deleted.

`entered()` moves the calling thread into it (setns(2) on the thread: Linux keeps the network namespace per
thread). Every socket that thread opens, every thread it starts and every process it spawns from then on lives in
the namespace: the cluster (deploy/local-cluster.sh), the job, the test's clients and samplers. Sockets opened
before stay where they were, so the session's other fixtures keep working once the thread is back.
"""

import contextlib
import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000
TABLE = "fault"


def _setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


class NetworkNamespace:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
        try:
            self.run("ip", "link", "set", "lo", "up")
        except Exception:
            self.delete()
            raise
        return self

    def __exit__(self, *_):
        self.delete()

    def delete(self):
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True)

    def run(self, *command):
        return subprocess.run(["ip", "netns", "exec", self.name, *command], check=True, capture_output=True,
                              text=True)

    @contextlib.contextmanager
    def entered(self):
        """The calling thread inside the namespace for the block, back where it was after it."""
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield self
            finally:
                _setns(home)
        finally:
            os.close(target)
            os.close(home)

    @contextlib.contextmanager
    def dropping_to(self, port):
        """Every TCP packet sent to `port` inside the namespace dropped for the block (connections to it hang, as
        through a firewall that drops), and let through again after it whatever happens."""
        self.run("nft", f"add table inet {TABLE}")
        try:
            self.run("nft", f"add chain inet {TABLE} out {{ type filter hook output priority 0 ; }}")
            self.run("nft", f"add rule inet {TABLE} out tcp dport {port} drop")
            yield
        finally:
            self.run("nft", f"delete table inet {TABLE}")


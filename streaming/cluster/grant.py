"""The write grant: the one object that opens the cluster door's writer (streaming.cluster.writes).

Only streaming.control.applier imports it (and the writer, which checks it): pyproject.toml's contract
"One writer" and tests/test_one_writer.py hold every other module to that, so a module that holds the door can
read and cannot write.
"""


class WriteGrant:
    __slots__ = ()

    def __repr__(self):
        return "WRITE_GRANT"


WRITE_GRANT = WriteGrant()

"""A file the operator names (a reassignment plan, a client config), read as text without trusting it:
anything but a directory, pipes such as <(jq ...) included, at most a cap of bytes, UTF-8."""

import os
import stat

from streaming.vocabulary.errors import BadInput


def read_text(path, max_bytes):
    """The text of `path`. Too large or not UTF-8: BadInput, which never quotes the bytes (they may be part
    of a password). The size is checked on what was read, not only on what stat says."""
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory")
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            raise BadInput(f"{info.st_size} bytes: larger than {max_bytes} bytes")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise BadInput(f"larger than {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"not UTF-8 text (byte {error.start})") from error

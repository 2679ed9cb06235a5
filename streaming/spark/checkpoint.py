"""Where a `--checkpoint-location` lives: a local directory (a path or file: URI) that this machine can
check and write logs into, or a remote Hadoop-style URI (hdfs://, s3a://, abfss://, ...) that only
Spark reaches."""

import re

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_FILE_URI = re.compile(r"^file:(//)?")


def local_path(location):
    """The local path of `location`, or None when it is a remote URI."""
    if _FILE_URI.match(location):
        return _FILE_URI.sub("", location)
    return None if _URI.match(location) else location

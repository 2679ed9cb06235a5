"""`run` checks what Spark needs before anything starts: a Java to start its driver with. Without one the operator
gets one line and exit 2, not a pyspark stack after the controller started."""

import os
import subprocess

import pytest

from streaming.commands.run import check_java
from streaming.vocabulary.errors import EXIT_BAD_INPUT, BadInput
from tests.job_process import CLI, free_port


def executable(tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    return java


@pytest.mark.parametrize("environ, on_path, found", [
    ({}, "PATH", True),
    ({"JAVA_HOME": "JDK"}, None, True),
    ({"JAVA_HOME": "JDK"}, "PATH", True),
    ({}, None, "no `java` on PATH and no JAVA_HOME"),
    ({"JAVA_HOME": "/nonexistent/jdk"}, "PATH", "JAVA_HOME=/nonexistent/jdk has no bin/java"),  # as pyspark: no fallback
], ids=["on-path", "java-home", "java-home-first", "none", "java-home-without-java"])
def test_check_java(tmp_path, environ, on_path, found):
    java = executable(tmp_path)
    environ = {k: str(java.parent.parent) if v == "JDK" else v for k, v in environ.items()}
    which = lambda name: str(java) if on_path else None  # noqa: E731
    if found is True:
        check_java(environ, which)
    else:
        with pytest.raises(BadInput, match="no Java to start Spark") as raised:
            check_java(environ, which)
        assert found in str(raised.value)


def test_run_without_java_is_one_line_and_exit_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(CLI)  # the venv's bin: no java there
    result = subprocess.run([CLI, "run", "--bootstrap-server", "127.0.0.1:1", "--checkpoint-location",
                             str(tmp_path / "checkpoint"), "--metrics-port", str(free_port())],
                            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert result.stderr.count("\n") == 1 and "no Java to start Spark" in result.stderr, result.stderr
    assert not (tmp_path / "checkpoint").exists()

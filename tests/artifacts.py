"""The installable artifacts, for the tests that install them (tests/test_wheel.py, tests/test_image.py): built by
deploy/build.sh, which rebuilds only what changed, and the environment an installed command runs in."""

import hashlib
import os
import subprocess
from pathlib import Path

from tests.containerfile import image_name

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "deploy" / "build.sh"
PODMAN = ROOT / "deploy" / "image" / "podman.sh"
# A cold image build (the base from Debian's packages, then the image) took 4 min at a load average of 16-24.
BUILD_TIMEOUT_S = 1800
# The image the tests build: the recipe of the one the manifests name, under a name of this checkout's own, so
# that sessions of other checkouts on the same machine neither rebuild it nor run theirs in its place.
TEST_IMAGE = f"{image_name()}-test-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]}"
# What would let an installed command reach the checkout or another environment instead of its own installation.
NOT_INHERITED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                 "SPARK_HOME", "SPARK_CONF_DIR")


def built(what, **env):
    """`deploy/build.sh WHAT`'s answer (its last line on stdout): a path or an image name."""
    result = subprocess.run([str(BUILD), what], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                            env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"deploy/build.sh {what} failed:\n{result.stderr[-4000:]}"
    return result.stdout.strip().splitlines()[-1]


def podman(*args, timeout=120):
    return subprocess.run([str(PODMAN), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def outside_env(bin_dir):
    """This process's environment as an operator's shell would have it with only `bin_dir` installed: nothing
    pointing into the checkout or at another interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not Path(p).is_relative_to(ROOT)]
    env["PATH"] = os.pathsep.join([str(bin_dir), *path])
    return env

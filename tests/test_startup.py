"""Start-up that matches the command: `--help`, `--version` and `progress` load neither Spark, grafanalib,
a dataframe library (pandas, numpy, pyarrow: only the job uses them) nor AWS's libraries (only AWS MSK IAM uses
them). Proven by the modules a fresh interpreter holds afterwards (the wall times are measured by bench/startup.py, never asserted here)."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# rich: only the --watch live view draws with it; boto3, botocore and AWS's signer: only AWS MSK IAM signs with them
HEAVY = ("pyspark", "grafanalib", "pandas", "numpy", "pyarrow", "rich", "boto3", "botocore", "aws_msk_iam_sasl_signer")

CASES = [
    # id, argv, heavy modules it may load
    ("help", ["--help"], ()),
    ("version", ["--version"], ()),
    ("progress", ["progress", "--bootstrap-server", "127.0.0.1:1", "--timeout", "0.5"], ()),
    ("progress-bad-file", ["progress", "--bootstrap-server", "127.0.0.1:1", "--reassignment-json-file", "/nonexistent"],
     ()),
]


def loaded_after(argv):
    script = ("import json, sys\nfrom streaming.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)" % (argv,))
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv, allowed", [pytest.param(a, h, id=i) for i, a, h in CASES])
def test_a_command_loads_only_what_it_uses(argv, allowed):
    heavy = loaded_after(argv) & set(HEAVY)
    assert heavy <= set(allowed), f"reassign-monitor {' '.join(argv)} loaded {sorted(heavy - set(allowed))}"


def test_version_is_the_distribution_version():
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = subprocess.run([str(Path(sys.executable).with_name("reassign-monitor")), "--version"],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, f"reassign-monitor {expected}")

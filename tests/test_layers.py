"""The import layers of docs/architecture.md "Layers", enforced: import-linter's contracts in pyproject.toml
(layers top to bottom; only streaming.cluster reaches Kafka's client libraries; the Spark side of the job never
imports what acts; only the applier imports the write grant (tests/test_one_writer.py); only the job imports
Spark, and only the job a dataframe library; numpy, the columns' library, is in neither the cluster door, the
entry point nor the dashboards). An import from a lower layer to a higher one fails here."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = ("Layers:", "Only the cluster door talks to Kafka", "The Spark side of the job only computes", "One writer:",
             "Spark only in the job", "Dataframes only in the job",
             "Columns where rows are")


def test_import_contracts_are_kept():
    result = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    kept = [line for line in result.stdout.splitlines() if line.endswith(" KEPT") or " KEPT (" in line]
    assert result.returncode == 0, result.stdout[-3000:]
    assert len(kept) == len(CONTRACTS), result.stdout  # every contract ran
    assert all(any(line.startswith(name) for line in result.stdout.splitlines()) for name in CONTRACTS)

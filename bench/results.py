"""bench/RESULTS.md: each benchmark owns one `## ` section and replaces only that section."""

import re
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = "# Benchmark results\n\nMeasured on the project's 2-core machine; each section is rewritten by its benchmark.\n"


def markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(title, body):
    """Replace (or append) the section `## {title}` of RESULTS.md with `body`."""
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section
    RESULTS.write_text(text.rstrip() + "\n")

"""The documentation holds together: the generated references are current (rendered again in memory and compared),
every link in the README, the changelog and docs/ resolves (files and #anchors), every citation of a page and
section in the code or the docs names a heading that exists, nothing cites the old numbered contract changes, a
numbered rule or a file outside the repository, the records page's examples are valid records of every kind, the
README is the short front door, and the version is the changelog's newest."""

import json
import re
import tomllib
from pathlib import Path

import jsonschema
import pytest

from docs import reference
from sinks.records import KINDS, SCHEMA_PATH

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS.glob("*.md")])
# Where citations may sit: the project's own text, not the venv, the Kafka jars or the clusters' data.
SOURCE_DIRS = ("streaming", "sinks", "dashboards", "deploy", "tests", "bench", "docs", ".ci")
SOURCE_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".sh", ".json", ".properties", ".xml", ""}
SKIPPED_DIRS = {"__pycache__", "lib", ".local-cluster"}
README_LIMIT_BYTES = 16_000
# The history may name what is gone; this file names what it forbids.
HISTORY = {ROOT / "CHANGELOG.md", Path(__file__).resolve()}
FORBIDDEN = {
    "a numbered contract change (cite the docs page and section)": re.compile(r"contract\s+changes?\b", re.I),
    "a numbered rule (cite the rule by name: docs/ownership.md)": re.compile(r"\brules?\s+[0-9]"),
    "the design document outside the repository (docs/design.md is its successor)": re.compile(r"DESIGN\.md"),
    "a notes file outside the repository": re.compile(r"MEASURED\.md|STYLE\.md"),
    "the old runbook (docs/alerts.md)": re.compile(r"RUNBOOK\.md"),
}
# Code cites a page of docs/, not the README (the front door keeps no reference).
FORBIDDEN_IN_CODE = {"a section of the README (cite the docs page that has it)": re.compile(r"\bREADME\b(?!\.md)")}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CITATION = re.compile(r"((?:docs/[\w-]+|bench/RESULTS|README|CHANGELOG)\.md)(?:#([\w-]+)|\s+\"([^\"\n]+)\")?")
CODE_SPAN = re.compile(r"`([^`]*)`")


def project_files():
    files = [ROOT / name for name in ("README.md", "CHANGELOG.md", "pyproject.toml", "Makefile")]
    for top in SOURCE_DIRS:
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts):
                files.append(path)
    return files


def without_code(text):
    """Markdown text with fenced blocks and inline code spans blanked (links there are examples, not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def github_anchor(heading):
    """The fragment GitHub gives a Markdown heading (before de-duplication)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path):
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    return [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{1,6} ", line)]


def anchors(path):
    """Every fragment a heading of `path` answers to, duplicates numbered as GitHub numbers them."""
    seen, out = {}, set()
    for heading in headings(path):
        anchor = github_anchor(heading)
        out.add(f"{anchor}-{seen[anchor]}" if anchor in seen else anchor)
        seen[anchor] = seen.get(anchor, 0) + 1
    return out


def names_a_heading(path, section):
    """A cited section is a heading of the page (code spans read as their text), or the start of one ("ETA
    accuracy" for "ETA accuracy: ...")."""
    section = CODE_SPAN.sub(r"\1", section)
    return any(h == section or h.startswith((section + " ", section + ":"))
               for h in (CODE_SPAN.sub(r"\1", h) for h in headings(path)))


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def test_generated_references_are_current():
    stale = [str(path.relative_to(ROOT)) for path, text in reference.rendered_pages().items() if path.read_text() != text]
    assert not stale, f"stale generated references in {stale}: run `make docs` and commit"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_link_resolves(page):
    broken = []
    for target in LINK.findall(without_code(page.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: outside the repository
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_citation_names_a_page_and_section_that_exist():
    broken = []
    for path in project_files():
        text = path.read_text(errors="replace")
        for match in CITATION.finditer(text):
            page, anchor, section = match.groups()
            target, where = ROOT / page, f"{path.relative_to(ROOT)}:{line_of(text, match.start())}: {page}"
            if not target.exists():
                broken.append(f"{where}: no such page")
            elif anchor and anchor not in anchors(target):
                broken.append(f"{where}#{anchor}: no such heading")
            elif section and not names_a_heading(target, section):
                broken.append(f'{where} "{section}": no such heading')
    assert not broken, "\n".join(broken)


def test_nothing_cites_a_number_or_a_file_outside_the_repository():
    found = []
    for path in project_files():
        if path in HISTORY:
            continue
        text = path.read_text(errors="replace")
        rules = {**FORBIDDEN, **(FORBIDDEN_IN_CODE if path.suffix != ".md" and path.name != "pyproject.toml" else {})}
        found += [f"{path.relative_to(ROOT)}:{line_of(text, match.start())}: {what}: {match.group(0)!r}"
                  for what, pattern in rules.items() for match in pattern.finditer(text)]
    assert not found, "\n".join(found)


def record_examples():
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", (DOCS / "records.md").read_text(),
                                                      flags=re.M | re.S)]


def test_the_records_page_shows_every_kind_with_examples_the_schema_accepts():
    examples = record_examples()
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    for example in examples:
        validator.validate(example)
    assert {example["kind"] for example in examples} == set(KINDS)


def test_readme_is_the_front_door():
    readme = (ROOT / "README.md").read_text()
    first_lines = "\n".join(readme.splitlines()[:40])
    assert "make demo" in first_lines and "make test" in first_lines
    assert len(readme.encode()) <= README_LIMIT_BYTES, "the README is the front door: move detail into docs/"
    assert "## Where to go next" in readme


def test_the_version_is_the_changelog_s_newest_release():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    released = re.findall(r"^## \[([0-9][^\]]*)\]", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)
    assert released and released[0] == version, f"pyproject.toml says {version}; CHANGELOG's newest is {released[:1]}"


def test_github_anchor():
    assert github_anchor("Client settings: `--command-config`") == "client-settings---command-config"
    assert github_anchor("ETAs: one model of the throttle budgets") == "etas-one-model-of-the-throttle-budgets"
    assert github_anchor("[0.2.0] - 2026-11-25") == "020---2026-11-25"


GLOSSARY = DOCS / "glossary.md"
GLOSSARY_ROW = re.compile(r"^\| ([^|]+?) \| (.+) \|$", re.M)
INTRODUCED = re.compile(r"(?<![*\w])\*([A-Za-z][\w' -]*[A-Za-z])\*(?![*\w])")


def glossary():
    """{term: its definition} of docs/glossary.md's tables; "a / b" rows define both words, and a term set in
    italics inside a definition (a "first look" inside "look") is defined there."""
    terms = {}
    for term, meaning in GLOSSARY_ROW.findall(GLOSSARY.read_text()):
        if term in ("term", "---"):
            continue
        for word in term.split(" / "):
            terms[word.strip().lower()] = meaning
        for word in INTRODUCED.findall(meaning):
            terms[word.lower()] = meaning
    return terms


def used(term, text):
    return re.search(rf"(?<![\w-]){re.escape(term)}(?:s|es)?(?![\w-])", text, re.I) is not None


def test_every_term_the_glossary_defines_is_used_in_the_documentation():
    pages = "\n".join(without_code(p.read_text()) for p in PAGES if p != GLOSSARY)
    unused = sorted(term for term in glossary() if not used(term, pages))
    assert not unused, f"docs/glossary.md defines words no page uses: {unused}"


@pytest.mark.parametrize("page", [p for p in PAGES if p != GLOSSARY], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_term_a_page_introduces_is_in_the_glossary(page):
    defined = glossary()
    undefined = sorted({term for term in INTRODUCED.findall(without_code(page.read_text()))
                        if term.lower() not in defined})
    assert not undefined, f"{page.relative_to(ROOT)} introduces {undefined} in italics: define them in docs/glossary.md"


def test_the_glossary_check_reads_the_page():
    """The checks above cannot pass on an empty reading: the words the controller's documentation leans on are there."""
    assert {"door", "held", "lapse", "look", "picture", "ledger", "gate", "tick", "sweep", "duty"} <= set(glossary())

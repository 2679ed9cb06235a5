"""docs/security.md "Kafka ACLs" holds the text streaming.cluster.acls generates, and the definition names the CLI's
topics."""

import pytest

from streaming.cluster import acls
from streaming.cli import build_parser
from tests.kafka_fixtures import ROOT


def test_the_acl_section_of_the_docs_is_generated():
    page = (ROOT / "docs" / "security.md").read_text()
    assert acls.markdown() in page, "docs/security.md is stale: run `make docs`"


@pytest.mark.parametrize("command", ["run", "verify", "cancel"])
def test_default_topic_names_are_the_cli_defaults(command):
    args = build_parser().parse_args([command, "--bootstrap-server", "127.0.0.1:1"] +
                                     (["--reassignment-json-file", "f"] if command == "verify" else
                                      ["--all"] if command == "cancel" else []))
    assert args.progress_topic == acls.PROGRESS_TOPIC
    assert args.ownership_topic == acls.OWNERSHIP_TOPIC


@pytest.mark.parametrize("command", list(acls.COMMANDS))
def test_each_grant_appears_once_per_command(command):
    listed = [(g.resource, g.name, g.operation) for g in acls.COMMANDS[command][1](acls.PROGRESS_TOPIC, acls.OWNERSHIP_TOPIC)]
    assert len(listed) == len(set(listed)), f"{command} lists a grant twice"

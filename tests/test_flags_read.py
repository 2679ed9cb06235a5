"""Every flag a command's `--help` lists is read by that command: a flag accepted and ignored (as `--output` once was
by `run` and `pause`) tells an operator something the command does not do. Read from the source: a flag's `dest`
must be read as `args.<dest>` (or `getattr(args, "<dest>")`) in the command's module, the modules it imports from
the project, or the CLI's shared code (streaming.cli, and streaming.commands.fleet for --clusters)."""

import ast
from pathlib import Path

import pytest

from streaming.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("streaming", "sinks", "dashboards")
SHARED = ("streaming.cli", "streaming.commands.fleet")  # the flags every command shares: read before the command runs


def source_of(module):
    """The file of a project module, or None for a name that is not one (a function imported from a module)."""
    base = ROOT / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def project_imports(path):
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return {name for name in names if name.split(".")[0] in PROJECT_PACKAGES and source_of(name)}


def reachable(module):
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += project_imports(source_of(name))
    return seen


def flags_read(path):
    """The `args` attributes a module reads."""
    read = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            read.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "args"
              and isinstance(node.args[1], ast.Constant)):
            read.add(node.args[1].value)
    return read


def subcommands():
    [commands] = [a for a in build_parser()._actions if a.dest == "command"]
    return commands.choices


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_flag_a_command_lists_is_read(command):
    modules = reachable(f"streaming.commands.{command}") | set(SHARED)
    read = set().union(*(flags_read(source_of(m)) for m in modules))
    listed = {action.dest: action.option_strings for action in subcommands()[command]._actions if action.dest != "help"}
    unread = {dest: flags for dest, flags in listed.items() if dest not in read}
    assert not unread, f"`{command}` lists flags no code of it reads: {unread}"


def test_the_check_sees_an_unread_flag():
    """The check above cannot pass by accident: a flag no module reads is found."""
    assert "no_such_flag" not in set().union(*(flags_read(source_of(m)) for m in reachable("streaming.commands.run")))
    assert "output" in flags_read(source_of("streaming.commands.progress"))

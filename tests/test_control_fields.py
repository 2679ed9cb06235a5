"""No class in streaming/control holds more than FIELD_LIMIT fields (docs/architecture.md "The controller"): the
controller schedules duties, each a module with a state of its own, so a class that grows past the limit is a duty
to split out. Found by introspection: every class each module defines, its dataclass fields or the attributes its
methods set on `self`, with its class-level annotations."""

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import textwrap

import pytest

import streaming.control

FIELD_LIMIT = 15


def fields_of(cls):
    """The names of `cls`'s fields: a dataclass's fields, else every `self.<name>` its methods assign (however: a
    tuple target, an augmented or annotated assignment), with its class-level annotations."""
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    names = set(vars(cls).get("__annotations__", {}))
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls)))):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        names |= {target.attr for each in targets for target in ast.walk(each) if isinstance(target, ast.Attribute)
                  and isinstance(target.value, ast.Name) and target.value.id == "self"}
    return names


def control_classes():
    """{"module.Class": class} of every class the modules of streaming.control define."""
    found = {}
    for info in pkgutil.walk_packages(streaming.control.__path__, "streaming.control."):
        module = importlib.import_module(info.name)
        found |= {f"{info.name}.{name}": cls for name, cls in vars(module).items()
                  if inspect.isclass(cls) and cls.__module__ == info.name}
    return found


CLASSES = control_classes()


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_no_class_in_control_holds_more_than_the_limit(name):
    fields = fields_of(CLASSES[name])
    assert len(fields) <= FIELD_LIMIT, f"{name} has {len(fields)} fields: {sorted(fields)}"


def test_the_controller_and_its_duties_are_counted():
    assert {"streaming.control.controller.Controller", "streaming.control.duties.janitor.Janitor",
            "streaming.control.duties.handover.Handover"} <= set(CLASSES)
    assert len(fields_of(CLASSES["streaming.control.controller.Controller"])) >= 5


class Plain:
    def __init__(self):
        self.a, (self.b, self.c) = 1, (2, 3)
        self.d: int = 4

    def later(self):
        self.e += 1
        self.a = 0


@dataclasses.dataclass
class Data:
    a: int
    b: int = 0


@pytest.mark.parametrize("cls, fields", [(Plain, {"a", "b", "c", "d", "e"}), (Data, {"a", "b"})],
                         ids=["assigned-in-methods", "dataclass"])
def test_fields_of_counts_every_way_a_field_is_set(cls, fields):
    assert fields_of(cls) == fields

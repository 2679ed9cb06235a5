"""`reassign-monitor execute` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("execute is not implemented yet")

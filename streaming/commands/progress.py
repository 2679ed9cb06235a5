"""`reassign-monitor progress` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("progress is not implemented yet")

"""`reassign-monitor run` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("run is not implemented yet")

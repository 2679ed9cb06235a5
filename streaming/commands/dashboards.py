"""`reassign-monitor dashboards` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("dashboards is not implemented yet")

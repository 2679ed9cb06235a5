"""`reassign-monitor cancel` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("cancel is not implemented yet")

"""`reassign-monitor verify` (not built yet)."""

from streaming.errors import BadInput


def add_arguments(parser):
    pass


def run(args):
    raise BadInput("verify is not implemented yet")

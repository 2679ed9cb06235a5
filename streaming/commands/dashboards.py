"""`reassign-monitor dashboards --out DIR`: write the Grafana dashboard JSON (dashboards.build).
grafanalib loads only when the command runs."""

import json

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput


def add_arguments(parser):
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="directory for fleet.json, overview.json, brokers.json, replicas.json (created if missing)")


def run(args):
    from dashboards.build import write_all

    flag = f"--out {shown(args.out, 200)}"
    try:
        paths = write_all(args.out)
    except OSError as error:
        raise BadInput(f"{flag}: {error.strerror or error}") from error
    except ValueError as error:  # a path with a NUL byte
        raise BadInput(f"{flag}: not a usable path ({error})") from error
    if args.output == "json":
        print(json.dumps({"written": [str(path) for path in paths]}))
    else:
        for path in paths:
            print(path)
    return 0

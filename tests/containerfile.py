"""deploy/Containerfile read as data, as the builder reads it: what the image provides (its paths in ENV, its user,
port, volume and working directory), for the manifests' tests (tests/test_deploy_manifests.py) and for the test
that compares a built image with it (tests/test_image.py)."""

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


@dataclass(frozen=True)
class ImageFacts:
    base: str
    env: dict  # every ENV value, variables substituted
    user: str
    exposed: tuple  # ports, as ints
    volumes: tuple
    workdir: str
    entrypoint: tuple


def instructions(text):
    """[(KEYWORD, arguments)], continuation lines joined, comments and blank lines dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(word.upper(), rest.strip()) for word, _, rest in
            (line.strip().partition(" ") for line in joined.splitlines() if line.strip())]


def substitute(value, variables):
    return _VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), value)


def image_facts(path=CONTAINERFILE):
    variables, env = {}, {}
    base = user = workdir = ""
    exposed, volumes, entrypoint = (), (), ()
    for keyword, rest in instructions(path.read_text()):
        if keyword == "FROM":
            base = rest.split()[0]
        elif keyword == "ARG":
            name, _, default = rest.partition("=")
            variables[name] = default
        elif keyword == "ENV":  # one instruction's values see only what was set before it, as in the builder
            pairs = dict(pair.split("=", 1) for pair in shlex.split(rest))
            values = {name: substitute(value, variables) for name, value in pairs.items()}
            env.update(values)
            variables.update(values)
        elif keyword == "USER":
            user = substitute(rest, variables)
        elif keyword == "EXPOSE":
            exposed += tuple(int(substitute(port, variables).split("/")[0]) for port in rest.split())
        elif keyword == "VOLUME":
            volumes += tuple(substitute(v, variables) for v in
                             (json.loads(rest) if rest.startswith("[") else rest.split()))
        elif keyword == "WORKDIR":
            workdir = substitute(rest, variables)
        elif keyword == "ENTRYPOINT":
            entrypoint = tuple(json.loads(rest))
    return ImageFacts(base, env, user, exposed, volumes, workdir, entrypoint)


def image_name():
    """The name deploy/build.sh gives the image: the project's NAME:VERSION."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return f"{project['name']}:{project['version']}"

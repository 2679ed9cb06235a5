#!/usr/bin/env bash
# Build the installable artifacts, each only when its inputs changed (keyed on a hash of them):
#
#   deploy/build.sh wheel        dist/: the wheel and the sdist (python -m build); prints the wheel's path
#   deploy/build.sh wheelhouse   build/wheelhouse/: every dependency of the package as a wheel (pip wheel, from
#                                pip's cache where it has them); prints the directory
#   deploy/build.sh base         the image deploy/Containerfile starts FROM (debian:SUITE-slim), made from Debian's
#                                packages with mmdebstrap and imported under that name, as a site without a
#                                registry would; prints its name
#   deploy/build.sh image        all of the above, then the image (podman build); prints its name,
#                                kafka-reassign-monitor:VERSION from pyproject.toml (IMAGE names another)
#
# Keys: the wheel, on the package's files (pyproject.toml, README.md, MANIFEST.in, streaming/, sinks/,
# dashboards/), in dist/.inputs; the wheelhouse, on pyproject.toml and the interpreter's version, in
# build/wheelhouse/.inputs; the base, on its recipe; the image, on the base, the Containerfile, the entry point and
# those two keys. The base and the image carry their key as a label, so what podman holds is the record. The image's
# layers are cached by podman too: a changed package alone reinstalls only the package, not its dependencies.
#
# Environment: PYTHON (default the repository's .venv) builds the wheel; DEBIAN_MIRROR (default
# http://deb.debian.org/debian) and DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security) are
# where the base and the image's packages come from; podman runs through deploy/image/podman.sh (CONTAINERS_CONF,
# PODMAN). Needs: python's `build` (the .venv has it), and for the image mmdebstrap and podman (`make podman`).
# Progress goes to stderr; the last line on stdout is what was asked for.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
podman=$root/deploy/image/podman.sh
containerfile=$root/deploy/Containerfile
entrypoint=$root/deploy/image/entrypoint.sh
dist=$root/dist
wheelhouse=$root/build/wheelhouse
context=$root/build/image-context
debian_mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
key_label=kafka-reassign-monitor.inputs

say() { echo "build.sh: $*" >&2; }
die() { say "error: $*"; exit 2; }
# A short hash of stdin.
digest() { sha256sum | cut -c1-16; }
# A hash of the named files and of every file under the named directories (bytecode aside), by path and content.
files_key() {
  (cd "$root" && find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z \
    | xargs -0 sha256sum) | digest
}
image_label() { "$podman" image inspect --format "{{index .Labels \"$key_label\"}}" "$1" 2>/dev/null || true; }

# NAME:VERSION of pyproject.toml, the name deploy/k8s/ runs; IMAGE names another (the tests build their own).
image_name() {
  [[ -n ${IMAGE:-} ]] && { echo "$IMAGE"; return; }
  "$python" -c 'import sys, tomllib; p = tomllib.load(open(sys.argv[1], "rb"))["project"]
print(p["name"] + ":" + p["version"])' "$root/pyproject.toml"
}

build_wheel() {
  local key wheel
  key=$(files_key pyproject.toml README.md MANIFEST.in streaming sinks dashboards)
  wheel=$(ls "$dist"/kafka_reassign_monitor-*.whl 2>/dev/null || true)
  if [[ -n $wheel && -f $dist/.inputs && $(cat "$dist/.inputs") == "$key" ]]; then
    say "wheel: unchanged ($key)"
  else
    say "wheel: building ($key)"
    rm -rf "$dist"
    mkdir -p "$root/build"
    # The sdist, then the wheel from the sdist: a file the sdist lacks is missing from the wheel too.
    "$python" -m build -q --outdir "$dist" "$root" > "$root/build/wheel.log" 2>&1 \
      || { tail -n 30 "$root/build/wheel.log" >&2; die "python -m build failed (build/wheel.log)"; }
    echo "$key" > "$dist/.inputs"
    wheel=$(ls "$dist"/kafka_reassign_monitor-*.whl)
  fi
  echo "$wheel"
}

build_wheelhouse() {
  local wheel=$1 key
  key=$( { cat "$root/pyproject.toml"; "$python" -V; } | digest)
  if [[ -f $wheelhouse/.inputs && $(cat "$wheelhouse/.inputs") == "$key" ]]; then
    say "wheelhouse: unchanged ($key)"
  else
    say "wheelhouse: resolving ($key)"
    rm -rf "$wheelhouse"
    "$python" -m pip wheel -q --wheel-dir "$wheelhouse" "$wheel" >&2
    rm -f "$wheelhouse"/kafka_reassign_monitor-*.whl
    echo "$key" > "$wheelhouse/.inputs"
  fi
  echo "$wheelhouse"
}

# The FROM of the Containerfile, e.g. docker.io/library/debian:bookworm-slim; its tag names the Debian suite.
base_name() { sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$containerfile" | head -n 1; }

build_base() {
  local name suite key recipe
  name=$(base_name)
  [[ $name == */debian:*-slim ]] || die "$containerfile: FROM $name is not a debian:SUITE-slim this script can make"
  suite=${name##*:}; suite=${suite%-slim}
  # As Debian's slim images: the minimal variant, without documentation, manual pages or translations.
  recipe=(--variant=minbase --format=tar
          --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
          --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
          "$suite" -
          "deb $debian_mirror $suite main" "deb $debian_mirror $suite-updates main"
          "deb $security_mirror $suite-security main")
  key=$(printf '%s\n' "${recipe[@]}" | digest)
  if [[ $(image_label "$name") == "$key" ]]; then
    say "base $name: unchanged ($key)"
  else
    command -v mmdebstrap >/dev/null || die "mmdebstrap is needed to make the base image (make podman)"
    say "base $name: mmdebstrap $suite from $debian_mirror ($key)"
    mmdebstrap -q "${recipe[@]}" | "$podman" import -q --change "LABEL $key_label=$key" --change 'CMD ["bash"]' \
      - "$name" >&2
  fi
  echo "$name"
}

build_image() {
  local wheel wheels name base_id dependencies_key package_key key previous
  wheel=$(build_wheel)
  wheels=$(build_wheelhouse "$wheel")
  build_base >/dev/null
  name=$(image_name)
  base_id=$("$podman" image inspect --format '{{.Id}}' "$(base_name)")
  # The wheelhouse's own key and its wheels' names (name and version): reading half a gigabyte would cost seconds.
  dependencies_key=$( { cat "$wheels/.inputs"; ls "$wheels"; } | digest)
  # The package's own key (its files' hash), not the wheel's bytes, which carry the files' times: a fresh clone of
  # the same commit builds the same image.
  package_key=$(cat "$dist/.inputs")
  key=$( { echo "$base_id $dependencies_key $package_key"; cat "$containerfile" "$entrypoint"; } | digest)
  if [[ $(image_label "$name") == "$key" ]]; then
    say "image $name: unchanged ($key)"
  else
    say "image $name: podman build ($key)"
    rm -rf "$context"
    mkdir -p "$context/wheels/deps"
    # Hard links: the dependencies are half a gigabyte.
    cp -l "$wheels"/*.whl "$context/wheels/deps/" 2>/dev/null || cp "$wheels"/*.whl "$context/wheels/deps/"
    cp "$wheel" "$context/wheels/"
    cp "$entrypoint" "$context/entrypoint.sh"
    previous=$("$podman" image inspect --format '{{.Id}}' "$name" 2>/dev/null || true)
    # --network host: the Debian mirror is reached as the host reaches it; --pull=never: FROM is the local base.
    "$podman" build --pull=never --network host --layers -f "$containerfile" \
      --build-arg "DEPENDENCIES_KEY=$dependencies_key" --build-arg "PACKAGE_KEY=$package_key" \
      --label "$key_label=$key" -t "$name" "$context" >&2
    # The image this one replaced, now untagged: ours to remove (it fails harmlessly while a container uses it).
    if [[ -n $previous && $previous != $("$podman" image inspect --format '{{.Id}}' "$name") ]]; then
      "$podman" image rm "$previous" >/dev/null 2>&1 || true
    fi
  fi
  echo "$name"
}

case "${1:-}" in
  wheel) build_wheel ;;
  wheelhouse) build_wheelhouse "$(build_wheel)" ;;
  base) build_base ;;
  image) build_image ;;
  *) die "usage: deploy/build.sh wheel|wheelhouse|base|image" ;;
esac

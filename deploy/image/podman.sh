#!/usr/bin/env bash
# podman with containers.conf beside this script (CONTAINERS_CONF in the environment wins): what deploy/build.sh
# and the image's tests run containers with. PODMAN names another podman binary.
set -euo pipefail
export CONTAINERS_CONF=${CONTAINERS_CONF:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/containers.conf}
exec "${PODMAN:-podman}" "$@"

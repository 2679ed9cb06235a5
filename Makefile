# `make demo` and `make test` each install what they need, idempotently: the .venv, the Kafka jars
# (from Maven Central), Debian's prometheus package (promtool and a real Prometheus for tests), Debian's
# podman, runc and mmdebstrap (the container image and its tests) and Debian's MIT Kerberos (the secured test
# cluster's KDC, and the headers the `gssapi` package builds against).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
JARS := deploy/kafka/lib/.resolved
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test docs venv jars prometheus podman netns kerberos wheel image cluster-up cluster-down bench clean

# The `kerberos` extra (GSSAPI through kafka-python: the `gssapi` package, built from source against libkrb5-dev).
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml | kerberos
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,kerberos]'
	touch $@

jars: $(JARS)
# And Kafka's LocalTieredStorage (the kafka-storage test jar) for TIERED_STORAGE=1 deploy/local-cluster.sh.
$(JARS): deploy/kafka/pom.xml deploy/kafka/tiered-storage-pom.xml
	mvn -q -B -f deploy/kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/deploy/kafka/lib -DincludeScope=runtime
	mvn -q -B -f deploy/kafka/tiered-storage-pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/deploy/kafka/lib/tiered-storage -DincludeScope=runtime
	touch $@

prometheus:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq prometheus >/dev/null; }

# MIT Kerberos: krb5-kdc and krb5-admin-server (krb5kdc, kdb5_util; kadmin.local: the test KDC, tests/kdc.py), krb5-user (kinit, klist: the
# ticket-cache form of a GSSAPI client), libkrb5-dev (krb5-config and the headers `gssapi` builds against).
kerberos:
	@command -v krb5kdc >/dev/null && command -v kadmin.local >/dev/null && command -v kinit >/dev/null && command -v krb5-config >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq krb5-kdc krb5-admin-server krb5-user libkrb5-dev >/dev/null; }

# runc: Debian's podman prefers crun, which cannot run containers on cgroups in hybrid mode (deploy/image/containers.conf).
podman:
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v mmdebstrap >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq podman runc mmdebstrap >/dev/null; }

# nftables and iproute2: the fault test that cuts a broker's client port off inside a network namespace of its own
# (tests/netns.py).
netns:
	@command -v nft >/dev/null && command -v ip >/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nftables iproute2 >/dev/null; }

# dist/: the wheel and the sdist, rebuilt when the package's files changed (deploy/build.sh).
wheel: venv
	deploy/build.sh wheel

# The image deploy/k8s/ runs, kafka-reassign-monitor:VERSION, rebuilt when its inputs changed (deploy/build.sh).
image: venv podman
	deploy/build.sh image

test: venv jars prometheus podman netns
	$(PY) -m tests.run_suite

demo: venv jars prometheus
	$(PY) deploy/demo.py

# The generated parts of docs/ (CLI, metrics, record fields, alerts, ACLs, layers), rendered from their one definition.
docs: venv
	$(PY) docs/reference.py

cluster-up: venv jars
	deploy/local-cluster.sh up

cluster-down:
	deploy/local-cluster.sh down

bench: venv jars
	$(PY) bench/poll.py

# vbench — the only set-up there is: `make demo` and `make test` (both idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .make
# Debian packages the local lab and the test suite use (real peers, not mocks).
DEB_PACKAGES := fio openssh-server openssh-client sysstat postgresql procps iproute2 chromium redis-server redis-tools nutcracker haproxy \
  nginx php8.2-fpm php8.2-mysql mariadb-server iperf3 wrk stress-ng pssh curl python3-venv \
  prometheus prometheus-pushgateway

LOCAL_LAB := examples/labs/local.yaml
# The demo's lab: the local lab plus a vCenter simulator the quick start provisions in.
DEMO_LAB := examples/labs/sim.yaml

# vcsim (the vCenter simulator) and govc, pinned, built from the Go module proxy into .tools/.
GOVMOMI_VERSION := v0.46.0
TOOLS_BIN := $(CURDIR)/.tools/bin
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)

.PHONY: demo test test-unit test-integration test-e2e lint docs system venv tools wheelhouse \
  lab-up lab-down clean

demo: venv system tools
	$(BIN)/vbench lab up $(DEMO_LAB)
	$(BIN)/vbench run examples/quickstart.yaml --lab $(DEMO_LAB) --tag demo

# The suite's tiers are its folders; each runs alone too (test-unit needs no peer). On the
# workers the e2e and integration files are handed out first (tests/conftest.py). `make test` also prints the 25 slowest tests, so growth is seen before it hurts.
TIERS := tests/unit tests/integration tests/e2e
# Tests run on pytest-xdist workers, a test file per worker at a time (its module fixtures
# stay shared). Most of a peer test's time is waiting — trial phases, vcsim's task delays —
# not CPU, so more workers than cores pay: 4 on CI's 2 cores. TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= 4
PYTEST := VBENCH_REQUIRE_PEERS=1 $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

test: venv system tools wheelhouse
	$(BIN)/ruff check .
	$(PYTEST) --durations=25 $(TIERS)

test-unit: venv
	$(PYTEST) --durations=10 tests/unit

test-integration: venv system tools wheelhouse
	$(PYTEST) --durations=10 tests/integration

test-e2e: venv system tools wheelhouse
	$(PYTEST) --durations=10 tests/e2e

lint: venv
	$(BIN)/ruff check .

# Regenerate the generated reference (a test fails when it is stale).
docs: venv
	$(BIN)/python -m vbench.engine.reference > docs/scenario-reference.md

venv: $(STAMPS)/venv

$(STAMPS)/venv: pyproject.toml
	@mkdir -p $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

# Installs only what is missing; `apt-get update` runs once, before the install.
system:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "installing Debian packages:$$missing"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Idempotent: a binary already built from $(GOVMOMI_VERSION) is kept.
tools:
	@for t in vcsim govc; do \
	  if $(GO) version -m $(TOOLS_BIN)/$$t 2>/dev/null | \
	    grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/vmware/govmomi[[:space:]]+$(GOVMOMI_VERSION)[[:space:]]"; \
	  then continue; fi; \
	  test -x "$(GO)" || command -v "$(GO)" >/dev/null || \
	    { echo "Go (1.22 or later) is needed to build $$t: https://go.dev/dl"; exit 1; }; \
	  echo "building $$t $(GOVMOMI_VERSION) into $(TOOLS_BIN)"; \
	  GOBIN=$(TOOLS_BIN) $(GO) install github.com/vmware/govmomi/$$t@$(GOVMOMI_VERSION) || exit 1; \
	done

# Locust and its dependencies as wheels from PyPI, for the cloudstone driver's client
# guests (which need no internet: vbench pushes these and installs them in a venv).
wheelhouse: venv
	$(BIN)/python -m vbench.workloads.cloudstone.loadgen .tools/wheelhouse

lab-up: venv system tools
	$(BIN)/vbench lab up $(LOCAL_LAB)

lab-down: venv
	$(BIN)/vbench lab down

clean:
	rm -rf $(STAMPS) .pytest_cache .ruff_cache

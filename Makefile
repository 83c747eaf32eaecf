# vbench — the only set-up there is: `make demo` and `make test` (both idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .make
# Debian packages the local lab and the test suite use (real peers, not mocks).
DEB_PACKAGES := fio openssh-server openssh-client sysstat postgresql procps iproute2

LOCAL_LAB := examples/labs/local.yaml

.PHONY: demo test lint docs system venv lab-up lab-down clean

demo: venv system
	$(BIN)/vbench lab up $(LOCAL_LAB)
	$(BIN)/vbench run examples/quickstart.yaml --lab $(LOCAL_LAB) --tag demo

test: venv system
	$(BIN)/ruff check .
	$(BIN)/pytest -q

lint: venv
	$(BIN)/ruff check .

# Regenerate the generated reference (a test fails when it is stale).
docs: venv
	$(BIN)/python -m vbench.config.schema > docs/scenario-reference.md

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

lab-up: venv system
	$(BIN)/vbench lab up $(LOCAL_LAB)

lab-down: venv
	$(BIN)/vbench lab down

clean:
	rm -rf $(STAMPS) .pytest_cache .ruff_cache

# tpuport: every target installs what it needs, idempotently.
#   make demo   run tpuport on a bundled example with the CPU PJRT plugin
#   make test   the whole test suite (Rust + generated fixtures)
#   make bench  benchmarks against Python baselines, printed as ratios
#   make fuzz   bounded cargo-fuzz runs, one per importer

SHELL := /bin/bash
.DEFAULT_GOAL := test

PY        ?= python3
VENV      := .venv
VPY       := $(VENV)/bin/python
REQS      := scripts/requirements.txt
# Fixtures live outside the clone, keyed by the hash of everything that shapes them, so a CI run
# on the same machine reuses them. `.cache/fixtures` is a git-ignored link to the current set.
CACHE_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tpuport
FIX_HASH   := $(shell cat $(REQS) scripts/fixtures/*.py 2>/dev/null | sha256sum | cut -c1-16)
FIX_DIR    := $(CACHE_ROOT)/fixtures-$(FIX_HASH)
FIX_LINK   := .cache/fixtures
CARGO      ?= cargo
export TPUPORT_FIXTURES := $(abspath $(FIX_LINK))

.PHONY: demo test test-rust fixtures venv bench fuzz clean-fixtures build

$(VENV)/.stamp: $(REQS)
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r $(REQS)
	@touch $@

venv: $(VENV)/.stamp

$(FIX_DIR)/.done: $(VENV)/.stamp
	@mkdir -p $(FIX_DIR)
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/fixtures/generate.py) --out $(FIX_DIR)
	@touch $@

fixtures: $(FIX_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(FIX_DIR) $(FIX_LINK)
	@# fixture sets from older generator versions are several GB each: keep only the current one
	@find $(CACHE_ROOT) -maxdepth 1 -name 'fixtures-*' ! -name 'fixtures-$(FIX_HASH)' -exec rm -rf {} + 2>/dev/null || true

build:
	$(CARGO) build --release --locked -p tpuport

test: fixtures
	$(CARGO) test --workspace --locked

demo: fixtures build
	./target/release/tpuport inspect $(FIX_LINK)/jax/mlp_b1/jit.mlir

bench: fixtures build
	$(VPY) scripts/bench_inspect.py --tpuport ./target/release/tpuport --fixtures $(FIX_LINK)

fuzz:
	@$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	bash scripts/fuzz.sh

clean-fixtures:
	rm -rf $(FIX_LINK) $(FIX_DIR)

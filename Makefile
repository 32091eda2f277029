# tpuport's harness. Every target installs what it needs, idempotently: `make help` lists them,
# scripts/README.md says where the scripts they run live.
#
# Sections: settings · start here (help, demo, test) · Python environments · the binary ·
# generated test inputs · how make test runs · how make demo gets its inputs · benchmarks · proofs ·
# the wheel · other. A public target's `## ` comment is its line in `make help`; a `### ` line
# starts a group there.

SHELL := /bin/bash
.DEFAULT_GOAL := test

# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------

PY       ?= python3
NICE     ?=
CARGO    ?= cargo
VENV     := .venv
VPY      := $(VENV)/bin/python
REQS     := scripts/requirements/base.txt
TESTDATA := scripts/testdata
# Generated inputs live outside the clone, keyed by the hash of everything that shapes them, so a
# CI run on the same machine reuses them; `.cache/<name>` is a git-ignored link to the current set.
CACHE_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tpuport
# Only the packages that shape the fixtures enter the keys (adding a lint tool must not
# regenerate GBs of exported models).
FIX_PKGS := numpy|ml_dtypes|jax|jaxlib|onnx|onnxruntime|onnxscript|torch|torchvision|transformers|safetensors
RELEASE_DIR := $(or $(CARGO_TARGET_DIR),target)/release
# `make test TPUPORT_BIN=/abs/path/tpuport` runs every step and every CLI test with that binary
# and builds no release binary (CI passes the one the pip wheel installed: .ci/run).
TPUPORT  := $(or $(TPUPORT_BIN),$(RELEASE_DIR)/tpuport)
LIBTPU_SO = $$(ls .cache/libtpu/*/libtpu/libtpu.so 2>/dev/null | head -n1)
# Every `pip install` into .venv holds this lock: under `make -j` two stamps may want it at once.
PIP_LOCK := flock $(VENV)/.pip.lock
# pip writes console scripts (auditwheel, pyflakes, torchrun) with the interpreter it was run by as
# their `#!` line: run through the link, that names this clone's path, which is gone once the
# clone is (the environment is shared by every clone on the machine). So pip runs by the real path.
VPIP     := $(PIP_LOCK) "$$(cd $(VENV) && pwd -P)/bin/python" -m pip

# Removes the cache sets of NAME other than the current one (`$(call prune,NAME,HASH)`): old
# sets are GBs each.
prune = find $(CACHE_ROOT) -maxdepth 1 -name '$(1)-*' ! -name '$(1)-$(2)' -exec rm -rf {} + 2>/dev/null || true

# ---------------------------------------------------------------------------------------------
# Start here
# ---------------------------------------------------------------------------------------------
### Start here

.PHONY: help demo test check
help: ## this list
	@awk 'BEGIN {FS = ":.*## "} /^### / {printf "\n%s\n", substr($$0, 5)} \
	  /^[a-zA-Z0-9_-]+:.*## / {printf "  make %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The bundled example only (see "How make demo gets its inputs" below): the binary is built while
# .venv gets what the demo needs and its inputs are fetched, then each step says what it shows.
demo: ## tpuport on a bundled example with the CPU PJRT plugin and onnxruntime as reference
	@$(MAKE) --no-print-directory -j3 demo-build demo-inputs
	@echo "== 1. doctor: which PJRT plugins and Python frameworks are here"
	$(DEMO_BIN) doctor
	@echo "== 2. inspect: a trained ONNX model from a PyPI wheel (PP-OCRv4 text recognizer), shapes bound for batch 8"
	$(DEMO_BIN) inspect $(DEMO_OCR) --input-shape x=8x3x48x320 --top 5
	@echo "== 3. inspect: a torch.save checkpoint (MTCNN's output network), read without executing the pickle"
	$(DEMO_BIN) inspect $(DEMO_IN)/mtcnn_onet.pt --top 3
	@echo "== 4. check: TPU-hostile patterns in a PyTorch training script (exit 1 = findings)"
	$(DEMO_BIN) check examples/scripts/pytorch_resnet_ddp.py --statistics; test $$? -le 1
	@echo "== 5. audit: FLOPs, padding, memory, fit and step time per TPU generation (exit 1 = findings)"
	$(DEMO_BIN) audit $(DEMO_OCR) --input-shape x=8x3x48x320 --slice v5e-8; test $$? -le 1
	@echo "== 6. lower: the ONNX model to StableHLO, one static module per batch bucket"
	@rm -rf $(DEMO_OUT)
	$(DEMO_BIN) lower $(DEMO_OCR) --input-shape x=Bx3x48x320 --batch 1,8 -o $(DEMO_OUT)/ocr_rec
	@echo "== 7. run: the lowered model on XLA:CPU through PJRT (the batch-8 bucket fits the input)"
	$(DEMO_BIN) run $(DEMO_OUT)/ocr_rec --input $(DEMO_IN)/x.npy --out $(DEMO_OUT)/run
	@echo "== 8. bench: latency percentiles and achieved FLOP/s of the batch-1 module"
	$(DEMO_BIN) bench $(DEMO_OUT)/ocr_rec/model_b1.mlir --iters 20
	@echo "== 9. validate: XLA:CPU vs onnxruntime's outputs, with TPU default matmul precision emulated"
	$(DEMO_BIN) validate $(DEMO_OCR) --inputs $(DEMO_IN)/inputs.npz \
	  --reference $(DEMO_IN)/outputs_onnxruntime.npz --emulate tpu-default

# Every step below in one make (see "How make test runs"), then `cargo test --workspace` over
# everything they made, then the libtpu line again when there was none.
test: ## the whole suite: every generated input, end-to-end run and cargo test
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) -O IN_MAKE_TEST=1 test-steps
	$(CARGO) test --workspace --locked
	@lib=$${TPUPORT_LIBTPU:-$(LIBTPU_SO)}; test -n "$$lib" || echo "$(LIBTPU_NONE)"

# The contributors' inner loop: fmt, clippy and every test that needs no generated input, under
# cargo-nextest's `check` profile (.config/nextest.toml lists the test binaries it leaves to
# `make test`). Every generated-input variable points at a path that does not exist, so a test
# that starts needing one fails here instead of passing on a warm cache. .venv gets only the
# packages those tests import (CHECK_PKGS, at base.txt's pins).
CHECK_PKGS := numpy|ml_dtypes|onnx|onnxruntime|xla-cpu-pjrt
CHECK_NONE := $(CURDIR)/.cache/check-has-no-generated-inputs
CHECK_ENV  := $(foreach v,FIXTURES RECURRENT STABLEHLO_EXPORTS WHEEL_MODELS VALIDATE_REFS \
                PROFILE_FIXTURES LOWER_REFS HOST_BOUND_TRACES AUDIT_REFS CONFORMANCE_DIR,TPUPORT_$(v)=$(CHECK_NONE))
check: $(VENV)/.check-stamp lint ## fmt, clippy, every test needing no generated input (the inner loop)
	env $(CHECK_ENV) $(CARGO) nextest run --workspace --locked --profile check

$(VENV)/.check-stamp: | $(VPY)
	$(VPIP) install -q $$(grep -E '^($(CHECK_PKGS))==' $(REQS))
	@touch $@

# ---------------------------------------------------------------------------------------------
# Python environments. .venv: fixture generators and baselines (never a runtime dependency of
# tpuport); .venv-xla: torch_xla; .venv-serve: serve's clients; .venv-peers: Triton, MLServer.
#
# .venv and .venv-xla (about 8 and 7 GB: torch's CUDA wheels) live under $(CACHE_ROOT), keyed by
# the hash of every pin installed into them, and the clone holds a link: a second clone on the
# machine (CI's) links the same environment instead of installing GBs again, and a pin change
# gets a new one (the old is pruned). Every stamp lives inside its environment, so it holds for
# exactly that set of pins. A .venv that is a real folder (made before this) is left as it is.
# ---------------------------------------------------------------------------------------------
### Python environments

# The exporters of stablehlo_exports.py, on top of base.txt (none moves the jax pin). keras-hub
# --no-deps: its declared tensorflow-text pulls the full tensorflow next to tensorflow-cpu.
EXP_REQS    := scripts/requirements/exports.txt
KERAS_HUB   := keras-hub==0.32.0
DEPLOY_REQS := scripts/requirements/deploy.txt
WHEEL_REQS  := scripts/requirements/wheel.txt
XLA_PINS    := torch==2.9.0 torch_xla==2.9.0
XLA_TV_PIN  := torchvision==0.24.0

# Links $(1) to $(2), first creating $(2) as a venv with a current pip when it is missing or was
# left half-made ($(2)/.made), then prunes the other $(3)-* environments ($(4): this one's hash).
define venv_link
	@mkdir -p $(CACHE_ROOT)
	@test -f $(2)/.made || { rm -rf $(2) && $(PY) -m venv $(2) \
	  && $(2)/bin/python -m pip install -q --upgrade pip && touch $(2)/.made; }
	@if [ -e $(1) ] && [ ! -L $(1) ]; then echo "$(1) is a folder, not a link: using it as it is"; \
	  else ln -sfn $(2) $(1); fi
	@$(call prune,$(3),$(4))
endef

VENV_HASH := $(shell { cat $(REQS) $(EXP_REQS) $(DEPLOY_REQS) $(WHEEL_REQS); echo $(KERAS_HUB); $(PY) -V; } 2>/dev/null | sha256sum | cut -c1-16)
VENV_DIR  := $(CACHE_ROOT)/venv-base-$(VENV_HASH)
XLA_HASH  := $(shell { echo $(XLA_PINS) $(XLA_TV_PIN); $(PY) -V; } 2>/dev/null | sha256sum | cut -c1-16)
XLA_DIR   := $(CACHE_ROOT)/venv-xla-$(XLA_HASH)
# Before any rule reads through a link: one to another pin set is re-pointed, and a missing one
# is made when its environment is already complete (so make sees the stamps inside it).
_ := $(shell for p in "$(VENV):$(VENV_DIR)" ".venv-xla:$(XLA_DIR)"; do l=$${p%%:*}; d=$${p#*:}; \
       if [ -L $$l ]; then test "$$(readlink $$l)" = "$$d" || ln -sfn $$d $$l; \
       elif [ ! -e $$l ] && [ -f $$d/.made ]; then ln -s $$d $$l; fi; done; true)
# Environments made before pip ran by the real path may hold console scripts whose `#!` names a
# clone that is gone: they are pointed at the environment's own interpreter.
_ := $(shell for d in $(VENV_DIR) $(XLA_DIR); do [ -f $$d/.made ] || continue; \
       for f in $$(grep -l '^\#!/.*/bin/python' $$d/bin/* 2>/dev/null); do \
         i=$$(head -1 $$f | cut -c3-); [ -x "$$i" ] || sed -i "1s|.*|#!$$d/bin/python|" $$f; done; done; true)

$(VPY):
	$(call venv_link,$(VENV),$(VENV_DIR),venv-base,$(VENV_HASH))

$(VENV)/.stamp: | $(VPY)
	$(VPIP) install -q -r $(REQS)
	@touch $@

$(VENV)/.exports-stamp: $(VENV)/.stamp
	$(VPIP) install -q -r $(EXP_REQS)
	$(VPIP) install -q --no-deps $(KERAS_HUB)
	@touch $@

# `tpuport deploy`'s offline manifest validation (scripts/tools/validate_manifests.py):
# kubernetes-validate and jsonschema.
$(VENV)/.deploy-stamp: $(VENV)/.stamp
	$(VPIP) install -q -r $(DEPLOY_REQS)
	@touch $@

# torch_xla 2.9.0 needs torch 2.9.0, the project venv has a newer torch: a second venv (multi-GB),
# with the torchvision that pairs with it for the corpus scripts e2e-port runs.
VENV_XLA := .venv-xla
$(VENV_XLA)/bin/python:
	$(call venv_link,$(VENV_XLA),$(XLA_DIR),venv-xla,$(XLA_HASH))

$(VENV_XLA)/.stamp: | $(VENV_XLA)/bin/python
	"$$(cd $(VENV_XLA) && pwd -P)/bin/python" -m pip install -q $(XLA_PINS) numpy \
	  || { echo "error: could not install $(XLA_PINS) into $(VENV_XLA): the torch_xla e2e part cannot run"; exit 2; }
	@touch $@

$(VENV_XLA)/.stamp-torchvision: $(VENV_XLA)/.stamp
	"$$(cd $(VENV_XLA) && pwd -P)/bin/python" -m pip install -q $(XLA_TV_PIN) \
	  || { echo "error: could not install $(XLA_TV_PIN) into $(VENV_XLA)"; exit 2; }
	@touch $@

# `tpuport serve`'s clients (tritonclient, schemathesis): their pins may clash with jax/torch.
VENV_SERVE := .venv-serve
REQS_SERVE := scripts/requirements/serve.txt
$(VENV_SERVE)/.stamp: $(REQS_SERVE)
	@test -x $(VENV_SERVE)/bin/python || $(PY) -m venv $(VENV_SERVE)
	$(VENV_SERVE)/bin/pip install -q -r $(REQS_SERVE)
	@touch $@

# Triton (nvidia-pytriton) and MLServer for bench-serve, every package pinned and installed
# --no-deps (pytriton declares numpy<2, jax needs numpy 2); Triton's backend stub gets its own
# venv with numpy 1.26 (.venv-peers/stub).
VENV_PEERS      := .venv-peers
REQS_PEERS      := scripts/requirements/peers.txt
REQS_PEERS_STUB := scripts/requirements/peers-stub.txt
$(VENV_PEERS)/.stamp: $(REQS_PEERS) $(REQS_PEERS_STUB)
	@test -x $(VENV_PEERS)/bin/python || $(PY) -m venv $(VENV_PEERS)
	$(VENV_PEERS)/bin/pip install -q --no-deps -r $(REQS_PEERS)
	@test -x $(VENV_PEERS)/stub/bin/python || $(PY) -m venv $(VENV_PEERS)/stub
	$(VENV_PEERS)/stub/bin/pip install -q --no-deps -r $(REQS_PEERS_STUB)
	@touch $@

.PHONY: venv venv-xla venv-serve venv-peers deploy-venv deploy-tools wrk-tool
venv: $(VENV)/.stamp ## .venv with scripts/requirements/base.txt
venv-xla: $(VENV_XLA)/.stamp $(VENV_XLA)/.stamp-torchvision ## .venv-xla (torch 2.9 + torch_xla)
venv-serve: $(VENV_SERVE)/.stamp ## .venv-serve (tritonclient, schemathesis)
venv-peers: $(VENV_PEERS)/.stamp ## .venv-peers (Triton, MLServer) for bench-serve
deploy-venv: $(VENV)/.deploy-stamp ## kubernetes-validate + jsonschema in .venv

# promtool (Debian `prometheus`) for the alert rules and tmux for `top`'s screen test, installed
# when apt can; the tests say so in one line and fall back (rules: a parser test) without them.
deploy-tools: ## promtool and tmux from apt, when apt can
	@command -v promtool >/dev/null && command -v tmux >/dev/null \
	  || { apt-get install -y -q --no-install-recommends prometheus tmux >/dev/null 2>&1 \
	       || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends prometheus tmux >/dev/null 2>&1; } \
	       || echo "deploy-tools: promtool/tmux could not be installed; their checks will say so"; }

wrk-tool:
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }

# ---------------------------------------------------------------------------------------------
# The binary
# ---------------------------------------------------------------------------------------------
### The binary

.PHONY: build lint man
ifdef TPUPORT_BIN
export TPUPORT_BIN
build:
	@test -x "$(TPUPORT_BIN)" || { echo "error: TPUPORT_BIN=$(TPUPORT_BIN) is not an executable file"; exit 2; }
else
build: ## the release binary (nothing with TPUPORT_BIN=...)
	$(CARGO) build --release --locked -p tpuport
endif

lint: ## cargo fmt --check and clippy -D warnings (part of make test)
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

man: build ## man pages from the clap definitions into target/man/
	$(TPUPORT) man --out target/man

# ---------------------------------------------------------------------------------------------
# Generated test inputs (each cached under $(CACHE_ROOT) and keyed by what shapes it; a rerun is
# a no-op). The tests read them through the exported TPUPORT_* variables.
# ---------------------------------------------------------------------------------------------
### Generated test inputs (make test makes all but findings-fixtures and shape-rule-fixtures)

.PHONY: fixtures clean-fixtures stablehlo-exports validate-refs lower-refs audit-refs recurrent-models conformance-cases profile-fixtures host-bound-traces wheel-models serve-fixtures libtpu findings-fixtures shape-rule-fixtures

# The exported models (torch, JAX, small ONNX) with their frameworks' own numbers.
FIX_HASH := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat $(TESTDATA)/fixtures/*.py; } 2>/dev/null | sha256sum | cut -c1-16)
FIX_DIR  := $(CACHE_ROOT)/fixtures-$(FIX_HASH)
FIX_LINK := .cache/fixtures
export TPUPORT_FIXTURES := $(abspath $(FIX_LINK))

$(FIX_DIR)/.done: $(VENV)/.stamp
	@mkdir -p $(FIX_DIR)
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/fixtures/generate.py) --out $(FIX_DIR)
	@touch $@

fixtures: $(FIX_DIR)/.done ## exported torch / JAX / ONNX models with their frameworks' numbers
	@mkdir -p .cache
	@ln -sfn $(FIX_DIR) $(FIX_LINK)
	@$(call prune,fixtures,$(FIX_HASH))

clean-fixtures: ## remove the current fixture set
	rm -rf $(FIX_LINK) $(FIX_DIR)

# StableHLO exported by Keras 3 applications, keras-hub causal LMs, Flax linen and NNX and the
# Flax Gemma example's training step, weights as leading arguments, for the argument-roles tests
# (crates/tpuport-analysis/tests/roles_exports.rs). About two minutes of CPU.
EXP_HASH := $(shell { grep -E '^(numpy|jax|jaxlib)==' $(REQS); cat $(EXP_REQS) $(TESTDATA)/stablehlo_exports.py $(TESTDATA)/flax_gemma_step.py $(TESTDATA)/corpus/flax_gemma/*.py; echo $(KERAS_HUB); } 2>/dev/null | sha256sum | cut -c1-16)
EXP_DIR  := $(CACHE_ROOT)/stablehlo-exports-$(EXP_HASH)
export TPUPORT_STABLEHLO_EXPORTS := $(EXP_DIR)

$(EXP_DIR)/.done: $(VENV)/.exports-stamp
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/stablehlo_exports.py) --out $(EXP_DIR)

stablehlo-exports: $(EXP_DIR)/.done ## StableHLO from Keras, keras-hub, Flax (weights as arguments)
	@$(call prune,stablehlo-exports,$(EXP_HASH))

# JAX's own bf16-operand runs of the JAX fixtures and planted-divergence models, for
# `tpuport validate`'s tests.
VREF_HASH := $(shell { echo $(FIX_HASH); cat $(TESTDATA)/validate_refs.py $(TESTDATA)/fixtures/jax_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
VREF_DIR  := $(CACHE_ROOT)/validate-refs-$(VREF_HASH)
VREF_LINK := .cache/validate-refs
export TPUPORT_VALIDATE_REFS := $(abspath $(VREF_LINK))

validate-refs: fixtures ## JAX reference runs for validate's tests
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/validate_refs.py) --fixtures $(abspath $(FIX_LINK)) --out $(VREF_DIR)
	@mkdir -p .cache
	@ln -sfn $(VREF_DIR) $(VREF_LINK)
	@$(call prune,validate-refs,$(VREF_HASH))

# Batch-8 inputs + onnxruntime outputs for crates/tpuport/tests/lower_models.rs (the test finds
# them via TPUPORT_LOWER_REFS or the newest ~/.cache/tpuport/lower-refs-*).
lower-refs: fixtures ## onnxruntime outputs of the torch exports for lower's tests
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/lower_refs.py) --fixtures $(abspath $(FIX_LINK))

# FlopCounterMode reference counts for crates/tpuport-analysis/tests/audit_torch.rs.
AUDIT_REFS_HASH := $(shell sha256sum $(TESTDATA)/audit_refs.py 2>/dev/null | cut -c1-16)
export TPUPORT_AUDIT_REFS := $(CACHE_ROOT)/audit-refs-$(AUDIT_REFS_HASH)
audit-refs: venv ## FlopCounterMode counts for audit's tests
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/audit_refs.py)

# Recurrent and control-flow models with onnxruntime outputs for crates/tpuport-lower/tests/
# onnx_recurrent.rs: single LSTM/GRU/RNN nodes, PyTorch exports from both exporters, Keras
# through tf2onnx, the VAD models of the silero-vad and faster-whisper wheels.
RNN_PKGS := numpy|onnx|onnxruntime|onnxscript|torch|tensorflow-cpu|tf2onnx
RNN_HASH := $(shell { grep -E '^($(RNN_PKGS))==' $(REQS); cat $(TESTDATA)/recurrent_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
export TPUPORT_RECURRENT := $(CACHE_ROOT)/recurrent-$(RNN_HASH)
recurrent-models: venv ## LSTM/GRU/RNN/If/Loop models for the lowering tests
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/recurrent_models.py) --out $(TPUPORT_RECURRENT) >/dev/null
	@$(call prune,recurrent,$(RNN_HASH))

# The ONNX backend test cases (built in memory by the onnx package), written to a cache dir keyed
# by the onnx version and the script; `cargo test` runs them through tests/conformance_cli.rs.
conformance-cases: venv ## the ONNX backend test cases, written for cargo test
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/onnx_conformance.py) >/dev/null

# Real profiler outputs for `tpuport profile`'s tests: profile_fixtures.py runs the loops under
# $(TESTDATA)/profile/ with torch.profiler, jax.profiler, torch_xla (in .venv-xla, with
# PT_XLA_DEBUG) and JAX's compile logs. About a minute of CPU.
PROF_HASH := $(shell { grep -E '^(torch|jax|jaxlib)==' $(REQS); echo torch==2.9.0 torch_xla==2.9.0; cat $(TESTDATA)/profile_fixtures.py $(TESTDATA)/profile/*.py; } 2>/dev/null | sha256sum | cut -c1-16)
PROF_DIR  := $(CACHE_ROOT)/profile-fixtures-$(PROF_HASH)
PROF_LINK := .cache/profile-fixtures
export TPUPORT_PROFILE_FIXTURES := $(abspath $(PROF_LINK))

$(PROF_DIR)/.done: $(VENV)/.stamp $(VENV_XLA)/.stamp
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/profile_fixtures.py) --out $(PROF_DIR) --xla-python $(abspath $(VENV_XLA)/bin/python)
	@touch $@

profile-fixtures: $(PROF_DIR)/.done ## torch/JAX/torch_xla profiler outputs for profile's tests
	@mkdir -p .cache
	@ln -sfn $(PROF_DIR) $(PROF_LINK)
	@$(call prune,profile-fixtures,$(PROF_HASH))

# Recorded traces of real loops for `tpuport profile`'s host-bound finding (issue 34): JAX loops
# under jax.profiler and PyTorch loops under torch.profiler with loaders of several shapes, each
# host-bound and clean ($(TESTDATA)/host_bound/corpus.json holds the dev / held-out split
# and the expectations). Keyed by the scripts and the framework versions; the tests read
# $(TPUPORT_HOST_BOUND_TRACES). About three minutes of CPU (six on a busy two-core machine), some 30 MB.
HBT_HASH  := $(shell { grep -E '^(numpy|jax|jaxlib|torch|pillow)==' $(REQS); cat $(TESTDATA)/host_bound_traces.py $(TESTDATA)/host_bound/*; } 2>/dev/null | sha256sum | cut -c1-16)
HBT_DIR   := $(CACHE_ROOT)/host-bound-traces-$(HBT_HASH)
HBT_LINK  := .cache/host-bound-traces
export TPUPORT_HOST_BOUND_TRACES := $(abspath $(HBT_LINK))

$(HBT_DIR)/.done: $(VENV)/.stamp
	cd /tmp && $(abspath $(VPY)) $(abspath $(TESTDATA)/host_bound_traces.py) --out $(HBT_DIR)
	@touch $@

host-bound-traces: $(HBT_DIR)/.done ## recorded host-bound and clean loops for profile's PRF101
	@mkdir -p .cache
	@ln -sfn $(HBT_DIR) $(HBT_LINK)
	@$(call prune,host-bound-traces,$(HBT_HASH))

# Trained detectors with symbolic spatial dims from a PyPI wheel (rapidocr-onnxruntime's PP-OCRv4
# text detector and direction classifier, sha256-checked, about 5 MB) for audit's partial-count
# tests (crates/tpuport/tests/audit_unbound.rs). Needs only pip; keyed by the script.
WHEEL_MODELS_HASH := $(shell cat $(TESTDATA)/wheel_models.py 2>/dev/null | sha256sum | cut -c1-16)
WHEEL_MODELS_DIR  := $(CACHE_ROOT)/wheel-models-$(WHEEL_MODELS_HASH)
export TPUPORT_WHEEL_MODELS := $(WHEEL_MODELS_DIR)

$(WHEEL_MODELS_DIR)/meta.json: | $(VPY)
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/wheel_models.py) --out $(WHEEL_MODELS_DIR) >/dev/null

wheel-models: $(WHEEL_MODELS_DIR)/meta.json ## trained detectors with symbolic H/W from a PyPI wheel
	@$(call prune,wheel-models,$(WHEEL_MODELS_HASH))

# The served model repository (JAX MLP at buckets 1,4,8 and a model per datatype).
SERVE_FX_HASH := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat $(TESTDATA)/serve_fixtures.py; } 2>/dev/null | sha256sum | cut -c1-16)
SERVE_FX_DIR  := $(CACHE_ROOT)/serve-fixtures-$(SERVE_FX_HASH)
SERVE_FX_LINK := .cache/serve-fixtures

$(SERVE_FX_DIR)/.done: $(VENV)/.stamp
	@rm -rf $(SERVE_FX_DIR)
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/serve_fixtures.py) --out $(SERVE_FX_DIR)
	@touch $@

serve-fixtures: $(SERVE_FX_DIR)/.done ## the model repository serve-conformance serves
	@mkdir -p .cache
	@ln -sfn $(SERVE_FX_DIR) $(SERVE_FX_LINK)
	@$(call prune,serve-fixtures,$(SERVE_FX_HASH))

# libtpu (PyPI `libtpu`, the newest that loads) for `tpuport compile` and the TPU-compiler tests,
# unpacked outside the clone and linked as .cache/libtpu (the tests and tpuport's own discovery
# look there, docs/compile.md). Says in one line which libtpu is used, or that there is none:
# the TPU-compiler tests then print one line each and pass, and `make test` repeats the line
# after the suite.
LIBTPU_ROOT := $(CACHE_ROOT)/libtpu
LIBTPU_NONE := libtpu: not available; the TPU-compiler tests (tpuport compile_cli and audit_compiler, tpuport-pjrt libtpu and topology) pass without checking
libtpu: venv ## the newest PyPI libtpu that loads, as .cache/libtpu
	@mkdir -p .cache $(LIBTPU_ROOT)
	@if [ -d .cache/libtpu ] && [ ! -L .cache/libtpu ]; then \
	  for d in .cache/libtpu/*/; do [ -e "$(LIBTPU_ROOT)/$$(basename $$d)" ] || mv "$$d" $(LIBTPU_ROOT)/; done; \
	  rm -rf .cache/libtpu; fi
	@ln -sfn $(LIBTPU_ROOT) .cache/libtpu
	@if lib=$$(LIBTPU_ROOT=$(LIBTPU_ROOT) bash scripts/tools/libtpu_fetch.sh); then \
	  echo "libtpu: $$lib (TPU-compiler checks run)"; else echo "$(LIBTPU_NONE)"; fi

# Regenerates the small committed models under crates/tpuport-analysis/tests/data/findings/
# (not part of `make test`: the files are committed).
findings-fixtures: venv ## regenerate the committed audit-finding models
	$(VPY) $(TESTDATA)/findings_fixtures.py

# Regenerates crates/tpuport-formats/tests/data/shape_rules/ (ONNX shape inference's answers
# for the shape-rule cases; not part of `make test`: the files are committed).
shape-rule-fixtures: venv ## regenerate the committed shape-rule cases
	$(VPY) $(TESTDATA)/shape_rule_fixtures.py

# ---------------------------------------------------------------------------------------------
# How make test runs: one make -j$(TEST_JOBS) over every step (CI has 2 cores and waits on the
# network much of the time), each step's output printed in one piece when it ends (make -O).
# Two orderings hold only under `make test` (IN_MAKE_TEST), so that each target alone still
# installs only what it needs:
#   - one cargo at a time (they share target/): the binary, then fmt + clippy, then the test
#     binaries, while the Python steps run beside them;
#   - every venv before any generator or end-to-end run: pip must not replace a package that a
#     running step imports.
# ---------------------------------------------------------------------------------------------
### Test steps (all part of make test)

.PHONY: test-steps test-venvs test-build e2e-port serve-conformance shard-verify-check

TEST_JOBS   ?= 3
TEST_VENVS  := venv $(VENV)/.exports-stamp deploy-venv venv-xla venv-serve deploy-tools
TEST_INPUTS := fixtures audit-refs lower-refs validate-refs conformance-cases recurrent-models \
               libtpu profile-fixtures host-bound-traces stablehlo-exports wheel-models
TEST_RUNS   := e2e-port serve-conformance shard-verify-check

test-steps: build lint test-build test-venvs $(TEST_INPUTS) $(TEST_RUNS)
test-venvs: $(TEST_VENVS)

ifdef IN_MAKE_TEST
# Every step but one is throughput work and runs at nice 10 (NICE): the recorded loops of
# host-bound-traces are timing-sensitive, and their recorder measures the CPU that processes at
# normal priority take beside a loop (scripts/testdata/host_bound_traces.py).
NICE  := nice -n 10
CARGO := $(NICE) $(CARGO)
lint: | build
test-build: | lint
$(FIX_DIR)/.done $(EXP_DIR)/.done $(PROF_DIR)/.done $(SERVE_FX_DIR)/.done audit-refs \
  recurrent-models conformance-cases libtpu $(WHEEL_MODELS_DIR)/meta.json $(TEST_RUNS): | test-venvs
endif

test-build: ## compile every test binary (cargo test --no-run)
	$(CARGO) test --workspace --locked --no-run

# Port real training scripts (JAX pmap, PyTorch) and check the ported ones train to the same loss.
# The exporters' pins bring flax, which the corpus's Flax MNIST script needs to run.
e2e-port: venv venv-xla build $(VENV)/.exports-stamp ## port real training scripts, compare losses
	$(NICE) $(VPY) scripts/e2e/e2e_port.py --tpuport $(TPUPORT)

# tritonclient (HTTP + gRPC, sync + aio, binary + JSON, every datatype) and schemathesis against
# `tpuport serve`, outputs compared with numpy and with `tpuport run`; then a trained model from
# a PyPI wheel served and checked against onnxruntime.
serve-conformance: venv venv-serve serve-fixtures build ## tritonclient + schemathesis against tpuport serve
	$(NICE) $(VENV_SERVE)/bin/python scripts/e2e/serve_conformance.py --tpuport $(TPUPORT) --fixtures $(SERVE_FX_LINK) --schemathesis
	$(NICE) $(VPY) scripts/e2e/serve_real_model.py --tpuport $(TPUPORT) --client-python $(VENV_SERVE)/bin/python --seconds 0

# The quick part of shard-proof-tpu: GPT-2 (2 layers), one training and one inference step, and
# the Gemma example's step on the plan's own mesh. About a minute.
shard-verify-check: venv $(VENV)/.exports-stamp build libtpu ## shard --verify vs libtpu, quick
	@lib="$(LIBTPU_SO)"; if [ -n "$$lib" ]; then \
	  $(NICE) $(VPY) scripts/proofs/shard_proof.py --tpuport $(TPUPORT) --libtpu "$$lib" --quick --only gpt2 --layers 2 --gemma auto 2>&1 \
	    | grep -vE '^(WARNING|[IWE][0-9]{4} )'; test $${PIPESTATUS[0]} -eq 0; \
	else echo "shard-verify-check: no libtpu, skipped"; fi

# ---------------------------------------------------------------------------------------------
# How make demo gets its inputs: the bundled example only. Two trained models from PyPI wheels
# (PP-OCRv4's text recognizer as ONNX, MTCNN's output network as a torch.save checkpoint) and
# onnxruntime's outputs as the reference ($(TESTDATA)/demo_models.py); .venv gets only numpy,
# onnxruntime and the CPU PJRT plugin at base.txt's pins (`make test` adds the rest later). The
# binary is built in the `demo` profile (Cargo.toml: release without optimization or debug info,
# a fraction of the CPU) while pip and the inputs run beside it; TPUPORT_BIN=... uses that
# binary instead.
# ---------------------------------------------------------------------------------------------
### Demo parts

.PHONY: demo-build demo-inputs

DEMO_PKGS := numpy|onnxruntime|xla-cpu-pjrt
$(VENV)/.demo-stamp: | $(VPY)
	$(VPIP) install -q $$(grep -E '^($(DEMO_PKGS))==' $(REQS))
	@touch $@

DEMO_HASH := $(shell { grep -E '^($(DEMO_PKGS))==' $(REQS); cat $(TESTDATA)/demo_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
DEMO_DIR  := $(CACHE_ROOT)/demo-$(DEMO_HASH)
DEMO_IN   := .cache/demo-inputs
DEMO_OUT  := .cache/demo
DEMO_OCR  := $(DEMO_IN)/ocr_rec.onnx

$(DEMO_DIR)/.done: $(VENV)/.demo-stamp
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath $(TESTDATA)/demo_models.py) --out $(DEMO_DIR)
	@touch $@

demo-inputs: $(DEMO_DIR)/.done ## the demo's two models and onnxruntime's outputs
	@mkdir -p .cache
	@ln -sfn $(DEMO_DIR) $(DEMO_IN)
	@$(call prune,demo,$(DEMO_HASH))

ifdef TPUPORT_BIN
DEMO_BIN := $(TPUPORT_BIN)
demo-build: build
else
DEMO_BIN := $(or $(CARGO_TARGET_DIR),target)/demo/tpuport
demo-build: ## the binary in the demo profile (target/demo/tpuport)
	$(CARGO) build --profile demo --locked -p tpuport
endif

# ---------------------------------------------------------------------------------------------
# Benchmarks against Python baselines, printed as ratios (scripts/bench/)
# ---------------------------------------------------------------------------------------------
### Benchmarks

.PHONY: bench bench-compile bench-profile bench-audit bench-serve bench-serve-fixtures

bench: fixtures build libtpu ## every benchmark below, then bench-serve
	$(VPY) scripts/bench/bench_inspect.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench/bench_pjrt.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench/bench_lint.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench/bench_port.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench/bench_lower.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench/bench_batch.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench/bench_audit.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench/bench_compile.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)"
	$(VPY) scripts/bench/bench_profile.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench/bench_shard.py --tpuport $(TPUPORT)
	$(MAKE) --no-print-directory bench-serve

bench-compile: venv build libtpu ## tpuport compile vs JAX's topology + lower().compile()
	$(VPY) scripts/bench/bench_compile.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)"

bench-profile: venv build ## tpuport profile on a 1 GB trace vs Python's json.load
	$(VPY) scripts/bench/bench_profile.py --tpuport $(TPUPORT)

bench-audit: fixtures build ## tpuport audit on BERT-base vs an onnx + numpy baseline
	$(VPY) scripts/bench/bench_audit.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)

# The JAX MLP and CNN served by tpuport and its peers.
BENCH_SERVE_FX_HASH := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat scripts/bench/bench_serve_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
BENCH_SERVE_FX_DIR  := $(CACHE_ROOT)/bench-serve-fixtures-$(BENCH_SERVE_FX_HASH)
BENCH_SERVE_FX_LINK := .cache/bench-serve-fixtures

$(BENCH_SERVE_FX_DIR)/.done: $(VENV)/.stamp
	@rm -rf $(BENCH_SERVE_FX_DIR)
	cd /tmp && $(NICE) $(abspath $(VPY)) $(abspath scripts/bench/bench_serve_models.py) --out $(BENCH_SERVE_FX_DIR)
	@touch $@

bench-serve-fixtures: $(BENCH_SERVE_FX_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(BENCH_SERVE_FX_DIR) $(BENCH_SERVE_FX_LINK)
	@$(call prune,bench-serve-fixtures,$(BENCH_SERVE_FX_HASH))

# `tpuport serve` side by side with Triton (nvidia-pytriton) and MLServer on the same JAX MLP and
# CNN, then overload (10x capacity for 30 s), SIGTERM under load and recompiles (about 12 minutes).
bench-serve: venv venv-serve venv-peers bench-serve-fixtures build wrk-tool ## tpuport serve vs Triton and MLServer, overload, SIGTERM
	$(CARGO) build --release --locked -p tpuport-serve --example serve_load
	$(VPY) scripts/bench/bench_serve.py --tpuport $(RELEASE_DIR)/tpuport --fixtures $(BENCH_SERVE_FX_LINK) \
	  --peers-python $(VENV_PEERS)/bin/python --loadgen $(RELEASE_DIR)/examples/serve_load
	$(VPY) scripts/e2e/serve_real_model.py --tpuport $(RELEASE_DIR)/tpuport --client-python $(VENV_SERVE)/bin/python

# ---------------------------------------------------------------------------------------------
# Proofs: tpuport's figures against a ground truth it does not compute (scripts/proofs/)
# ---------------------------------------------------------------------------------------------
### Proofs

.PHONY: audit-vs-libtpu memory-calibration shard-proof shard-proof-tpu conformance

# Exit 1 when a case is off by more than 10 %, the fit verdicts disagree or the compiler does not
# confirm a weight layout. About 7 minutes on 2 cores (docs/compile.md).
audit-vs-libtpu: fixtures build libtpu ## audit's per-chip HBM vs libtpu's, v5e-8 and v6e-8
	$(VPY) scripts/proofs/audit_vs_libtpu.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK) --libtpu "$(LIBTPU_SO)" --check

# 36 models exported from published configs (scripts/testdata/memory_corpus.py, cached under
# $(CACHE_ROOT)), split dev / held-out by family; libtpu's figures are kept per libtpu version in
# the corpus folder, so a rerun compiles nothing and takes about a minute (25 min cold).
memory-calibration: venv $(VENV)/.exports-stamp build libtpu ## audit's HBM estimate vs libtpu on 36 published-config models (dev / held-out)
	corpus=$$(cd /tmp && $(abspath $(VPY)) $(abspath scripts/testdata/memory_corpus.py) | tail -1) && \
	$(VPY) scripts/proofs/memory_calibration.py --tpuport $(TPUPORT) --corpus "$$corpus" --libtpu "$(LIBTPU_SO)"

# The emitted JAX plan for GPT-2, BERT and a TinyLlama-config decoder (reduced layers) compiled
# on 8 CPU devices, memory_analysis per device vs the plan (exit 1 past 10 %); the emitted
# torch_xla mark_sharding code through one SPMD training step on 8 fake CPU devices; the 7B
# decisions and the planning-time bench. About 3 minutes on 2 cores.
shard-proof: venv venv-xla build ## shard plans compiled by JAX and torch_xla on 8 CPU devices
	$(VPY) scripts/proofs/shard_proof.py --tpuport $(TPUPORT)
	$(VENV_XLA)/bin/python scripts/proofs/shard_proof_torch_xla.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench/bench_shard.py --tpuport $(TPUPORT)

# The JAX proof compiled by libtpu for a v5e:2x4 topology (no TPU needed): JAX compiles the
# emitted plan itself, and `tpuport shard --verify` gets the same step exported unsharded; exit
# 1 when the two per-chip figures differ by more than 10 %. `--gemma`: the same on a public
# training script's own step (Flax's Gemma example, $(TESTDATA)/corpus/flax_gemma) on three
# meshes. About 10 minutes.
shard-proof-tpu: venv $(VENV)/.exports-stamp build libtpu ## shard --verify vs JAX compiled by libtpu (v5e:2x4)
	$(VPY) scripts/proofs/shard_proof.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)" --gemma

# The ONNX backend cases plus the onnx package's simple / pytorch-converted / pytorch-operator
# suites lowered, compiled and run by `tpuport conformance`; exit 1 when a pass rate falls below
# $(CONF_FLOOR). Summary: .cache/conformance.json.
CONF_FLOOR := $(TESTDATA)/conformance_floor.json
REF_ONNX    = $(wildcard $(FIX_LINK)/torch/*/legacy.onnx $(FIX_LINK)/torch/*/dynamo.onnx)
conformance: venv build ## ONNX backend test cases through tpuport lower on the CPU plugin
	@test -d $(FIX_LINK)/torch || { echo "error: $(FIX_LINK)/torch missing (reference models): run make fixtures"; exit 2; }
	@mkdir -p .cache
	dir=$$(cd /tmp && $(abspath $(VPY)) $(abspath $(TESTDATA)/onnx_conformance.py)) && \
	$(TPUPORT) conformance "$$dir" --json .cache/conformance.json --floor $(CONF_FLOOR) \
	  $(addprefix --reference ,$(REF_ONNX))

# ---------------------------------------------------------------------------------------------
# The pip wheel: the release binary built by maturin with zig as the linker, so that it needs
# only glibc 2.17-era symbols (manylinux2014). CI: `make wheel-install`, then
# `make test TPUPORT_BIN=$(abspath $(WHEEL_VENV))/bin/tpuport`, then `make wheel-uninstall`.
# ---------------------------------------------------------------------------------------------
### The wheel

.PHONY: wheel wheel-tools wheel-install wheel-uninstall test-wheel

$(VENV)/.wheel-stamp: $(VENV)/.stamp
	$(VPIP) install -q -r $(WHEEL_REQS)
	@touch $@

wheel-tools: $(VENV)/.wheel-stamp

wheel: wheel-tools ## the pip wheel (maturin, manylinux2014 through zig) into dist/
	rm -rf dist
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/maturin build --release --locked --zig \
	  --compatibility manylinux2014 --out dist
	@ls -l dist/

# The wheel as a user meets it (fresh venv, `pip install tpuport-*.whl[cpu]`, no environment
# variables, smoke checks), then uninstalled and checked gone.
WHEEL_VENV := .cache/wheel-venv
wheel-install: wheel fixtures ## the wheel into a fresh venv, with its smoke checks
	$(VPY) scripts/e2e/wheel_smoke.py install --wheel "$$(ls dist/tpuport-*.whl)" --venv $(WHEEL_VENV) --fixtures $(FIX_LINK)

wheel-uninstall: venv ## pip uninstall the wheel and check nothing is left
	$(VPY) scripts/e2e/wheel_smoke.py uninstall --venv $(WHEEL_VENV)

test-wheel: wheel-install ## the CLI tests against the installed wheel's binary
	TPUPORT_BIN="$(abspath $(WHEEL_VENV))/bin/tpuport" $(CARGO) test -p tpuport --tests --locked
	$(MAKE) wheel-uninstall

# ---------------------------------------------------------------------------------------------
# Other
# ---------------------------------------------------------------------------------------------
### Other

.PHONY: fuzz
fuzz: ## bounded cargo-fuzz runs, one per importer (FUZZ_SECONDS each)
	@$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	bash scripts/tools/fuzz.sh

# tpuport: every target installs what it needs, idempotently.
#   make demo   run tpuport on a bundled example with the CPU PJRT plugin
#   make test   the whole test suite (Rust + generated fixtures)
#   make bench  benchmarks against Python baselines, printed as ratios
#   make bench-serve  tpuport serve vs Triton and MLServer, overload, SIGTERM under load
#   make conformance  ONNX backend test cases through `tpuport lower` on the CPU plugin
#   make fuzz   bounded cargo-fuzz runs, one per importer
#   make wheel  the pip wheel (maturin, manylinux2014 through zig) into dist/
#   make test-wheel  install that wheel in a fresh venv and run the CLI tests against its binary
#   make man    man pages from the clap definitions into target/man/

SHELL := /bin/bash
.DEFAULT_GOAL := test

PY        ?= python3
VENV      := .venv
VPY       := $(VENV)/bin/python
REQS      := scripts/requirements.txt
# Fixtures live outside the clone, keyed by the hash of everything that shapes them, so a CI run
# on the same machine reuses them. `.cache/fixtures` is a git-ignored link to the current set.
CACHE_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tpuport
# Only the packages that shape the fixtures enter the key (adding a lint tool must not
# regenerate GBs of exported models).
FIX_PKGS   := numpy|ml_dtypes|jax|jaxlib|onnx|onnxruntime|onnxscript|torch|torchvision|transformers|safetensors
FIX_HASH   := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat scripts/fixtures/*.py; } 2>/dev/null | sha256sum | cut -c1-16)
FIX_DIR    := $(CACHE_ROOT)/fixtures-$(FIX_HASH)
FIX_LINK   := .cache/fixtures
CARGO      ?= cargo
export TPUPORT_FIXTURES := $(abspath $(FIX_LINK))

.PHONY: stablehlo-exports wheel test-wheel man wheel-tools demo test lint fixtures venv bench fuzz clean-fixtures build e2e-port venv-xla conformance conformance-cases lower-refs audit-refs bench-audit validate-refs recurrent-models libtpu bench-compile audit-vs-libtpu profile-fixtures host-bound-traces bench-profile venv-serve serve-fixtures serve-conformance deploy-venv deploy-tools venv-peers bench-serve-fixtures bench-serve wrk-tool

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

# `make test TPUPORT_BIN=/abs/path/tpuport` runs every step and every CLI test with that binary
# and builds no release binary (CI passes the one the pip wheel installed: .ci/run).
ifdef TPUPORT_BIN
export TPUPORT_BIN
build:
	@test -x "$(TPUPORT_BIN)" || { echo "error: TPUPORT_BIN=$(TPUPORT_BIN) is not an executable file"; exit 2; }
else
build:
	$(CARGO) build --release --locked -p tpuport
endif

# StableHLO exported by Keras 3 applications, keras-hub causal LMs, Flax linen and NNX with the
# weights as leading arguments (scripts/stablehlo_exports.py), for the argument-roles tests
# (crates/tpuport-analysis/tests/roles_exports.rs, issue 21). Keyed by the script and the
# exporters' pins; about two minutes of CPU. The tests read $(TPUPORT_STABLEHLO_EXPORTS).
EXP_REQS  := scripts/requirements-exports.txt
KERAS_HUB := keras-hub==0.32.0
EXP_HASH  := $(shell { grep -E '^(numpy|jax|jaxlib)==' $(REQS); cat $(EXP_REQS) scripts/stablehlo_exports.py scripts/flax_gemma_step.py scripts/corpus/flax_gemma/*.py; echo $(KERAS_HUB); } 2>/dev/null | sha256sum | cut -c1-16)
EXP_DIR   := $(CACHE_ROOT)/stablehlo-exports-$(EXP_HASH)
export TPUPORT_STABLEHLO_EXPORTS := $(EXP_DIR)

$(VENV)/.exports-stamp: $(VENV)/.stamp $(EXP_REQS)
	$(VPY) -m pip install -q -r $(EXP_REQS)
	$(VPY) -m pip install -q --no-deps $(KERAS_HUB)
	@touch $@

$(EXP_DIR)/.done: $(VENV)/.exports-stamp
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/stablehlo_exports.py) --out $(EXP_DIR)

stablehlo-exports: $(EXP_DIR)/.done
	@find $(CACHE_ROOT) -maxdepth 1 -name 'stablehlo-exports-*' ! -name 'stablehlo-exports-$(EXP_HASH)' -exec rm -rf {} + 2>/dev/null || true

# Reference data for `tpuport validate`'s tests (scripts/validate_refs.py): JAX's own
# bf16-operand runs of the JAX fixtures and planted-divergence models. Keyed by the script, the
# fixture functions and the fixture set; the tests read $(TPUPORT_VALIDATE_REFS).
VREF_HASH := $(shell { echo $(FIX_HASH); cat scripts/validate_refs.py scripts/fixtures/jax_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
VREF_DIR  := $(CACHE_ROOT)/validate-refs-$(VREF_HASH)
VREF_LINK := .cache/validate-refs
export TPUPORT_VALIDATE_REFS := $(abspath $(VREF_LINK))

validate-refs: fixtures
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/validate_refs.py) --fixtures $(abspath $(FIX_LINK)) --out $(VREF_DIR)
	@mkdir -p .cache
	@ln -sfn $(VREF_DIR) $(VREF_LINK)
	@find $(CACHE_ROOT) -maxdepth 1 -name 'validate-refs-*' ! -name 'validate-refs-$(VREF_HASH)' -exec rm -rf {} + 2>/dev/null || true

# libtpu (PyPI `libtpu`, the newest that loads) for `tpuport compile` and the TPU-compiler tests,
# unpacked outside the clone and linked as .cache/libtpu (the tests and tpuport's own discovery
# look there, docs/compile.md). Says in one line which libtpu is used, or that there is none:
# the TPU-compiler tests then print one line each and pass, and `make test` repeats the line
# after the suite.
LIBTPU_ROOT := $(CACHE_ROOT)/libtpu
LIBTPU_NONE := libtpu: not available; the TPU-compiler tests (tpuport compile_cli and audit_compiler, tpuport-pjrt libtpu and topology) pass without checking
libtpu: venv
	@mkdir -p .cache $(LIBTPU_ROOT)
	@if [ -d .cache/libtpu ] && [ ! -L .cache/libtpu ]; then \
	  for d in .cache/libtpu/*/; do [ -e "$(LIBTPU_ROOT)/$$(basename $$d)" ] || mv "$$d" $(LIBTPU_ROOT)/; done; \
	  rm -rf .cache/libtpu; fi
	@ln -sfn $(LIBTPU_ROOT) .cache/libtpu
	@if lib=$$(LIBTPU_ROOT=$(LIBTPU_ROOT) bash scripts/libtpu_fetch.sh); then \
	  echo "libtpu: $$lib (TPU-compiler checks run)"; else echo "$(LIBTPU_NONE)"; fi

# `tpuport deploy`'s offline manifest validation (scripts/validate_manifests.py):
# kubernetes-validate and jsonschema in .venv. `deploy-tools`: promtool (Debian `prometheus`)
# for the alert rules and tmux for `top`'s screen test, installed when apt can; the tests say
# so in one line and fall back (rules: a parser test) when they are missing.
DEPLOY_REQS := scripts/requirements-deploy.txt
$(VENV)/.deploy-stamp: $(VENV)/.stamp $(DEPLOY_REQS)
	$(VPY) -m pip install -q -r $(DEPLOY_REQS)
	@touch $@

deploy-venv: $(VENV)/.deploy-stamp

deploy-tools:
	@command -v promtool >/dev/null && command -v tmux >/dev/null \
	  || { apt-get install -y -q --no-install-recommends prometheus tmux >/dev/null 2>&1 \
	       || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends prometheus tmux >/dev/null 2>&1; } \
	       || echo "deploy-tools: promtool/tmux could not be installed; their checks will say so"; }

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

test: fixtures lint e2e-port audit-refs lower-refs validate-refs conformance-cases recurrent-models libtpu profile-fixtures host-bound-traces serve-conformance stablehlo-exports deploy-venv deploy-tools shard-verify-check
	$(CARGO) test --workspace --locked
	@lib=$${TPUPORT_LIBTPU:-$(LIBTPU_SO)}; test -n "$$lib" || echo "$(LIBTPU_NONE)"

TPUPORT := $(or $(TPUPORT_BIN),./target/release/tpuport)
DEMO_OUT := .cache/demo

demo: fixtures build
	@echo "== 1. doctor: which PJRT plugins and Python frameworks are here"
	$(TPUPORT) doctor
	@echo "== 2. inspect: what a PyTorch export holds, shapes bound for batch 8"
	$(TPUPORT) inspect $(FIX_LINK)/torch/resnet50/dynamo.onnx --batch 8 --top 5
	@echo "== 3. inspect: a torch.save checkpoint, read without executing the pickle"
	$(TPUPORT) inspect $(FIX_LINK)/torch/gpt2/model.pt --top 3
	@echo "== 4. run: a JAX transformer block on XLA:CPU through PJRT"
	@mkdir -p $(DEMO_OUT)
	$(TPUPORT) run $(FIX_LINK)/jax/encoder/jit.mlir --out $(DEMO_OUT) $$(for f in $$(ls -v $(FIX_LINK)/jax/encoder/inputs/arg*.npy); do echo --input $$f; done)
	@echo "== 5. bench: latency percentiles and achieved FLOP/s"
	$(TPUPORT) bench $(FIX_LINK)/jax/encoder/jit.mlir --iters 50
	@echo "== 6. check: TPU-hostile patterns in a PyTorch training script (exit 1 = findings)"
	$(TPUPORT) check examples/scripts/pytorch_resnet_ddp.py --statistics; test $$? -le 1
	@echo "== 7. audit: FLOPs, padding, memory, fit and step time per TPU generation (exit 1 = findings)"
	$(TPUPORT) audit $(FIX_LINK)/torch/resnet50/dynamo.onnx --batch 8 --slice v5e-8; test $$? -le 1
	@echo "== 8. lower: the ONNX export to StableHLO, one static module per batch bucket"
	$(TPUPORT) lower $(FIX_LINK)/torch/resnet50/dynamo.onnx --batch 1,8 -o $(DEMO_OUT)/resnet50
	@echo "== 9. validate: XLA:CPU vs onnxruntime's outputs, with TPU default matmul precision emulated"
	$(TPUPORT) validate $(FIX_LINK)/torch/resnet50/dynamo.onnx --inputs $(FIX_LINK)/torch/resnet50/inputs.npz \
	  --reference $(FIX_LINK)/torch/resnet50/outputs_dynamo.npz --emulate tpu-default

LIBTPU_SO = $$(ls .cache/libtpu/*/libtpu/libtpu.so 2>/dev/null | head -n1)

bench: fixtures build libtpu
	$(VPY) scripts/bench_inspect.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench_pjrt.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench_lint.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench_port.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench_lower.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench_batch.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench_audit.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)
	$(VPY) scripts/bench_compile.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)"
	$(VPY) scripts/bench_profile.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench_shard.py --tpuport $(TPUPORT)
	$(MAKE) --no-print-directory bench-serve

# `tpuport compile` (libtpu AOT for v5e-8) vs JAX's topology + lower().compile(), same module.
bench-compile: venv build libtpu
	$(VPY) scripts/bench_compile.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)"

# `tpuport audit`'s per-chip HBM estimate against libtpu's figure on the JAX fixtures, the torch
# exports and the sharded fixtures, v5e-8 and v6e-8 (the table in docs/compile.md); exit 1 when a
# case is off by more than 10 %, the fit verdicts disagree or the compiler does not confirm a
# weight layout. About 7 minutes on 2 cores (6 min 58 s measured, docs/compile.md).
audit-vs-libtpu: fixtures build libtpu
	$(VPY) scripts/audit_vs_libtpu.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK) --libtpu "$(LIBTPU_SO)" --check

# `tpuport shard` proofs: the emitted JAX plan for GPT-2, BERT and a TinyLlama-config decoder
# (reduced layers) compiled on 8 CPU devices, memory_analysis per device vs the plan (exit 1 past
# 10 %); the emitted torch_xla mark_sharding code through one SPMD training step on 8 fake CPU
# devices; the 7B decisions and the planning-time bench. About 3 minutes on 2 cores.
.PHONY: shard-proof
shard-proof: venv venv-xla build
	$(VPY) scripts/shard_proof.py --tpuport $(TPUPORT)
	$(VENV_XLA)/bin/python scripts/shard_proof_torch_xla.py --tpuport $(TPUPORT)
	$(VPY) scripts/bench_shard.py --tpuport $(TPUPORT)

# The same JAX proof compiled by libtpu for a v5e:2x4 topology (no TPU needed): JAX compiles the
# emitted plan itself, and `tpuport shard --verify` gets the same step exported unsharded; exit 1
# when the two per-chip figures differ by more than 10 % (the count is printed beside them).
# About 10 minutes.
# `--gemma`: the same on a public training script's own step (Flax's Gemma example,
# scripts/corpus/flax_gemma) on three meshes, JAX compiling it with the emitted plan applied by
# `tree_shardings`.
.PHONY: shard-proof-tpu shard-verify-check
shard-proof-tpu: venv $(VENV)/.exports-stamp build libtpu
	$(VPY) scripts/shard_proof.py --tpuport $(TPUPORT) --libtpu "$(LIBTPU_SO)" --gemma

# Its quick part for `make test`: GPT-2 (2 layers), one training and one inference step, and
# the Gemma example's step on the plan's own mesh. About a minute.
shard-verify-check: venv $(VENV)/.exports-stamp build libtpu
	@lib="$(LIBTPU_SO)"; if [ -n "$$lib" ]; then \
	  $(VPY) scripts/shard_proof.py --tpuport $(TPUPORT) --libtpu "$$lib" --quick --only gpt2 --layers 2 --gemma auto 2>&1 \
	    | grep -vE '^(WARNING|[IWE][0-9]{4} )'; test $${PIPESTATUS[0]} -eq 0; \
	else echo "shard-verify-check: no libtpu, skipped"; fi

# `tpuport profile` on a 1 GB synthetic trace vs Python's json.load of the same file.
bench-profile: venv build
	$(VPY) scripts/bench_profile.py --tpuport $(TPUPORT)

# ONNX backend test cases (onnx's node cases, built in memory by the onnx package, plus its
# simple / pytorch-converted / pytorch-operator suites) written to a cache dir keyed by the onnx
# version and the script, then lowered, compiled and run by `tpuport conformance`. Exit 1 when a
# pass rate falls below scripts/conformance_floor.json. Summary: .cache/conformance.json.
CONF_FLOOR := scripts/conformance_floor.json
REF_ONNX    = $(wildcard $(FIX_LINK)/torch/*/legacy.onnx $(FIX_LINK)/torch/*/dynamo.onnx)
conformance: venv build
	@test -d $(FIX_LINK)/torch || { echo "error: $(FIX_LINK)/torch missing (reference models): run make fixtures"; exit 2; }
	@mkdir -p .cache
	dir=$$(cd /tmp && $(abspath $(VPY)) $(abspath scripts/onnx_conformance.py)) && \
	$(TPUPORT) conformance "$$dir" --json .cache/conformance.json --floor $(CONF_FLOOR) \
	  $(addprefix --reference ,$(REF_ONNX))

# The conformance cases alone (no run): `cargo test` runs them through tests/conformance_cli.rs.
conformance-cases: venv
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/onnx_conformance.py) >/dev/null

# Batch-8 inputs + onnxruntime outputs for crates/tpuport/tests/lower_models.rs (cached; the
# test finds them via TPUPORT_LOWER_REFS or the newest ~/.cache/tpuport/lower-refs-*).
lower-refs: venv
	@test -d $(FIX_LINK)/torch || { echo "error: $(FIX_LINK)/torch missing: run make fixtures"; exit 2; }
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/lower_refs.py) --fixtures $(abspath $(FIX_LINK))

# Recurrent and control-flow models with onnxruntime outputs for crates/tpuport-lower/tests/
# onnx_recurrent.rs (scripts/recurrent_models.py: single LSTM/GRU/RNN nodes, PyTorch exports from
# both exporters, Keras through tf2onnx, the VAD models of the silero-vad and faster-whisper
# wheels), in a cache dir keyed by the script and the exporters' versions; a rerun is a no-op.
RNN_PKGS := numpy|onnx|onnxruntime|onnxscript|torch|tensorflow-cpu|tf2onnx
RNN_HASH := $(shell { grep -E '^($(RNN_PKGS))==' $(REQS); cat scripts/recurrent_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
export TPUPORT_RECURRENT := $(CACHE_ROOT)/recurrent-$(RNN_HASH)
recurrent-models: venv
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/recurrent_models.py) --out $(TPUPORT_RECURRENT) >/dev/null
	@find $(CACHE_ROOT) -maxdepth 1 -name 'recurrent-*' ! -name 'recurrent-$(RNN_HASH)' -exec rm -rf {} + 2>/dev/null || true

# torch_xla 2.9.0 needs torch 2.9.0, the project venv has a newer torch: a second venv (multi-GB).
VENV_XLA := .venv-xla
$(VENV_XLA)/.stamp:
	@test -x $(VENV_XLA)/bin/python || $(PY) -m venv $(VENV_XLA)
	$(VENV_XLA)/bin/pip install -q torch==2.9.0 torch_xla==2.9.0 numpy \
	  || { echo "error: could not install torch==2.9.0 torch_xla==2.9.0 into $(VENV_XLA): the torch_xla e2e part cannot run"; exit 2; }
	@touch $@

# torchvision for the corpus scripts run by e2e-port (the version that pairs with torch 2.9.0).
$(VENV_XLA)/.stamp-torchvision: $(VENV_XLA)/.stamp
	$(VENV_XLA)/bin/pip install -q torchvision==0.24.0 \
	  || { echo "error: could not install torchvision==0.24.0 into $(VENV_XLA)"; exit 2; }
	@touch $@

venv-xla: $(VENV_XLA)/.stamp $(VENV_XLA)/.stamp-torchvision

# Real profiler outputs for `tpuport profile`'s tests: scripts/profile_fixtures.py runs the small
# loops under scripts/profile/ with torch.profiler, jax.profiler, torch_xla (in $(VENV_XLA), with
# PT_XLA_DEBUG) and JAX's compile logs. Keyed by the scripts and the framework versions; the
# tests read $(TPUPORT_PROFILE_FIXTURES). About a minute of CPU.
PROF_HASH := $(shell { grep -E '^(torch|jax|jaxlib)==' $(REQS); echo torch==2.9.0 torch_xla==2.9.0; cat scripts/profile_fixtures.py scripts/profile/*.py; } 2>/dev/null | sha256sum | cut -c1-16)
PROF_DIR  := $(CACHE_ROOT)/profile-fixtures-$(PROF_HASH)
PROF_LINK := .cache/profile-fixtures
export TPUPORT_PROFILE_FIXTURES := $(abspath $(PROF_LINK))

$(PROF_DIR)/.done: $(VENV)/.stamp $(VENV_XLA)/.stamp
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/profile_fixtures.py) --out $(PROF_DIR) --xla-python $(abspath $(VENV_XLA)/bin/python)
	@touch $@

profile-fixtures: $(PROF_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(PROF_DIR) $(PROF_LINK)
	@find $(CACHE_ROOT) -maxdepth 1 -name 'profile-fixtures-*' ! -name 'profile-fixtures-$(PROF_HASH)' -exec rm -rf {} + 2>/dev/null || true

# Recorded traces of real loops for `tpuport profile`'s host-bound finding (issue 34): JAX loops
# under jax.profiler and PyTorch loops under torch.profiler with loaders of several shapes, each
# host-bound and clean (scripts/testdata/host_bound/corpus.json holds the dev / held-out split
# and the expectations). Keyed by the scripts and the framework versions; the tests read
# $(TPUPORT_HOST_BOUND_TRACES). About three minutes of CPU (six on a busy two-core machine), some 30 MB.
HBT_HASH  := $(shell { grep -E '^(numpy|jax|jaxlib|torch|pillow)==' $(REQS); cat scripts/testdata/host_bound_traces.py scripts/testdata/host_bound/*; } 2>/dev/null | sha256sum | cut -c1-16)
HBT_DIR   := $(CACHE_ROOT)/host-bound-traces-$(HBT_HASH)
HBT_LINK  := .cache/host-bound-traces
export TPUPORT_HOST_BOUND_TRACES := $(abspath $(HBT_LINK))

$(HBT_DIR)/.done: $(VENV)/.stamp
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/testdata/host_bound_traces.py) --out $(HBT_DIR)
	@touch $@

host-bound-traces: $(HBT_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(HBT_DIR) $(HBT_LINK)
	@find $(CACHE_ROOT) -maxdepth 1 -name 'host-bound-traces-*' ! -name 'host-bound-traces-$(HBT_HASH)' -exec rm -rf {} + 2>/dev/null || true

# Port real training scripts (JAX pmap, PyTorch) and check the ported ones train to the same loss.
# The exporters' pins bring flax, which the corpus's Flax MNIST script needs to run.
e2e-port: venv venv-xla build $(VENV)/.exports-stamp
	$(VPY) scripts/e2e_port.py --tpuport $(TPUPORT)

fuzz:
	@$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	bash scripts/fuzz.sh

# FlopCounterMode reference counts for the audit acceptance test (crates/tpuport-analysis/tests/
# audit_torch.rs), in their own cache dir keyed by the script's hash; a rerun is a no-op.
AUDIT_REFS_HASH := $(shell sha256sum scripts/audit_refs.py 2>/dev/null | cut -c1-16)
export TPUPORT_AUDIT_REFS := $(CACHE_ROOT)/audit-refs-$(AUDIT_REFS_HASH)
audit-refs: venv
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/audit_refs.py)

# `tpuport audit` on BERT-base ONNX vs a Python (onnx + numpy) baseline computing the same totals.
bench-audit: fixtures build
	$(VPY) scripts/bench_audit.py --tpuport $(TPUPORT) --fixtures $(FIX_LINK)

clean-fixtures:
	rm -rf $(FIX_LINK) $(FIX_DIR)

# Regenerates the small committed models under crates/tpuport-analysis/tests/data/findings/
# (audit finding fixtures); not part of `make test`, the files are committed.
.PHONY: findings-fixtures
findings-fixtures: venv
	$(VPY) scripts/findings_fixtures.py

# Regenerates crates/tpuport-formats/tests/data/shape_rules/ (ONNX shape inference's answers
# for the shape-rule cases); not part of `make test`, the files are committed.
.PHONY: shape-rule-fixtures
shape-rule-fixtures: venv
	$(VPY) scripts/shape_rule_fixtures.py

# The pip wheel: the release binary built by maturin with zig as the linker, so that it needs
# only glibc 2.17-era symbols (manylinux2014). Tools from scripts/requirements-wheel.txt.
WHEEL_REQS := scripts/requirements-wheel.txt
$(VENV)/.wheel-stamp: $(VENV)/.stamp $(WHEEL_REQS)
	$(VPY) -m pip install -q -r $(WHEEL_REQS)
	@touch $@

wheel-tools: $(VENV)/.wheel-stamp

wheel: wheel-tools
	rm -rf dist
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/maturin build --release --locked --zig \
	  --compatibility manylinux2014 --out dist
	@ls -l dist/

# The wheel as a user meets it (fresh venv, `pip install tpuport-*.whl[cpu]`, no environment
# variables), then the binary's CLI tests against the installed binary, then uninstall.
# CI runs the whole suite once, against the installed wheel's binary: `make wheel-install`, then
# `make test TPUPORT_BIN=$(abspath $(WHEEL_VENV))/bin/tpuport`, then `make wheel-uninstall`.
WHEEL_VENV := .cache/wheel-venv
.PHONY: wheel-install wheel-uninstall
wheel-install: wheel fixtures
	$(VPY) scripts/wheel_smoke.py install --wheel "$$(ls dist/tpuport-*.whl)" --venv $(WHEEL_VENV) --fixtures $(FIX_LINK)

wheel-uninstall: venv
	$(VPY) scripts/wheel_smoke.py uninstall --venv $(WHEEL_VENV)

test-wheel: wheel-install
	TPUPORT_BIN="$(abspath $(WHEEL_VENV))/bin/tpuport" $(CARGO) test -p tpuport --tests --locked
	$(MAKE) wheel-uninstall

man: build
	$(TPUPORT) man --out target/man

# `tpuport serve`'s clients (tritonclient, schemathesis) live in their own venv: their pins may
# clash with jax/torch in .venv.
VENV_SERVE := .venv-serve
REQS_SERVE := scripts/requirements-serve.txt
$(VENV_SERVE)/.stamp: $(REQS_SERVE)
	@test -x $(VENV_SERVE)/bin/python || $(PY) -m venv $(VENV_SERVE)
	$(VENV_SERVE)/bin/pip install -q -r $(REQS_SERVE)
	@touch $@

venv-serve: $(VENV_SERVE)/.stamp

# The served model repository (JAX MLP at buckets 1,4,8 and a model per datatype), keyed by the
# generator script and the fixture-shaping package pins.
SERVE_FX_HASH := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat scripts/serve_fixtures.py; } 2>/dev/null | sha256sum | cut -c1-16)
SERVE_FX_DIR  := $(CACHE_ROOT)/serve-fixtures-$(SERVE_FX_HASH)
SERVE_FX_LINK := .cache/serve-fixtures

$(SERVE_FX_DIR)/.done: $(VENV)/.stamp scripts/serve_fixtures.py
	@rm -rf $(SERVE_FX_DIR)
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/serve_fixtures.py) --out $(SERVE_FX_DIR)
	@touch $@

serve-fixtures: $(SERVE_FX_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(SERVE_FX_DIR) $(SERVE_FX_LINK)
	@find $(CACHE_ROOT) -maxdepth 1 -name 'serve-fixtures-*' ! -name 'serve-fixtures-$(SERVE_FX_HASH)' -exec rm -rf {} + 2>/dev/null || true

# tritonclient (HTTP + gRPC, sync + aio, binary + JSON, every datatype) and schemathesis against
# `tpuport serve`; outputs compared with numpy and with `tpuport run`.
serve-conformance: venv venv-serve serve-fixtures build
	$(VENV_SERVE)/bin/python scripts/serve_conformance.py --tpuport $(TPUPORT) --fixtures $(SERVE_FX_LINK) --schemathesis
	$(VPY) scripts/serve_real_model.py --tpuport $(TPUPORT) --client-python $(VENV_SERVE)/bin/python --seconds 0

# `make bench-serve`: `tpuport serve` side by side with Triton (nvidia-pytriton) and MLServer on
# the same JAX MLP and CNN, then overload (10x capacity for 30 s), SIGTERM under load and
# recompiles (scripts/bench_serve.py; about 12 minutes). The peers live in .venv-peers, every
# package pinned and installed --no-deps (pytriton declares numpy<2, jax needs numpy 2);
# Triton's backend stub gets its own venv with numpy 1.26 (.venv-peers/stub).
VENV_PEERS      := .venv-peers
REQS_PEERS      := scripts/requirements-peers.txt
REQS_PEERS_STUB := scripts/requirements-peers-stub.txt
$(VENV_PEERS)/.stamp: $(REQS_PEERS) $(REQS_PEERS_STUB)
	@test -x $(VENV_PEERS)/bin/python || $(PY) -m venv $(VENV_PEERS)
	$(VENV_PEERS)/bin/pip install -q --no-deps -r $(REQS_PEERS)
	@test -x $(VENV_PEERS)/stub/bin/python || $(PY) -m venv $(VENV_PEERS)/stub
	$(VENV_PEERS)/stub/bin/pip install -q --no-deps -r $(REQS_PEERS_STUB)
	@touch $@

venv-peers: $(VENV_PEERS)/.stamp

BENCH_SERVE_FX_HASH := $(shell { grep -E '^($(FIX_PKGS))==' $(REQS); cat scripts/bench_serve_models.py; } 2>/dev/null | sha256sum | cut -c1-16)
BENCH_SERVE_FX_DIR  := $(CACHE_ROOT)/bench-serve-fixtures-$(BENCH_SERVE_FX_HASH)
BENCH_SERVE_FX_LINK := .cache/bench-serve-fixtures

$(BENCH_SERVE_FX_DIR)/.done: $(VENV)/.stamp scripts/bench_serve_models.py
	@rm -rf $(BENCH_SERVE_FX_DIR)
	cd /tmp && $(abspath $(VPY)) $(abspath scripts/bench_serve_models.py) --out $(BENCH_SERVE_FX_DIR)
	@touch $@

bench-serve-fixtures: $(BENCH_SERVE_FX_DIR)/.done
	@mkdir -p .cache
	@ln -sfn $(BENCH_SERVE_FX_DIR) $(BENCH_SERVE_FX_LINK)
	@find $(CACHE_ROOT) -maxdepth 1 -name 'bench-serve-fixtures-*' ! -name 'bench-serve-fixtures-$(BENCH_SERVE_FX_HASH)' -exec rm -rf {} + 2>/dev/null || true

wrk-tool:
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }

RELEASE_DIR := $(or $(CARGO_TARGET_DIR),target)/release
bench-serve: venv venv-serve venv-peers bench-serve-fixtures build wrk-tool
	$(CARGO) build --release --locked -p tpuport-serve --example serve_load
	$(VPY) scripts/bench_serve.py --tpuport $(RELEASE_DIR)/tpuport --fixtures $(BENCH_SERVE_FX_LINK) \
	  --peers-python $(VENV_PEERS)/bin/python --loadgen $(RELEASE_DIR)/examples/serve_load
	$(VPY) scripts/serve_real_model.py --tpuport $(RELEASE_DIR)/tpuport --client-python $(VENV_SERVE)/bin/python

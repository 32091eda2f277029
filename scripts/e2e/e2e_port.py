#!/usr/bin/env python3
"""End-to-end check of `tpuport port`: port a real training script, run both, compare losses.

* JAX: `examples/e2e/jax_pmap_train.py` (`jax.pmap` + `pmean` on 8 fake CPU devices) is ported
  with `--to jax --write` on a temp copy; original and port run with the project venv's jax and
  must end at the same loss.
* PyTorch: `examples/e2e/torch_train.py` (CPU/CUDA MLP) is ported with `--to torch-xla`; the
  original runs in the project venv, the port in `.venv-xla` (torch 2.9.0 + torch_xla 2.9.0)
  with `PJRT_DEVICE=CPU`; the losses must agree and torch_xla must have compiled at most 3 graphs.

* Corpus (`crates/tpuport-lint/resources/corpus`, real public scripts): every script is ported
  to its target and the result must pass `pyflakes` with no undefined name. The ones that can
  run here (torchvision / Keras / JAX scripts whose data can be synthesized) run before and
  after the port through `scripts/e2e/e2e_corpus_runner.py` (tiny synthetic data, same patches both
  times): originals in the project venv, torch_xla ports in `.venv-xla` with `PJRT_DEVICE=CPU`,
  tf-tpu ports on TensorFlow's CPU in the project venv, JAX on 8 fake CPU devices. Every loss
  (or accuracy) they print must agree within RTOL.

Each e2e script prints `final_loss <x>` last. Exit 0 when every part passes, 1 when one fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "examples" / "e2e"
CORPUS = REPO / "crates" / "tpuport-lint" / "resources" / "corpus"
RUNNER = REPO / "scripts" / "e2e" / "e2e_corpus_runner.py"
LOSS = r"[Ll]oss(?:_[DG])?: ([0-9][0-9.e+-]*)"
ACCURACY = r"accuracy ([0-9][0-9.e+-]*)"
# Keras prints each epoch's last training loss before `val_accuracy`, then `val_loss`, and the
# script prints `Test loss:`; the in-epoch progress values depend on timing and are skipped.
KERAS_LOSS = r"(?:- loss: ([0-9][0-9.e+-]*) - val_|val_loss: ([0-9][0-9.e+-]*)|Test loss: ([0-9][0-9.e+-]*))"
# The Flax MNIST example logs `train_loss: x, ..., test_loss: y` per epoch.
FLAX_LOSS = r"(?:train_loss|test_loss): ([0-9][0-9.e+-]*)"
# Corpus scripts that run here: (file, arguments, what to compare). The others are checked with
# pyflakes only, for these reasons (TensorFlow and Keras are in .venv from
# scripts/requirements/base.txt; flax is in scripts/requirements/exports.txt, which e2e-port does
# not install):
# - pytorch_examples_ddp_multigpu.py: launched by mp.spawn with one process per CUDA GPU
#   (torch.cuda.device_count()) and NCCL; no GPU here;
# - pytorch_examples_super_resolution.py: imports `model` and `data` from its repository
#   (not kept in the corpus) and downloads BSDS300;
# - pytorch_examples_regression.py: loops until the loss of random data falls under 1e-3
#   (`for batch_idx in count(1)`), its length depends on the draw, and it never uses a device;
# - transformers_run_glue_no_trainer.py: model, tokenizer and GLUE data from the Hugging Face
#   hub (no network here);
# - keras_io_wide_deep_cross_networks.py: reads the Covertype CSV from archive.ics.uci.edu
#   with pandas (no network), `plot_model` needs pydot and graphviz, and the port drops the last
#   partial batch (TPU110 `.rebatch(..., drop_remainder=True)`), so its loss differs on purpose;
# - tensorflow_tpu_cifar_keras.py: TF1 code (`tensorflow.contrib`, `TPUEstimator`), which
#   TensorFlow 2 no longer has;
# - flax_mnist_train.py runs when flax is installed (`make stablehlo-exports` installs it from
#   scripts/requirements/exports.txt; e2e-port does not): tensorflow_datasets, ml_collections
#   and orbax.export are in no requirements file, so the runner stands in for them (synthetic
#   MNIST from tfds.load, a dict config, no export) and calls train_and_evaluate itself, as
#   the example's main.py (not in the corpus) does;
# - flax_imagenet_train.py, flax_vae_train.py: import `input_pipeline`, `models` (and `utils`)
#   from their repository, plus clu / orbax / tensorflow_datasets.
CORPUS_RUNS = [
    ("pytorch_examples_mnist.py", ["--epochs", "1", "--batch-size", "16", "--test-batch-size",
                                   "32", "--log-interval", "1", "--lr", "0.1"], LOSS),
    ("pytorch_examples_mnist_rnn.py", ["--epochs", "1", "--batch-size", "16", "--test-batch-size",
                                       "32", "--log-interval", "1"], LOSS),
    ("pytorch_examples_vae.py", ["--epochs", "1", "--batch-size", "16", "--log-interval", "1"],
     LOSS),
    ("pytorch_tutorials_quickstart.py", [], LOSS),
    ("pytorch_examples_dcgan.py", ["--dataset", "fake", "--niter", "1", "--batchSize", "8",
                                   "--workers", "0", "--outf", "dcgan_out", "--manualSeed", "1"], LOSS),
    ("keras_io_mnist_convnet.py", [], KERAS_LOSS),
    ("flax_mnist_train.py", [], FLAX_LOSS),
    ("jax_mnist_classifier.py", [], ACCURACY),
    ("jax_spmd_mnist_classifier.py", [], ACCURACY),
]
RTOL = 1e-3
# DCGAN's generator loss is -log D(G(z)) with D(G(z)) around 1e-3 after the first step: the
# saturated discriminator turns float-order differences between torch 2.15 on CPU (original)
# and torch_xla 2.9 on XLA:CPU (port) into ~1 % loss differences within four steps (measured:
# first step 5.2724 vs 5.2725, fourth 6.6589 vs 6.6327). The first step must still agree within
# RTOL; the later ones within this. The later steps' difference is not stable from run to run:
# worst 1.04e-02 in the fresh-clone CI run of commit 7301d15 (stop 23 note), 2.89e-02 in the
# fresh-clone CI of 2026-12-05 08:30 (commit e161fd9, last Loss_G 6.6097 vs 6.6885), so a bound
# at 2e-2 failed one run in two. The first step (same weights, same batch) is the correctness
# check; the later ones only have to stay on the same trajectory (10 %).
RTOL_LATER = {"pytorch_examples_dcgan.py": 1e-1}
# Values printed by the first step of each script (DCGAN prints Loss_D and Loss_G per step).
FIRST_STEP_VALUES = {"pytorch_examples_dcgan.py": 2}
MAX_GRAPHS = 3

# Runs a ported torch_xla script, then prints how many graphs torch_xla compiled.
XLA_RUNNER = """
import runpy, sys
path = sys.argv[1]
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
import torch_xla.debug.metrics as met
data = met.metric_data("CompileTime")
print("compiled_graphs", data[0] if data else 0)
"""


def run(cmd, env=None, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:3]))} ... exited {p.returncode}:\n"
                           f"{p.stdout[-2000:]}{p.stderr[-3000:]}")
    return p.stdout


def run_collective(cmd, env, attempts=12):
    """`run`, retrying a run that XLA:CPU aborted on a collective rendezvous timeout."""
    for i in range(1, attempts + 1):
        try:
            return run(cmd, env, timeout=300)
        except RuntimeError as e:
            if "Termination timeout for" not in str(e) or i == attempts:
                raise
            print(f"  retry {i}: XLA:CPU rendezvous timeout in {Path(cmd[-1]).name} "
                  "(a device thread never joined the collective)")
    raise AssertionError("unreachable")


def final_loss(out):
    m = re.findall(r"^final_loss (\S+)$", out, re.M)
    if not m:
        raise RuntimeError(f"no `final_loss` line in:\n{out[-2000:]}")
    return float(m[-1])


def port(tpuport, src, target, tmp):
    dst = Path(tmp) / src.name
    shutil.copy(src, dst)
    p = subprocess.run([tpuport, "port", "--to", target, "--write", str(dst)],
                       capture_output=True, text=True, check=False)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"tpuport port --to {target} failed ({p.returncode}): {p.stderr}")
    manual = [l for l in p.stderr.splitlines() if "manual step" in l]
    print(f"  ported {src.name} --to {target}: {len(manual)} manual-step notes")
    for l in manual:
        print(f"    {l.split('manual step: ', 1)[-1]}")
    return dst


def compare(name, a, b):
    ok = abs(a - b) <= RTOL * max(abs(a), abs(b)) + 1e-7
    print(f"  {name}: original final loss {a:.8f}, ported {b:.8f} -> {'PASS' if ok else 'FAIL'}"
          f" (rtol {RTOL})")
    return ok


def jax_part(args, tmp):
    print("== JAX: pmap -> jit + NamedSharding (8 fake CPU devices)")
    # XLA:CPU runs each fake device's share of a pmap on its own thread and aborts the process
    # when a collective's rendezvous is not complete within
    # --xla_cpu_collective_call_terminate_timeout_seconds. On this 2-core machine a run that
    # normally takes 3-5 s sometimes never completes: "Expected 8 threads to join the
    # rendezvous, but only 6 of them arrived" (a lost thread, not a slow one: the process is idle
    # while it waits). That is JAX's XLA:CPU, not the port. Measured 2026-12-03: under `make` it
    # happened in 2 of 3, at least 1 of 4 and 2 of 5 runs of the unported script; outside make
    # in 0 of 9; in `make test` 5 attempts in a row failed twice. So abort after 20 s (a whole
    # good run takes 3-5 s) and retry such a run, at most 12 attempts, saying so.
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8"
                         " --xla_cpu_collective_call_terminate_timeout_seconds=20")
    src = E2E / "jax_pmap_train.py"
    orig = final_loss(run_collective([args.python, str(src)], env))
    ported = port(args.tpuport, src, "jax", tmp)
    if re.search(r"jax\.pmap\s*[,()]", ported.read_text()):
        print("  FAIL: the port still uses jax.pmap")
        return False
    new = final_loss(run_collective([args.python, str(ported)], env))
    return compare("jax", orig, new)


def torch_part(args, tmp):
    print("== PyTorch -> torch_xla (PJRT_DEVICE=CPU)")
    xla_py = Path(args.xla_python)
    probe = subprocess.run([str(xla_py), "-c", "import torch, torch_xla; print(torch.__version__,"
                            " torch_xla.__version__)"], capture_output=True, text=True,
                           check=False) if xla_py.exists() else None
    if probe is None or probe.returncode != 0:
        why = "missing" if probe is None else probe.stderr.strip().splitlines()[-1:]
        print(f"  NOT RUN: {xla_py}: torch_xla venv unusable ({why}); "
              "create it with `make venv-xla` (torch==2.9.0 torch_xla==2.9.0)")
        return False
    print(f"  torch_xla venv: torch/torch_xla {probe.stdout.strip()}")
    src = E2E / "torch_train.py"
    orig = final_loss(run([args.python, str(src)]))
    ported = port(args.tpuport, src, "torch-xla", tmp)
    env = dict(os.environ, PJRT_DEVICE="CPU")
    out = run([str(xla_py), "-c", XLA_RUNNER, str(ported)], env)
    graphs = int(float(re.findall(r"^compiled_graphs (\S+)$", out, re.M)[-1]))
    ok = compare("torch_xla", orig, final_loss(out))
    g_ok = graphs <= MAX_GRAPHS
    print(f"  torch_xla compiled {graphs} graph(s) -> {'PASS' if g_ok else 'FAIL'}"
          f" (at most {MAX_GRAPHS})")
    return ok and g_ok


def manifest():
    rows = [l.split("\t") for l in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:] if l]
    return {r[0]: r[6] for r in rows}


def series(out, pattern):
    found = re.findall(pattern, out)
    # A pattern with several groups gives tuples: the one group that matched.
    return [float(x if isinstance(x, str) else next(g for g in x if g)) for x in found]


def corpus_part(args, tmp):
    print("== corpus: port every script, pyflakes, run the ones that can run here")
    targets = manifest()
    work = Path(tmp) / "corpus"
    (work / "orig").mkdir(parents=True)
    (work / "port").mkdir()
    ok = True
    clean = 0
    for name, target in targets.items():
        shutil.copy(CORPUS / name, work / "orig" / name)
        shutil.copy(CORPUS / name, work / "port" / name)
        p = subprocess.run([args.tpuport, "port", "--to", target, "--write",
                            str(work / "port" / name)], capture_output=True, text=True,
                           check=False)
        if p.returncode not in (0, 1):
            print(f"  FAIL {name}: port exited {p.returncode}: {p.stderr.strip()[-500:]}")
            ok = False
            continue
        flakes = subprocess.run([args.python, "-m", "pyflakes", str(work / "port" / name)],
                                capture_output=True, text=True, check=False)
        undefined = [l for l in flakes.stdout.splitlines() if "undefined name" in l]
        if undefined:
            ok = False
            print(f"  FAIL {name}: pyflakes: " + "; ".join(undefined))
        else:
            clean += 1
    print(f"  pyflakes: {clean}/{len(targets)} ported scripts with no undefined name")
    ran = 0
    xla_py = os.path.abspath(args.xla_python)
    python = os.path.abspath(args.python)
    jax_env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS="--xla_force_host_platform_device_count=8"
                             " --xla_cpu_collective_call_terminate_timeout_seconds=20")
    has_flax = subprocess.run([python, "-c", "import flax"], capture_output=True,
                              check=False).returncode == 0
    runs = [r for r in CORPUS_RUNS if args.only is None or r[0] in args.only]
    for name, script_args, pattern in runs:
        if name.startswith("flax_") and not has_flax:
            print(f"  NOT RUN {name}: flax is not installed in {python} "
                  "(`make stablehlo-exports` installs it)")
            continue
        is_jax = targets[name] == "jax"
        on_venv = is_jax or targets[name] == "tf-tpu"
        results = []
        for side in ("orig", "port"):
            cwd = work / side
            (cwd / "results").mkdir(exist_ok=True)
            if is_jax:
                py, env = python, jax_env
            elif on_venv or side == "orig":
                py, env = python, None
            else:
                py, env = xla_py, dict(os.environ, PJRT_DEVICE="CPU")
            cmd = [py, str(RUNNER), name] + script_args
            try:
                # JAX runs lose a collective thread now and then (see jax_part): retried.
                for attempt in range(1, 13 if is_jax else 2):
                    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd,
                                       timeout=600, check=False)
                    if p.returncode == 0 or "Termination timeout for" not in p.stderr:
                        break
                    print(f"  retry {attempt}: XLA:CPU rendezvous timeout in {name} ({side})")
            except subprocess.TimeoutExpired:
                results.append(None)
                print(f"  FAIL {name} ({side}): timed out")
                continue
            if p.returncode != 0:
                results.append(None)
                print(f"  FAIL {name} ({side}) exited {p.returncode}:\n{p.stderr[-1500:]}")
                continue
            results.append(series(p.stdout, pattern))
        a, b = results
        if a is None or b is None:
            ok = False
            continue
        n = min(len(a), len(b))
        rel = [abs(x - y) / max(abs(x), abs(y), 1e-12) for x, y in zip(a, b)]
        worst = max(rel, default=0.0)
        first = FIRST_STEP_VALUES.get(name, len(rel))
        later = RTOL_LATER.get(name, RTOL)
        good = (len(a) == len(b) and n >= 2 and max(rel[:first], default=0.0) <= RTOL
                and worst <= later)
        ran += int(good)
        ok &= good
        print(f"  {name}: {len(a)} values original / {len(b)} ported, worst relative difference "
              f"{worst:.2e} (allowed {RTOL_LATER.get(name, RTOL):.0e}), last "
              f"{a[-1] if a else '-'} vs {b[-1] if b else '-'} -> "
              f"{'PASS' if good else 'FAIL'}")
    print(f"  corpus: {ran}/{len(targets)} scripts run after porting and match the original")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tpuport", default=str(REPO / "target/release/tpuport"))
    ap.add_argument("--python", default=str(REPO / ".venv/bin/python"))
    ap.add_argument("--xla-python", default=str(REPO / ".venv-xla/bin/python"))
    ap.add_argument("--only", help="comma-separated corpus scripts: run only the corpus part "
                    "(every script is still ported and checked with pyflakes) and, of its runs, "
                    "only these scripts; `all` for every run")
    args = ap.parse_args()
    parts = (("jax", jax_part), ("torch_xla", torch_part), ("corpus", corpus_part))
    if args.only is not None:
        names = {r[0] for r in CORPUS_RUNS}
        args.only = names if args.only == "all" else set(args.only.split(","))
        unknown = args.only - names
        if unknown:
            sys.exit(f"error: --only: not in CORPUS_RUNS: {', '.join(sorted(unknown))}")
        parts = parts[2:]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, part in parts:
            try:
                results[name] = part(args, tmp)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"  FAIL: {e}")
                results[name] = False
    print("e2e-port: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Reference data for `tpuport validate` tests (make validate-refs).

Writes into OUT (atomically: a temp dir renamed at the end; an existing OUT is left alone):

- jax_bf16/<fixture>/: for the JAX fixtures mlp_b1, mlp_b128, cnn_b8, encoder, the same
  function (rebuilt from scripts/fixtures/jax_models.py, run on the fixture's own inputs) with
  every f32 dot_general / conv_general_dilated given bf16 operands (`astype`) and f32
  accumulation (`preferred_element_type=float32`) -- what TPU precision DEFAULT computes --
  on CPU: `outputs/out{i}.npy`, and `errors.json` with that computation's error against the
  f32 run (max abs, RMSE, RMSE / RMS(reference), per output), computed with
  `--xla_allow_excess_precision=false`; `errors_excess_precision.json`: the same under XLA's
  default flags (see EXCESS below).
- planted/<name>/: models with a planted divergence, lowered by JAX with source locations:
  `model.mlir`, `inputs/arg0.npy`, `expected/out{i}.npy` (the f32 function, i.e. the maths the
  model means), and `meta.json` naming the planted op's source line.
  * `softmax_sum_bf16`: tanh(x @ w) in f32, then a softmax over a 16384-wide axis whose
    denominator is accumulated in bf16, element by element (`lax.scan`; planted line: that
    scan), then a running sum in f32. (A plain `jax.nn.softmax` in bf16 is not a planted
    divergence: XLA accumulates its reduction in f32 and the result stays within bf16 drift.)
  * `running_sum_bf16`: the softmax in f32, then a 16384-step running sum (`lax.scan`) that
    accumulates in bf16 (planted line: the scan in `_running_sum`).

Usage: validate_refs.py --fixtures DIR --out DIR
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fixtures"))

# XLA drops f32->bf16->f32 convert pairs when excess precision is allowed (the default), and on
# CPU a bf16-operand convolution is computed as converts around an f32 one: cnn_b8's second
# convolution then silently runs in full f32. The faithful reference turns that off; `--excess`
# (run as a subprocess by main) records JAX's numbers under its default flags too.
EXCESS = "--excess" in sys.argv
if not EXCESS:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_allow_excess_precision=false").strip()

import jax_models  # sets XLA_FLAGS before jax is imported

# isort: split
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

FIXTURES = {
    "mlp_b1": jax_models.mlp,
    "mlp_b128": jax_models.mlp,
    "cnn_b8": jax_models.cnn,
    "encoder": jax_models.encoder,
}


# ---------------------------------------------------------------- bf16-operand matmuls

# call-like primitives whose body is evaluated inline (their derivative rules do not matter here)
CALLS = ("pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
         "custom_vjp_call_jaxpr", "checkpoint", "remat")


def _eval(jaxpr, consts, *args):
    """Evaluates a jaxpr; f32 dot_general / conv_general_dilated get bf16 operands and f32
    accumulation. Call-like primitives (nested jit, custom_jvp functions such as relu and
    gelu) are evaluated recursively."""
    env = {}

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        prim = eqn.primitive
        f32 = all(getattr(x, "dtype", None) == jnp.float32 for x in ins)
        if prim in (lax.dot_general_p, lax.conv_general_dilated_p) and f32:
            params = dict(eqn.params, preferred_element_type=jnp.float32)
            outs = [prim.bind(*[x.astype(jnp.bfloat16) for x in ins], **params)]
        elif prim.name in CALLS:
            inner = next(eqn.params[k] for k in ("jaxpr", "call_jaxpr", "fun_jaxpr") if k in eqn.params)
            if isinstance(inner, jcore.ClosedJaxpr):
                outs = _eval(inner.jaxpr, inner.consts, *ins)
            else:
                outs = _eval(inner, (), *ins)
        else:
            outs = prim.bind(*ins, **eqn.params)
            if not prim.multiple_results:
                outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def bf16_matmuls(fn):
    def wrapped(*args):
        closed = jax.make_jaxpr(fn)(*args)
        return _eval(closed.jaxpr, closed.consts, *args)

    return wrapped


def _errors(ref: np.ndarray, got: np.ndarray) -> dict:
    r = np.asarray(ref, np.float64)
    c = np.asarray(got, np.float64)
    d = np.abs(c - r)
    rmse = float(np.sqrt(np.mean(d * d)))
    rms = float(np.sqrt(np.mean(r * r)))
    return {"max_abs": float(d.max()), "rmse": rmse, "rel_rmse": rmse / rms if rms else 0.0,
            "shape": list(r.shape)}


def jax_bf16(fixtures: Path, out: Path, excess: bool = False) -> None:
    for name, fn in FIXTURES.items():
        src = fixtures / "jax" / name
        meta = json.loads((src / "meta.json").read_text())
        args = [np.load(src / "inputs" / f["file"]) for f in meta["input_files"]]
        ref = jax.jit(fn)(*args)
        got = jax.jit(bf16_matmuls(fn))(*args)
        ref = ref if isinstance(ref, (list, tuple)) else [ref]
        d = out / "jax_bf16" / name
        errs = [_errors(np.asarray(r), np.asarray(g)) for r, g in zip(ref, got)]
        if excess:
            (d / "errors_excess_precision.json").write_text(
                json.dumps({"fixture": name, "xla_flags": "default", "outputs": errs}, indent=1))
            print(f"jax_bf16/{name} (XLA default flags): {errs}")
            continue
        (d / "outputs").mkdir(parents=True)
        for i, g in enumerate(got):
            np.save(d / "outputs" / f"out{i}.npy", np.asarray(g, np.float32))
        (d / "errors.json").write_text(json.dumps(
            {"fixture": name, "xla_flags": "--xla_allow_excess_precision=false", "outputs": errs}, indent=1))
        print(f"jax_bf16/{name}: {errs}")


# ---------------------------------------------------------------- planted divergences

WIDTH = 16384


def _running_sum(p, dt):
    def step(c, v):
        c = c + v
        return c, c

    _, run = lax.scan(step, jnp.zeros((p.shape[0],), dt), p.astype(dt).T)  # PLANT running_sum
    return run.T.astype(jnp.float32)


def softmax_sum_bf16(x, w):
    h = jnp.tanh(x @ w) * 6.0
    e = jnp.exp(h - h.max(-1, keepdims=True))

    def step(c, v):
        return c + v, None

    den, _ = lax.scan(step, jnp.zeros((e.shape[0],), jnp.bfloat16), e.astype(jnp.bfloat16).T)  # PLANT softmax
    p = e / den.astype(jnp.float32)[:, None]
    return p, _running_sum(p, jnp.float32)


def running_sum_bf16(x, w):
    h = jnp.tanh(x @ w) * 6.0
    p = jax.nn.softmax(h, axis=-1)
    return p, _running_sum(p, jnp.bfloat16)


def _f32_truth(x, w):
    h = jnp.tanh(x @ w) * 6.0
    p = jax.nn.softmax(h, axis=-1)
    return p, _running_sum(p, jnp.float32)


def _plant_line(tag: str) -> int:
    lines, _ = inspect.getsourcelines(sys.modules[__name__])
    return next(i + 1 for i, ln in enumerate(lines) if f"# PLANT {tag}" in ln)


def planted(out: Path) -> None:
    rng = np.random.default_rng(20261203)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    w = (rng.standard_normal((64, WIDTH)) / 8.0).astype(np.float32)
    truth = jax.jit(_f32_truth)(x, w)
    for fn, tag in ((softmax_sum_bf16, "softmax"), (running_sum_bf16, "running_sum")):
        d = out / "planted" / fn.__name__
        (d / "inputs").mkdir(parents=True)
        (d / "expected").mkdir()
        text = jax.jit(fn).lower(x, w).as_text(debug_info=True)
        (d / "model.mlir").write_text(text)
        np.save(d / "inputs" / "arg0.npy", x)
        np.save(d / "inputs" / "arg1.npy", w)
        for i, t in enumerate(truth):
            np.save(d / "expected" / f"out{i}.npy", np.asarray(t, np.float32))
        got = jax.jit(fn)(x, w)
        meta = {
            "function": fn.__name__,
            "planted": tag,
            "planted_location": f"{Path(__file__).name}:{_plant_line(tag)}",
            "errors_vs_f32": [_errors(np.asarray(t), np.asarray(g)) for t, g in zip(truth, got)],
        }
        (d / "meta.json").write_text(json.dumps(meta, indent=1))
        print(f"planted/{fn.__name__}: {meta}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixtures", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--excess", action="store_true", help="internal: JAX's numbers under XLA's default flags")
    a = ap.parse_args()
    if a.excess:
        jax_bf16(a.fixtures, a.out, excess=True)
        return 0
    if (a.out / ".done").exists():
        print(f"{a.out}: up to date")
        return 0
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=a.out.name + ".tmp-", dir=a.out.parent))
    try:
        jax_bf16(a.fixtures, tmp)
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        subprocess.run([sys.executable, __file__, "--excess", "--fixtures", str(a.fixtures), "--out", str(tmp)],
                       check=True, env=env)
        planted(tmp)
        (tmp / ".done").write_text("ok\n")
        if a.out.exists():
            shutil.rmtree(a.out)
        os.rename(tmp, a.out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks the pip wheel the way a user meets it (`make test-wheel`).

  wheel_smoke.py install --wheel W --venv DIR --fixtures F
      a fresh venv with nothing else, `pip install W[cpu]`, then `tpuport --version`,
      `python -m tpuport --version`, `doctor`, `audit` and `run` with no environment variable
      beyond PATH and HOME, from a scratch directory (no project .venv in reach). Prints the
      wheel size, the time from `pip install` to the first audit printed, and the binary's
      dynamic dependencies and newest glibc symbol version.
  wheel_smoke.py uninstall --venv DIR
      `pip uninstall tpuport` and checks that nothing of it is left in the venv.

Exit status 0 when every check holds, 1 otherwise (each failure is printed).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

FAILURES = []

# The only shared libraries a manylinux2014 binary may need (PEP 599's list, the ones Rust's std
# and libloading use).
ALLOWED_LIBS = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "libgcc_s.so.1", "ld-linux-x86-64.so.2",
}


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def clean_env(venv_bin, home):
    # What a user has after `pip install`: their PATH (with the venv's bin on it, as if
    # activated only through PATH) and HOME. No TPUPORT_*, no VIRTUAL_ENV.
    return {"PATH": f"{venv_bin}:/usr/bin:/bin", "HOME": home, "NO_COLOR": "1"}


def run(cmd, env, cwd, timeout=600):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def glibc_max(binary):
    out = subprocess.run(["readelf", "-V", "-W", binary], capture_output=True, text=True).stdout
    versions = {tuple(int(x) for x in m.split(".")) for m in re.findall(r"GLIBC_([0-9.]+)", out)}
    return max(versions) if versions else None


def needed(binary):
    out = subprocess.run(["readelf", "-d", "-W", binary], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def install(a):
    wheel = os.path.abspath(a.wheel)
    size = os.path.getsize(wheel)
    print(f"wheel: {os.path.basename(wheel)}, {size / 2**20:.1f} MiB")
    check("manylinux2014_x86_64" in wheel or "manylinux_2_17_x86_64" in wheel,
          "wheel tag is manylinux2014 / manylinux_2_17")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    check(any(n.endswith(".data/scripts/tpuport") for n in names), "wheel carries the binary as a script")
    check("tpuport/__main__.py" in names, "wheel carries python/tpuport/__main__.py")

    shutil.rmtree(a.venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", a.venv], check=True)
    vbin = os.path.abspath(os.path.join(a.venv, "bin"))
    scratch = tempfile.mkdtemp(prefix="tpuport-wheel-")
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    env = clean_env(vbin, home)
    # pip itself may use the user's pip cache: keep the real HOME for the install only.
    pip_env = dict(env, HOME=os.environ.get("HOME", home))

    t0 = time.monotonic()
    p, _ = run([os.path.join(vbin, "python"), "-m", "pip", "install", "-q", f"{wheel}[cpu]"], pip_env, scratch)
    t_pip = time.monotonic() - t0
    check(p.returncode == 0, f"pip install {os.path.basename(wheel)}[cpu] ({t_pip:.1f} s)\n{p.stderr[-2000:]}")
    if p.returncode != 0:
        return
    exe = os.path.join(vbin, "tpuport")

    onnx = os.path.join(a.fixtures, "torch/mobilenet_v2/dynamo.onnx")
    p, dt = run([exe, "audit", onnx, "--batch", "8", "--slice", "v5e-8"], env, scratch)
    t_first = time.monotonic() - t0
    check(p.returncode in (0, 1) and "v5e" in p.stdout, f"tpuport audit (exit {p.returncode}, {dt:.2f} s)\n{p.stderr[-2000:]}")
    print(f"time from `pip install` to the first audit printed: {t_first:.1f} s (pip {t_pip:.1f} s)")

    p, _ = run([exe, "--version"], env, scratch)
    check(p.returncode == 0 and re.match(r"tpuport \S+ \(commit \S+, PJRT C API \d+\.\d+\)", p.stdout),
          f"tpuport --version: {p.stdout.strip()}")
    p, _ = run([os.path.join(vbin, "python"), "-m", "tpuport", "--version"], env, scratch)
    check(p.returncode == 0 and p.stdout.startswith("tpuport "), f"python -m tpuport --version: {p.stdout.strip()}")

    p, _ = run([exe, "--format", "json", "doctor", "--no-python"], env, scratch)
    ok = p.returncode == 0 and '"next to the binary"' in p.stdout and '"devices"' in p.stdout
    check(ok, f"tpuport doctor finds the [cpu] extra's plugin next to the binary (exit {p.returncode})\n{p.stdout[-1500:]}{p.stderr[-1500:]}")

    mlp = os.path.join(a.fixtures, "jax/mlp_b1")
    inputs = sorted(os.listdir(os.path.join(mlp, "inputs")), key=lambda n: int(re.sub(r"\D", "", n)))
    cmd = [exe, "run", os.path.join(mlp, "jit.mlir"), "--out", os.path.join(scratch, "out")]
    for n in inputs:
        cmd += ["--input", os.path.join(mlp, "inputs", n)]
    p, dt = run(cmd, env, scratch)
    check(p.returncode == 0, f"tpuport run on the CPU plugin with no environment variable ({dt:.1f} s)\n{p.stderr[-1500:]}")

    libs = needed(exe)
    check(set(libs) <= ALLOWED_LIBS, f"dynamic dependencies: {', '.join(libs)}")
    g = glibc_max(exe)
    check(g is not None and g <= (2, 17), f"newest glibc symbol version: {'.'.join(map(str, g or ()))}")
    aw = shutil.which("auditwheel", path=os.path.dirname(sys.executable))
    if aw:
        p = subprocess.run([aw, "show", wheel], capture_output=True, text=True)
        print(p.stdout.strip())
    shutil.rmtree(scratch, ignore_errors=True)


def uninstall(a):
    vbin = os.path.join(a.venv, "bin")
    site = subprocess.run([os.path.join(vbin, "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    p = subprocess.run([os.path.join(vbin, "python"), "-m", "pip", "uninstall", "-y", "-q", "tpuport"],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"pip uninstall tpuport\n{p.stderr}")
    left = [os.path.join(vbin, "tpuport")] + [os.path.join(site, n) for n in os.listdir(site) if n.startswith("tpuport")]
    left = [x for x in left if os.path.exists(x)]
    check(not left, "nothing of tpuport left after uninstall" + (f": {left}" if left else ""))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install")
    i.add_argument("--wheel", required=True)
    i.add_argument("--venv", required=True)
    i.add_argument("--fixtures", required=True)
    u = sub.add_parser("uninstall")
    u.add_argument("--venv", required=True)
    a = ap.parse_args()
    if a.cmd == "install":
        a.fixtures = os.path.abspath(a.fixtures)
    install(a) if a.cmd == "install" else uninstall(a)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Install libtpu (PyPI `libtpu`, ~137 MB wheel, ~505 MB unpacked) into a git-ignored folder, for
# `tpuport compile` and the TPU-compiler tests (`make libtpu`; `make test` runs it). libtpu is not
# in scripts/requirements/base.txt: nothing but the TPU checks needs it, and the Python venv must not
# carry it (JAX would try to initialise a TPU backend).
#
#   scripts/tools/libtpu_fetch.sh [VERSION]
#
# Without VERSION: the newest version on PyPI whose library loads (GetPjrtApi answers with PJRT
# API major 0 and a function table tpuport can use); older versions are tried when the newest
# does not load, at most three. With VERSION: exactly that one.
#
# Result: $LIBTPU_ROOT/<VERSION>/libtpu/libtpu.so (LIBTPU_ROOT defaults to <repo>/.cache/libtpu;
# the Makefile points it at ~/.cache/tpuport/libtpu and links .cache/libtpu there, so a CI run on
# the same machine reuses it). Older unpacked versions are removed. Idempotent: an unpacked,
# checked version is kept and nothing is downloaded when it is already the newest (or when PyPI
# cannot be reached). Exit 1 when no libtpu could be installed; the caller decides whether that
# is fatal (`make libtpu` is not: the TPU checks then say so in one line).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST_ROOT="${LIBTPU_ROOT:-$ROOT/.cache/libtpu}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
mkdir -p "$DEST_ROOT"

# Prints "major.minor table_bytes" for a PJRT plugin, or fails.
check_loads() {
  "$PY" - "$1" <<'PYEOF'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
get = lib.GetPjrtApi
get.restype = ctypes.c_void_p
api = get()
if not api:
    sys.exit("GetPjrtApi returned null")
size = ctypes.c_size_t.from_address(api).value
# PJRT_Api: struct_size, extension_start, then PJRT_Api_Version {struct_size,
# extension_start, int major, int minor}.
major = ctypes.c_int.from_address(api + 32).value
minor = ctypes.c_int.from_address(api + 36).value
if major != 0 or size < 64:
    sys.exit(f"PJRT API {major}.{minor}, table {size} bytes: not usable")
print(f"{major}.{minor} {size}")
PYEOF
}

installed() {
  local v
  for v in $(ls "$DEST_ROOT" 2>/dev/null | sort -V -r); do
    if [ -f "$DEST_ROOT/$v/.checked" ] && [ -f "$DEST_ROOT/$v/libtpu/libtpu.so" ]; then
      echo "$v"
      return 0
    fi
  done
  return 1
}

fetch() {
  local version="$1" tmp wheel
  tmp="$(mktemp -d "$DEST_ROOT/.dl.XXXXXX")"
  trap 'rm -rf "$tmp"' RETURN
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_31_x86_64 -d "$tmp" "libtpu==$version" || return 1
  wheel="$(ls "$tmp"/libtpu-*.whl | head -n1)"
  mkdir -p "$tmp/unpack"
  "$PY" - "$wheel" "$tmp/unpack" <<'PYEOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith("libtpu/") and not name.endswith("/"):
            z.extract(name, sys.argv[2])
PYEOF
  local api
  if ! api="$(check_loads "$tmp/unpack/libtpu/libtpu.so" 2>&1)"; then
    echo "libtpu $version does not load: $api" >&2
    return 1
  fi
  echo "$api" > "$tmp/unpack/.checked"
  rm -rf "$DEST_ROOT/$version"
  mv "$tmp/unpack" "$DEST_ROOT/$version"
  echo "libtpu $version installed (PJRT API ${api% *}): $DEST_ROOT/$version/libtpu/libtpu.so" >&2
}

have="$(installed || true)"
if [ $# -ge 1 ]; then
  candidates=("$1")
else
  # Newest first, as PyPI lists them.
  listing="$("$PY" -m pip index versions libtpu 2>/dev/null | sed -n 's/^Available versions: //p' || true)"
  IFS=', ' read -r -a candidates <<< "$listing"
  if [ ${#candidates[@]} -eq 0 ]; then
    if [ -n "$have" ]; then
      echo "$DEST_ROOT/$have/libtpu/libtpu.so"
      exit 0
    fi
    echo "libtpu: PyPI cannot be reached and no libtpu is installed" >&2
    exit 1
  fi
fi

tries=0
for v in "${candidates[@]}"; do
  [ -n "$v" ] || continue
  if [ "$v" = "$have" ]; then
    break
  fi
  tries=$((tries + 1))
  if fetch "$v"; then
    have="$v"
    break
  fi
  if [ $# -ge 1 ] || [ "$tries" -ge 3 ]; then
    break
  fi
done

if [ -z "$have" ] || [ ! -f "$DEST_ROOT/$have/libtpu/libtpu.so" ]; then
  echo "libtpu: no version could be installed" >&2
  exit 1
fi
# Keep only the version in use (each is ~505 MB).
for old in "$DEST_ROOT"/*/; do
  old="${old%/}"
  [ "$(basename "$old")" = "$have" ] || rm -rf "$old"
done
echo "$DEST_ROOT/$have/libtpu/libtpu.so"

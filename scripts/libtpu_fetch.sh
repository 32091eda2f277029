#!/usr/bin/env bash
# Fetch the libtpu wheel (PyPI `libtpu`, ~137 MB download, ~505 MB unpacked) into a git-ignored
# folder so that tpuport-pjrt's libtpu test can load the real plugin. libtpu is NOT part of
# scripts/requirements.txt on purpose: every CI run would pay for it.
#
#   scripts/libtpu_fetch.sh [VERSION]      (default 0.0.52; the PJRT API 0.117 build)
#
# Result: .cache/libtpu/<VERSION>/libtpu/libtpu.so (the test looks there, or at
# $TPUPORT_LIBTPU). Idempotent: does nothing when the library is already unpacked.
set -euo pipefail

VERSION="${1:-0.0.52}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.cache/libtpu/$VERSION"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3

if [ -f "$DEST/libtpu/libtpu.so" ]; then
  echo "$DEST/libtpu/libtpu.so"
  exit 0
fi

TMP="$(mktemp -d "$ROOT/.cache/libtpu-dl.XXXXXX" 2>/dev/null || { mkdir -p "$ROOT/.cache"; mktemp -d "$ROOT/.cache/libtpu-dl.XXXXXX"; })"
trap 'rm -rf "$TMP"' EXIT
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
  --platform manylinux_2_31_x86_64 -d "$TMP" "libtpu==$VERSION"
WHEEL="$(ls "$TMP"/libtpu-*.whl | head -n1)"
mkdir -p "$TMP/unpack"
"$PY" - "$WHEEL" "$TMP/unpack" <<'PYEOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith("libtpu/") and not name.endswith("/"):
            z.extract(name, sys.argv[2])
PYEOF
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST.partial"
mv "$TMP/unpack" "$DEST.partial"
mv "$DEST.partial" "$DEST"
echo "$DEST/libtpu/libtpu.so"

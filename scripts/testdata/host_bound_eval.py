"""Precision and recall of `tpuport profile`'s host-bound finding (PRF101) on the recorded
corpus (scripts/testdata/host_bound_traces.py), per split.

Usage: host_bound_eval.py --tpuport BIN --traces DIR [--split dev|held-out|all]

A trace counts as flagged when PRF101 is reported at warning or error; expected positives are
the traces whose corpus.json entry says `expect: fire`. Prints one line per trace (the
finding's severity, title and location against the expectation) and the figures per split.
"""
import argparse
import json
import subprocess
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpuport", required=True)
    ap.add_argument("--traces", required=True, type=Path)
    ap.add_argument("--split", default="all")
    a = ap.parse_args()
    m = json.loads((a.traces / "manifest.json").read_text())
    splits = {}
    for tid, t in m["traces"].items():
        split = m["scripts"][t["script"]]["split"]
        if a.split not in ("all", split):
            continue
        r = subprocess.run([a.tpuport, "--format", "json", "profile", "--fail-on", "never", str(a.traces / tid)],
                           capture_output=True, text=True, check=True)
        found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "PRF101"]
        bad = [f for f in json.loads(r.stdout)["findings"] if f["severity"] != "info" and f["code"] != "PRF101"]
        flagged = any(f["severity"] in ("warning", "error") for f in found)
        want = t["expect"] == "fire"
        where = ""
        if found and found[0].get("location"):
            loc = found[0]["location"]
            name = Path(loc["file"]).name
            plant = {v: k for k, v in m["plants"].get(name, {}).items()}.get(loc["line"], "?")
            where = f"{name}:{loc['line']} ({plant})"
        s = splits.setdefault(split, {"tp": 0, "fp": 0, "fn": 0, "tn": 0})
        s[{(True, True): "tp", (True, False): "fp", (False, True): "fn", (False, False): "tn"}[(flagged, want)]] += 1
        ok = "ok " if flagged == want else "BAD"
        title = found[0]["title"] if found else "-"
        print(f"{ok} {split:8} {tid:22} want={t['expect']:6} where={t.get('where')!s:6} got: {title} @ {where}"
              + (f"  other: {[f['code'] for f in bad]}" if bad else ""))
    for split, s in splits.items():
        p = s["tp"] / (s["tp"] + s["fp"]) if s["tp"] + s["fp"] else float("nan")
        rc = s["tp"] / (s["tp"] + s["fn"]) if s["tp"] + s["fn"] else float("nan")
        print(f"{split}: precision {p:.2f} recall {rc:.2f} ({s})")


if __name__ == "__main__":
    main()

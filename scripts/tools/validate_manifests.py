"""Validate Kubernetes manifests offline.

Usage: validate_manifests.py --crd-dir DIR [--kubernetes 1.33] FILE.yaml...

Built-in kinds are checked by `kubernetes-validate` (the Kubernetes OpenAPI schemas it ships,
strict: unknown fields are errors). Custom resources (LeaderWorkerSet, JobSet, PodMonitoring)
are checked with `jsonschema` (unknown fields rejected, as strict field validation does) against the schema files in --crd-dir, written from the projects'
published CRDs by scripts/testdata/crd_schema.py (each file's `$comment` says which release). A kind
with neither is an error. Prints one line per document; exit 1 if any fails.
"""

import argparse
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

CRDS = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset-v1.schema.json",
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset-v1alpha2.schema.json",
    ("monitoring.googleapis.com/v1", "PodMonitoring"): "podmonitoring-v1.schema.json",
}


def strict(node):
    """Unknown fields are errors, as with `kubectl apply --validate=strict`: every object schema
    that lists its properties (and does not preserve unknown fields) gets
    `additionalProperties: false`."""
    if isinstance(node, dict):
        for v in node.values():
            strict(v)
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
    elif isinstance(node, list):
        for v in node:
            strict(v)
    return node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crd-dir", required=True)
    ap.add_argument("--kubernetes", default="1.33")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    schemas = {}
    failed = 0
    checked = 0
    for path in a.files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        if not docs:
            print(f"{path}: no document")
            failed += 1
        for doc in docs:
            key = (doc.get("apiVersion"), doc.get("kind"))
            name = doc.get("metadata", {}).get("name")
            checked += 1
            try:
                if key in CRDS:
                    if key not in schemas:
                        with open(os.path.join(a.crd_dir, CRDS[key])) as f:
                            schemas[key] = strict(json.load(f))
                    jsonschema.validate(doc, schemas[key])
                    how = "crd " + CRDS[key]
                else:
                    kubernetes_validate.validate(doc, a.kubernetes, strict=True)
                    how = "kubernetes " + a.kubernetes
                print(f"ok {path}: {key[1]} {name} ({how})")
            except jsonschema.ValidationError as e:
                where = "/".join(str(p) for p in e.absolute_path)
                print(f"FAIL {path}: {key[1]} {name}: {where}: {e.message}")
                failed += 1
            except kubernetes_validate.ValidationError as e:
                where = "/".join(str(p) for p in e.path)
                print(f"FAIL {path}: {key[1]} {name}: {where}: {e.message}")
                failed += 1
            except kubernetes_validate.SchemaNotFoundError as e:
                print(f"FAIL {path}: {key[1]} {name}: no schema: {e}")
                failed += 1
    print(f"{checked} documents, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

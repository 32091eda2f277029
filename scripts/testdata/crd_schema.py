"""Turn a published CustomResourceDefinition into a JSON Schema for offline validation.

Usage: crd_schema.py CRD.yaml VERSION --repo OWNER/NAME --commit SHA --tag TAG --path PATH > OUT.json

Takes `spec.versions[name == VERSION].schema.openAPIV3Schema`, drops the `description` texts
(they do not validate anything and are most of the size), and rewrites the Kubernetes
extensions that plain JSON Schema does not know:
- `x-kubernetes-int-or-string: true` becomes `anyOf: [integer, string]`;
- `x-kubernetes-preserve-unknown-fields` and the rest are left as they are (ignored by jsonschema).
The header (`$comment`) records where the CRD came from.
"""

import argparse
import json
import sys

import yaml


def clean(node):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "description" and isinstance(v, str):
                continue
            out[k] = clean(v)
        if out.get("x-kubernetes-int-or-string") is True:
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return out
    if isinstance(node, list):
        return [clean(v) for v in node]
    return node


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("crd")
    ap.add_argument("version")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--path", required=True)
    a = ap.parse_args()
    with open(a.crd) as f:
        crd = yaml.safe_load(f)
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    versions = [v for v in crd["spec"]["versions"] if v["name"] == a.version]
    if not versions:
        sys.exit(f"{a.crd}: no version {a.version}")
    schema = clean(versions[0]["schema"]["openAPIV3Schema"])
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["$comment"] = (
        f"{kind} {group}/{a.version} from {a.repo} {a.path} at tag {a.tag} "
        f"(commit {a.commit}); descriptions dropped by scripts/testdata/crd_schema.py"
    )
    head = {"$comment": schema.pop("$comment"), "$schema": schema.pop("$schema")}
    json.dump({**head, **schema}, sys.stdout, sort_keys=False, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

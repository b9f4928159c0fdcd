#!/usr/bin/env python3
"""Re-creates the vendored Kubernetes API schemas in this folder (see README.md).

    pip download --no-deps kubernetes-validate==1.37.0 -d /tmp/kv
    (cd /tmp/kv && unzip -q kubernetes_validate-1.37.0-py3-none-any.whl)
    python3 tests/k8s/vendor.py /tmp/kv/kubernetes_validate/kubernetes-json-schema

For each version below it copies job-batch-v1.json and configmap-v1.json as they are, and
writes _definitions.json with only the definitions those two reach ($ref by $ref): the
package's file holds every type of the API (about 2 MB a version); what a Job or a ConfigMap
can contain is unchanged.
"""

import json
import os
import shutil
import sys

VERSIONS = ["v1.29.0", "v1.37.0"]
ROOTS = ["job-batch-v1.json", "configmap-v1.json"]
HERE = os.path.dirname(os.path.abspath(__file__))


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def vendor(src, dst):
    with open(os.path.join(src, "_definitions.json")) as f:
        defs = json.load(f)
    todo = []
    for root in ROOTS:
        with open(os.path.join(src, root)) as f:
            todo.extend(refs(json.load(f)))
    seen = set()
    while todo:
        name = todo.pop().split("#/$defs/", 1)[1]
        if name not in seen:
            seen.add(name)
            todo.extend(refs(defs["$defs"][name]))
    pruned = {k: v for k, v in defs.items() if k != "$defs"}
    pruned["$defs"] = {k: defs["$defs"][k] for k in sorted(seen)}
    os.makedirs(dst, exist_ok=True)
    for root in ROOTS:
        shutil.copyfile(os.path.join(src, root), os.path.join(dst, root))
    with open(os.path.join(dst, "_definitions.json"), "w") as f:
        json.dump(pruned, f, indent=2)
        f.write("\n")
    print(f"{dst}: {len(seen)} definitions")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for version in VERSIONS:
        name = f"{version}-local-strict"
        vendor(os.path.join(sys.argv[1], name), os.path.join(HERE, name))


if __name__ == "__main__":
    main()

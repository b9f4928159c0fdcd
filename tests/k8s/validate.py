#!/usr/bin/env python3
"""Validates a Kubernetes manifest (multi-document YAML) against the vendored API schemas.

    python3 tests/k8s/validate.py MANIFEST.yaml

Every document is checked against the strict schema of its apiVersion and kind (unknown
fields are errors) for every vendored Kubernetes version (the *-local-strict folders beside
this file). Prints the documents as one JSON list on stdout and exits 0; or prints each
error (version, document, path, message) on stderr and exits 1. Needs jsonschema (4.10 or
later: Debian's python3-jsonschema) and PyYAML (python3-yaml).
"""

import glob
import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = {
    ("v1", "ConfigMap"): "configmap-v1.json",
    ("batch/v1", "Job"): "job-batch-v1.json",
}


def load(path):
    with open(path) as f:
        return json.load(f)


def validator(schema, definitions):
    cls = jsonschema.validators.validator_for(schema)
    try:
        # jsonschema 4.18 and later resolve references through a registry.
        from referencing import Registry, Resource

        registry = Registry().with_resource(
            definitions["$id"], Resource.from_contents(definitions)
        )
        return cls(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver.from_schema(
            schema, store={definitions["$id"]: definitions}
        )
        return cls(schema, resolver=resolver)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    versions = sorted(glob.glob(os.path.join(HERE, "v*-local-strict")))
    if not versions:
        sys.exit("no vendored schemas beside " + __file__)
    errors = []
    for folder in versions:
        version = os.path.basename(folder)
        definitions = load(os.path.join(folder, "_definitions.json"))
        for i, doc in enumerate(docs):
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key not in SCHEMAS:
                errors.append(f"document {i}: no vendored schema for {key}")
                continue
            schema = load(os.path.join(folder, SCHEMAS[key]))
            for e in validator(schema, definitions).iter_errors(doc):
                where = "/".join(str(p) for p in e.absolute_path)
                errors.append(f"{version}: document {i} ({key[1]}) at /{where}: {e.message}")
    if errors:
        for e in errors:
            print(e, file=sys.stderr)
        sys.exit(1)
    json.dump(docs, sys.stdout)
    print()
    print(
        f"valid: {len(docs)} documents against {', '.join(os.path.basename(v) for v in versions)}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()

"""Prepares Zulip's OpenAPI description for schemathesis runs against hearth.

Zulip documents each operation's error answers as a `oneOf` of examples
(`CodedError`, `InvalidMessageError`, ...) that share one shape, so a single error
body matches several of them and fails `oneOf` although it is exactly what the
description means. Error responses are made `anyOf` here; nothing else changes.

    python prepare.py zulip-openapi.yaml OUT.json
"""

import json
import sys

import yaml


def loosen(node):
    if isinstance(node, dict):
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        for value in node.values():
            loosen(value)
    elif isinstance(node, list):
        for value in node:
            loosen(value)


def main(src, out):
    with open(src, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    for path in spec.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict):
                continue
            for status, response in operation.get("responses", {}).items():
                if str(status).startswith(("4", "5")):
                    loosen(response)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

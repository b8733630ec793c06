"""Prepares Zulip's OpenAPI description for schemathesis runs against hearth.

The description (Zulip 12.0-dev, feature level 442) is corrected where it disagrees
with itself or with the feature level hearth serves (420), and nowhere else:

- Each operation's error answers are a `oneOf` of examples (`CodedError`,
  `InvalidMessageError`, ...) that share one shape, so one error body matches several
  and fails `oneOf` although it is what the description means: `anyOf` instead.
- `JsonSuccessBase` says every success may carry `ignored_parameters_unsupported`
  (feature level 167), but many operations' closed objects leave it out: it is
  allowed on every closed success object.
- Parameter errors carry `var_name` (`MissingArgumentError`; Zulip's recorded answer
  to a missing `content`), which closed error objects leave out: allowed on every
  closed error object.
- `POST /register` sent the pre-feature-level-89 settings at the top level until
  feature level 439 (for clients without `user_settings_object`); hearth serves 420,
  so those names are allowed on its answer.

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


def open_closed_objects(node):
    """Adds the always-possible fields to closed success and error objects."""
    if isinstance(node, dict):
        props = node.get("properties")
        if node.get("additionalProperties") is False and isinstance(props, dict):
            if "result" in props and "code" in props:
                props.setdefault("var_name", {})
            elif "result" in props:
                props.setdefault("ignored_parameters_unsupported", {})
        for value in node.values():
            open_closed_objects(value)
    elif isinstance(node, list):
        for value in node:
            open_closed_objects(value)


def legacy_register_settings(spec):
    """The user settings `POST /register` had at the top level before 439."""
    register = spec["paths"]["/register"]["post"]
    schema = register["responses"]["200"]["content"]["application/json"]["schema"]
    closed = [s for s in schema.get("allOf", []) if s.get("additionalProperties") is False]
    settings = closed[0]["properties"]["user_settings"]["properties"]
    for part in closed:
        for name in settings:
            part["properties"].setdefault(name, {})


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
    open_closed_objects(spec)
    legacy_register_settings(spec)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

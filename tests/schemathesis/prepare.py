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

Operations Zulip serves but does not describe are added, as Zulip's code defines them
(`zerver/views/storage.py`, `zerver/views/users.py` `patch_bot_backend`), so that they
are generated and checked too: `GET`/`PUT`/`DELETE /bot_storage` and
`PATCH /bots/{bot_id}`.

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


def success(properties=None):
    props = {"result": {}, "msg": {}, "ignored_parameters_unsupported": {}}
    props.update(properties or {})
    return {
        "description": "Success.",
        "content": {"application/json": {"schema": {"allOf": [
            {"$ref": "#/components/schemas/JsonSuccessBase"},
            {"additionalProperties": False, "properties": props},
        ]}}},
    }


def coded_error():
    return {
        "description": "Bad request.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CodedError"}}},
    }


def json_param(name, schema, required=False):
    return {
        "name": name,
        "in": "query",
        "required": required,
        "content": {"application/json": {"schema": schema}},
    }


def form_body(properties, required=(), json_fields=()):
    body = {
        "required": bool(required),
        "content": {"application/x-www-form-urlencoded": {
            "schema": {"type": "object", "properties": properties, "required": list(required)},
            "encoding": {f: {"contentType": "application/json"} for f in json_fields},
        }},
    }
    return body


def hearth_operations(spec):
    """Operations Zulip serves without describing them (see the module's text)."""
    strings = {"type": "object", "additionalProperties": {"type": "string"}}
    keys = {"type": "array", "items": {"type": "string"}}
    spec["paths"]["/bot_storage"] = {
        "get": {
            "operationId": "get-bot-storage",
            "parameters": [json_param("keys", keys)],
            "responses": {"200": success({"storage": strings}), "400": coded_error()},
        },
        "put": {
            "operationId": "update-bot-storage",
            "requestBody": form_body({"storage": strings}, ["storage"], ["storage"]),
            "responses": {"200": success(), "400": coded_error()},
        },
        "delete": {
            "operationId": "remove-bot-storage",
            "parameters": [json_param("keys", keys)],
            "responses": {"200": success(), "400": coded_error()},
        },
    }
    bot = spec["paths"].setdefault("/bots/{bot_id}", {})
    bot["patch"] = {
        "operationId": "update-bot",
        "parameters": [{"name": "bot_id", "in": "path", "required": True,
                        "schema": {"type": "integer"}, "example": 1}],
        "requestBody": form_body(
            {
                "full_name": {"type": "string"},
                "service_payload_url": {"type": "string", "example": "https://bots.example/"},
                "service_interface": {"type": "integer", "enum": [1, 2]},
            },
            json_fields=["service_payload_url", "service_interface"],
        ),
        "responses": {
            "200": success({
                "full_name": {"type": "string"},
                "avatar_url": {"type": "string"},
                "service_interface": {"type": "integer"},
                "service_payload_url": {"type": ["string", "null"]},
                "config_data": {"type": ["object", "null"]},
                "default_sending_stream": {"type": ["string", "null"]},
                "default_events_register_stream": {"type": ["string", "null"]},
                "default_all_public_streams": {"type": "boolean"},
                "bot_owner": {"type": "string"},
            }),
            "400": coded_error(),
        },
    }


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
    hearth_operations(spec)
    open_closed_objects(spec)
    legacy_register_settings(spec)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

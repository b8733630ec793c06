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

Zulip's description leaves out the incoming webhooks too (`/external/<integration>`).
Each integration hearth serves is added as an operation of its own: the body any JSON
shaped like its smallest example or anything at all (and, for `slack_incoming`, a
form too), the service's event header from the event
names it sends, and `stream`, `topic`, `only_events`, `exclude_events`. Its examples
are the payloads of `tests/fixtures/webhooks/<integration>/`, so the examples phase
posts what the services send and the fuzzing phase what they never would. The
answers are only held to Zulip's common shape (`result`, `msg`, an optional `code`):
a success, or a refusal with its status and extra fields.

The resumable uploads (`/tus`, tus 1.0) are added as well, but for `PATCH`, with only
their statuses described: the protocol answers with headers and plain text.

    python prepare.py zulip-openapi.yaml OUT.json [WEBHOOK_FIXTURES_DIR]
"""

import json
import os
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


# The event header of each integration that has one, and the events it may name.
EVENT_HEADERS = {
    "github": ("X-GitHub-Event", ["issue_comment", "issues", "ping", "pull_request", "push"]),
    "gitlab": ("X-Gitlab-Event", [
        "Issue Hook", "Merge Request Hook", "Note Hook", "Pipeline Hook", "Push Hook",
        "Tag Push Hook",
    ]),
    "gitea": ("X-Gitea-Event", ["issue_comment", "pull_request", "push"]),
    "forgejo": ("X-Forgejo-Event", ["issue_comment", "pull_request", "push"]),
}

# Integrations without fixtures of their own that read another's payloads.
FIXTURES_OF = {"forgejo": "gitea", "json": "github"}

INTEGRATIONS = [
    "json", "slack_incoming", "github", "gitlab", "gitea", "forgejo", "alertmanager",
    "grafana", "sentry", "jira", "uptimerobot",
]


def any_answer(description):
    """Zulip's common answer shape: `result`, `msg`, and `code` on refusals."""
    return {
        "description": description,
        "content": {"application/json": {"schema": {
            "type": "object",
            "required": ["result", "msg"],
            "properties": {
                "result": {"type": "string", "enum": ["success", "error"]},
                "msg": {"type": "string"},
                "code": {"type": "string"},
            },
        }}},
    }


def fixture_examples(folder):
    """The folder's JSON payloads, as named examples."""
    examples = {}
    if not folder or not os.path.isdir(folder):
        return examples
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            examples[name[:-5]] = {"value": json.load(f)}
    return examples


def shape_of(value, depth=0):
    """A schema of the example's shape (its keys, required, and value types), so that
    fuzzed bodies reach past the first check of an integration's parser."""
    if depth >= 4:
        return {}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {k: shape_of(v, depth + 1) for k, v in value.items()},
            "required": list(value),
        }
    if isinstance(value, list):
        return {"type": "array", "items": shape_of(value[0], depth + 1) if value else {},
                "maxItems": 3}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    return {"type": "null"}


def webhook_operations(spec, fixtures):
    """`POST /external/<integration>` for each integration (see the module's text)."""
    events_param = {"type": "array", "items": {"type": "string"}}
    for name in INTEGRATIONS:
        folder = os.path.join(fixtures, FIXTURES_OF.get(name, name)) if fixtures else None
        examples = fixture_examples(folder)
        parameters = [
            {"name": "stream", "in": "query", "schema": {"type": "string"}, "example": "Verona"},
            {"name": "topic", "in": "query", "schema": {"type": "string"}, "example": "builds"},
            json_param("only_events", events_param),
            json_param("exclude_events", events_param),
        ]
        header = EVENT_HEADERS.get(name)
        if header:
            values = header[1]
            parameters.append({
                "name": header[0], "in": "header", "required": True,
                "schema": {"type": "string", "enum": values}, "example": values[0],
            })
        media = {"schema": {}}
        if examples:
            # Shaped like the smallest example, or anything at all.
            smallest = min(examples.values(), key=lambda e: len(json.dumps(e["value"])))
            media = {"schema": {"anyOf": [shape_of(smallest["value"]), {}]},
                     "examples": examples}
        content = {"application/json": media}
        if name == "slack_incoming":
            content["application/x-www-form-urlencoded"] = {"schema": {
                "type": "object", "properties": {"payload": {"type": "string"}},
            }}
        spec["paths"][f"/external/{name}"] = {"post": {
            "operationId": f"external-{name.replace('_', '-')}",
            "parameters": parameters,
            "requestBody": {"required": True, "content": content},
            "responses": {
                "200": any_answer("Posted, or an event the integration ignores."),
                "400": any_answer("A refused request."),
            },
        }}


def tus_operations(spec):
    """`/tus`, the resumable uploads (tus 1.0), which Zulip serves through tusd. Its
    answers are the protocol's (empty or plain text), so only their statuses are
    described. `PATCH` is left out: its body's media type
    (`application/offset+octet-stream`) is one schemathesis cannot send; the upload
    tests (`tests/api/uploads.rs`) cover it."""
    def bare(*statuses):
        return {str(s): {"description": "The protocol's answer."} for s in statuses}
    resumable = {"name": "Tus-Resumable", "in": "header", "required": True,
                 "schema": {"type": "string", "enum": ["1.0.0"]}, "example": "1.0.0"}
    upload_id = {"name": "upload_id", "in": "path", "required": True,
                 "schema": {"type": "string"}, "example": "0123456789abcdef"}
    spec["paths"]["/tus"] = {
        "options": {"operationId": "tus-capabilities", "responses": bare(204)},
        "post": {
            "operationId": "tus-create-upload",
            "parameters": [
                resumable,
                {"name": "Upload-Length", "in": "header", "required": True,
                 "schema": {"type": "integer", "minimum": 0}, "example": 5},
                {"name": "Upload-Metadata", "in": "header",
                 "schema": {"type": "string"}, "example": "filename aGkudHh0,filetype dGV4dC9wbGFpbg=="},
            ],
            "responses": bare(201, 400, 401, 411, 412, 413),
        },
    }
    spec["paths"]["/tus/{upload_id}"] = {
        "head": {"operationId": "tus-upload-offset", "parameters": [resumable, upload_id],
                 "responses": bare(200, 404, 412)},
        "delete": {"operationId": "tus-terminate-upload", "parameters": [resumable, upload_id],
                   "responses": bare(204, 404, 412)},
    }


def main(src, out, fixtures=None):
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
    webhook_operations(spec, fixtures)
    tus_operations(spec)
    open_closed_objects(spec)
    legacy_register_settings(spec)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])

//! Every field Zulip's description lists is served: the `/register` answer for each
//! `fetch_event_types` value and for the parameter sets of the real clients, and every
//! event hearth sends, checked against the description itself
//! (`tests/schemathesis/zulip-openapi.yaml`), so a field added there fails here until
//! it is served.
//!
//! What must be present is read from the description's own words:
//!
//! - `/register`: each top-level field says `Present if `X` is present in
//!   `fetch_event_types``; a field with a further condition ("and the realm is a demo
//!   organization") is checked only when present. The few fields that state no
//!   condition are in `UNSTATED`.
//! - Objects: the schema's `required` list where it has one; else every property, except
//!   those whose description makes them conditional ("Only present if ...", "Present
//!   only if ...", "Not present for clients that ..."). The conditions the description
//!   states in a fixed form (a field's value, a client capability, the changed
//!   property, "If the status is `"failed"`") are evaluated; the others make the
//!   field optional.
//! - A field new at a feature level above the one the server advertises is not asked.
//!
//! Present fields must have the described JSON type, nullability and enum values,
//! through `$ref`, `allOf`, `oneOf` and `anyOf`. One field whose type changed at a
//! feature level above the server's is checked against its type before the change, as
//! the description's note on it says (`TYPE_BEFORE`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use crate::common::*;
use base64::Engine;
use hearth::hub::HEARTBEAT_MS;
use hearth::realm::ManualClock;
use regex::Regex;
use serde_json::{json, Map, Value};

/// The description, as JSON.
fn description() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/zulip-openapi.yaml");
    let text = std::fs::read_to_string(&path).expect("the OpenAPI description");
    yaml_serde::from_str(&text).expect("the description parses")
}

/// `/register` fields whose description names no `fetch_event_types` condition, with
/// the type that brings them (Zulip's `fetch_initial_state_data`); `""`: always.
const UNSTATED: [(&str, &str); 12] = [
    ("queue_id", ""),
    ("last_event_id", ""),
    ("zulip_feature_level", ""),
    ("zulip_version", ""),
    ("zulip_merge_base", ""),
    ("drafts", "drafts"),
    ("max_reminder_note_length", "realm"),
    ("max_bulk_new_subscription_messages", "realm"),
    ("unread_msgs", "update_message_flags+message"),
    ("receives_typing_notifications", "-"),
    ("result", ""),
    ("msg", ""),
];

/// Fields whose type changed at a feature level above the server's, the description
/// giving only the new type and the old one in a note ("Prior to Zulip 12.0 (feature
/// level 450), the integer value was expressed as a string"): the field and the level
/// of the change. Below it the field is an integer written as a string, as hearth
/// (at feature level 420) and Zulip before 450 send it; at or above it, an integer.
const TYPE_BEFORE: [(&str, u64); 1] = [("push_device.push_account_id", 450)];

/// Where a check happens: the description, the server's feature level, and the
/// registering client's capabilities.
struct Checker {
    spec: Value,
    level: u64,
    capabilities: Map<String, Value>,
    conditional: Regex,
    new_in: Regex,
    value_is: Regex,
    property_was: Regex,
    for_clients: Regex,
    if_value: Regex,
    typed_before: Regex,
}

impl Checker {
    fn new(level: u64, capabilities: Value) -> Checker {
        Checker {
            spec: description(),
            level,
            capabilities: capabilities.as_object().cloned().unwrap_or_default(),
            conditional: Regex::new(
                r"(?i)(only present|present only|not present|present if|included only|only included|only sent|was requested|sole discretion|if the user is a bot|if the user isn't a bot)",
            )
            .unwrap(),
            new_in: Regex::new(r"New in Zulip [0-9.]+ \(feature level (\d+)\)").unwrap(),
            value_is: Regex::new(
                r#"(?:Only present|Present only) if (?:the specified )?`(\w+)` is `"?(\w+)"?`\.?\s*$"#,
            )
            .unwrap(),
            property_was: Regex::new(
                r"(?:Only present|Present only) if the (?:changed property was|setting to be changed is) `(\w+)`\.?\s*$",
            )
            .unwrap(),
            for_clients: Regex::new(
                r"(Only present|Not present) for clients that (do not )?support the `(\w+)`",
            )
            .unwrap(),
            if_value: Regex::new(r#"^If the (\w+) is `"?(\w+)"?`,"#).unwrap(),
            typed_before: Regex::new(
                r"Prior to Zulip [0-9.]+ \(feature level (\d+)\),\s+the integer value was expressed\s+as a string",
            )
            .unwrap(),
        }
    }

    fn resolve<'a>(&'a self, node: &'a Value) -> &'a Value {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                let pointer = r.strip_prefix('#').expect("a local reference");
                self.resolve(self.spec.pointer(pointer).expect("the reference exists"))
            }
            None => node,
        }
    }

    /// The description of a property (through `$ref` and `allOf`).
    fn describe(&self, node: &Value) -> String {
        let node = self.resolve(node);
        let mut text = node["description"].as_str().unwrap_or_default().to_owned();
        for part in node["allOf"].as_array().into_iter().flatten() {
            text.push('\n');
            text.push_str(&self.describe(part));
        }
        text
    }

    /// The feature level that introduced a property, if its description says.
    fn new_at(&self, text: &str) -> Option<u64> {
        self.new_in.captures(text).and_then(|c| c[1].parse().ok())
    }

    /// Whether `value` at `at` has the type it had before a change the description
    /// states only in a note: the field is in `TYPE_BEFORE`, the server's feature level
    /// is below the level of the change, the description's note names that same level,
    /// and the value is an integer written as a string.
    fn typed_as_before(&self, schema: &Value, value: &Value, at: &str) -> bool {
        let Some((_, changed_at)) = TYPE_BEFORE.iter().find(|(field, _)| *field == at) else {
            return false;
        };
        let noted = self
            .typed_before
            .captures(&self.describe(schema))
            .and_then(|c| c[1].parse::<u64>().ok());
        self.level < *changed_at
            && noted == Some(*changed_at)
            && value.as_str().is_some_and(|s| s.parse::<i64>().is_ok())
    }

    /// Whether `name` (described by `text`) must be in `object`.
    fn must_have(&self, text: &str, object: &Map<String, Value>) -> bool {
        if self.new_at(text).is_some_and(|l| l > self.level) {
            return false;
        }
        // "If the status is `"failed"`, ...": a field that comes with one value of
        // another field of the object (`push_device`'s `error_code`).
        if let Some(c) = self.if_value.captures(text.trim_start()) {
            return object.get(&c[1]).is_some_and(|v| as_text(v) == c[2]);
        }
        if !self.conditional.is_match(text) {
            return true;
        }
        let first = text
            .split("\n\n")
            .map(str::trim)
            .find(|p| self.conditional.is_match(p))
            .unwrap_or_default()
            .replace('\n', " ");
        // A condition on a field of the same object: required when it holds.
        for sentence in first.split_inclusive(". ") {
            if let Some(c) = self.value_is.captures(sentence.trim()) {
                return object.get(&c[1]).is_some_and(|v| as_text(v) == c[2]);
            }
            if let Some(c) = self.property_was.captures(sentence.trim()) {
                return object.get("property").and_then(Value::as_str) == Some(&c[1]);
            }
        }
        if let Some(c) = self.for_clients.captures(&first) {
            let declared = self
                .capabilities
                .get(&c[3])
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let present_when_declared = (&c[1] == "Only present") != c.get(2).is_some();
            return declared == present_when_declared;
        }
        false
    }

    /// Every way `value` at `at` departs from `schema`.
    fn check(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        if value.is_null() && schema["nullable"] == true {
            return;
        }
        // An object described in `allOf` parts is checked as one object, each property
        // with everything the parts say of it; the other parts one by one.
        let mut object_parts = false;
        for part in schema["allOf"].as_array().into_iter().flatten() {
            let part = self.resolve(part);
            if part.get("properties").is_some() || part.get("allOf").is_some() {
                object_parts = true;
            } else {
                self.check(part, value, at, errors);
            }
        }
        if object_parts {
            if let Some(object) = value.as_object() {
                self.check_object(&self.flatten(schema), object, at, errors);
            }
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(choices) = schema[key].as_array() {
                let mut best: Option<Vec<String>> = None;
                for choice in choices {
                    let mut e = Vec::new();
                    self.check(choice, value, at, &mut e);
                    if best.as_ref().is_none_or(|b| e.len() < b.len()) {
                        best = Some(e);
                    }
                }
                errors.extend(best.unwrap_or_default());
            }
        }
        if let Some(ty) = schema["type"].as_str() {
            let fits = match ty {
                "string" => value.is_string(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => true,
            };
            if !fits && !self.typed_as_before(schema, value, at) {
                errors.push(format!("{at}: {value} is not of type {ty}"));
                return;
            }
        }
        if let Some(choices) = schema["enum"].as_array() {
            let fits = choices
                .iter()
                .any(|c| c == value || c.as_str().is_some_and(|c| as_text(value) == c));
            // "This will be `""` for users who ..." beside an enum that lists no "".
            let empty_described = value == "" && self.describe(schema).contains("`\"\"`");
            if !fits && !value.is_null() && !empty_described {
                errors.push(format!("{at}: {value} is not one of {choices:?}"));
            }
        }
        if let Some(items) = value.as_array() {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate().take(40) {
                    self.check(item_schema, item, &format!("{at}[{i}]"), errors);
                }
            }
        }
        if let Some(object) = value.as_object() {
            self.check_object(schema, object, at, errors);
        }
    }

    fn check_object(
        &self,
        schema: &Value,
        object: &Map<String, Value>,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let properties = schema["properties"].as_object();
        let required: Option<BTreeSet<&str>> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect());
        for (name, prop) in properties.into_iter().flatten() {
            let prop_schema = self.resolve(prop);
            // `{}`: a placeholder that names a property of another `allOf` part.
            if prop_schema.as_object().is_some_and(|o| o.is_empty()) {
                continue;
            }
            match object.get(name) {
                Some(v) => self.check(prop, v, &format!("{at}.{name}"), errors),
                None => {
                    let text = self.describe(prop);
                    let needed = match &required {
                        Some(r) => {
                            r.contains(name.as_str())
                                && self.new_at(&text).is_none_or(|l| l <= self.level)
                        }
                        None => self.must_have(&text, object),
                    };
                    if needed {
                        errors.push(format!("{at}.{name}: missing"));
                    }
                }
            }
        }
        if let Some(extra) = schema.get("additionalProperties").filter(|a| a.is_object()) {
            for (k, v) in object {
                if properties.is_some_and(|p| p.contains_key(k)) {
                    continue;
                }
                self.check(extra, v, &format!("{at}.{k}"), errors);
            }
        }
    }

    /// The `/register` response's properties.
    fn register_properties(&self) -> &Map<String, Value> {
        let schema = self
            .spec
            .pointer("/paths/~1register/post/responses/200/content/application~1json/schema/allOf/1/properties")
            .expect("the register response");
        schema.as_object().expect("properties")
    }

    /// The fetch type that brings each `/register` field, `None` when its description
    /// adds a condition beyond it (checked only when present).
    fn register_fields(&self) -> BTreeMap<String, Option<String>> {
        let present_if =
            Regex::new(r"Present if `(\w+)` is present in\s+`fetch_event_types`(.?)").unwrap();
        let unstated: BTreeMap<&str, &str> = UNSTATED.into_iter().collect();
        let mut out = BTreeMap::new();
        for (name, prop) in self.register_properties() {
            let text = self.describe(prop);
            if name == "ignored_parameters_unsupported" {
                continue;
            }
            if self.new_at(&text).is_some_and(|l| l > self.level) {
                continue;
            }
            let kind = match present_if.captures(&text) {
                Some(c) if &c[2] == "." => Some(c[1].to_owned()),
                Some(_) => None,
                None => match unstated.get(name.as_str()) {
                    Some(k) => Some((*k).to_owned()),
                    // The `realm_can_*_group` settings, described by their `$ref`.
                    None if name.starts_with("realm_") => Some("realm".to_owned()),
                    None => panic!("no fetch type known for /register field {name}"),
                },
            };
            out.insert(name.clone(), kind);
        }
        out
    }

    /// Every way a `/register` answer fetched for `fetch` departs from the description.
    fn check_register(&self, fetch: Option<&BTreeSet<String>>, body: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        let props = self.register_properties();
        let fetched = |kind: &str| {
            kind.is_empty() || kind.split('+').all(|k| fetch.is_none_or(|f| f.contains(k)))
        };
        for (name, kind) in self.register_fields() {
            match body.get(&name) {
                Some(v) => self.check(&props[&name], v, &name, &mut errors),
                None => {
                    if kind.as_deref().is_some_and(|k| k != "-" && fetched(k)) {
                        errors.push(format!("{name}: missing"));
                    }
                }
            }
        }
        errors
    }

    /// The event schemas by `type` (and `op` where the description splits by it).
    fn event_schemas(&self) -> Vec<(String, Option<String>, Value)> {
        let choices = self
            .spec
            .pointer("/paths/~1events/get/responses/200/content/application~1json/schema/allOf/1/properties/events/items/oneOf")
            .and_then(Value::as_array)
            .expect("the event schemas");
        let mut out = Vec::new();
        for choice in choices {
            let merged = self.flatten(choice);
            let props = &merged["properties"];
            let enum_of = |p: &Value| -> Option<String> {
                let mut found = None;
                let p = self.resolve(p);
                for part in p["allOf"].as_array().into_iter().flatten().chain([p]) {
                    if let Some(e) = self.resolve(part)["enum"].as_array() {
                        found = e.first().and_then(Value::as_str).map(str::to_owned);
                    }
                }
                found
            };
            let ty = enum_of(&props["type"]).expect("an event type");
            let op = props.get("op").and_then(enum_of);
            out.push((ty, op, merged));
        }
        out
    }

    /// An object schema with its `allOf` parts merged (properties and required).
    fn flatten(&self, schema: &Value) -> Value {
        let schema = self.resolve(schema);
        let mut props = Map::new();
        let mut required = Vec::new();
        for part in schema["allOf"].as_array().into_iter().flatten() {
            let part = self.flatten(part);
            for (k, v) in part["properties"].as_object().into_iter().flatten() {
                merge_property(&mut props, k, v);
            }
            required.extend(part["required"].as_array().cloned().unwrap_or_default());
        }
        for (k, v) in schema["properties"].as_object().into_iter().flatten() {
            merge_property(&mut props, k, v);
        }
        required.extend(schema["required"].as_array().cloned().unwrap_or_default());
        let mut out = json!({"type": "object", "properties": props});
        if !required.is_empty() {
            out["required"] = required.into();
        }
        out
    }

    /// Every way an event departs from its description (the closest of its schemas).
    fn check_event(
        &self,
        schemas: &[(String, Option<String>, Value)],
        event: &Value,
    ) -> Vec<String> {
        let ty = event["type"].as_str().unwrap_or_default();
        let op = event.get("op").and_then(Value::as_str);
        let at = match op {
            Some(op) => format!("{ty}/{op}"),
            None => ty.to_owned(),
        };
        let candidates: Vec<&Value> = schemas
            .iter()
            .filter(|(t, o, _)| t == ty && (o.is_none() || o.as_deref() == op))
            .map(|(_, _, s)| s)
            .collect();
        if candidates.is_empty() {
            return vec![format!("{at}: not in the description")];
        }
        let mut best: Option<Vec<String>> = None;
        for schema in candidates {
            let mut e = Vec::new();
            self.check(schema, event, &at, &mut e);
            if PARTIAL.contains(&ty) {
                // Its fields are checked where present, never wanted.
                e.retain(|err| !err.ends_with(": missing"));
            }
            if best.as_ref().is_none_or(|b| e.len() < b.len()) {
                best = Some(e);
            }
        }
        best.unwrap_or_default()
    }
}

/// A value as the description's text writes it: strings bare, the rest as JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A property restated by a later `allOf` part (`{}` or `{"nullable": true}`) keeps
/// what the earlier part said of it, the later keys added.
fn merge_property(props: &mut Map<String, Value>, name: &str, later: &Value) {
    match (props.get_mut(name), later.as_object()) {
        (Some(Value::Object(earlier)), Some(more)) if !earlier.contains_key("$ref") => {
            for (k, v) in more {
                earlier.insert(k.clone(), v.clone());
            }
        }
        (Some(earlier @ Value::Object(_)), Some(more)) => {
            let mut merged = json!({"allOf": [earlier.clone()]});
            for (k, v) in more {
                merged[k] = v.clone();
            }
            *earlier = merged;
        }
        _ => {
            props.insert(name.to_owned(), later.clone());
        }
    }
}

/// The mobile app's capabilities (zulip-flutter, `lib/api/route/events.dart`).
const MOBILE_CAPABILITIES: &str = r#"{"notification_settings_null": true, "bulk_message_deletion": true, "user_avatar_url_field_optional": true, "stream_typing_notifications": true, "user_settings_object": true, "include_deactivated_groups": true, "empty_topic_name": true, "user_list_incomplete": true}"#;

/// The `/register` parameters of each real client.
fn client_parameter_sets() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    vec![
        // `zulip.Client.register()` and `call_on_each_message` (zulip 0.9.1).
        ("python", vec![]),
        ("python messages", vec![("event_types", r#"["message"]"#)]),
        // `zulip-js` `queues.register({event_types: ["message"]})`.
        ("zulip-js", vec![("event_types", r#"["message"]"#)]),
        // zulip-term 0.7.0 (`model.py`).
        (
            "zulip-term",
            vec![
                (
                    "event_types",
                    r#"["message","update_message","reaction","subscription","typing","update_message_flags","update_global_notifications","update_display_settings","user_settings","realm_emoji"]"#,
                ),
                (
                    "fetch_event_types",
                    r#"["realm","presence","subscription","message","starred_messages","update_message_flags","muted_topics","realm_user","realm_user_groups","update_global_notifications","update_display_settings","user_settings","realm_emoji","zulip_version"]"#,
                ),
                ("client_gravatar", "true"),
                ("apply_markdown", "true"),
                ("include_subscribers", "true"),
                (
                    "client_capabilities",
                    r#"{"notification_settings_null": true, "bulk_message_deletion": true, "user_avatar_url_field_optional": true}"#,
                ),
            ],
        ),
        // zulip-flutter (`lib/api/route/events.dart`, `registerQueue`).
        (
            "mobile",
            vec![
                ("apply_markdown", "true"),
                ("client_gravatar", "false"),
                ("slim_presence", "true"),
                ("idle_queue_timeout", "1209600"),
                ("client_capabilities", MOBILE_CAPABILITIES),
            ],
        ),
    ]
}

fn fetch_set(params: &[(&str, &str)]) -> Option<BTreeSet<String>> {
    let find = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    find("fetch_event_types")
        .or_else(|| find("event_types"))
        .map(|v| serde_json::from_str(v).expect("a JSON list"))
}

fn capabilities_of(params: &[(&str, &str)]) -> Value {
    params
        .iter()
        .find(|(n, _)| *n == "client_capabilities")
        .map(|(_, v)| serde_json::from_str(v).expect("JSON"))
        .unwrap_or_else(|| json!({}))
}

fn report(errors: &BTreeSet<String>) -> String {
    errors.iter().cloned().collect::<Vec<_>>().join("\n")
}

#[actix_web::test]
async fn register_serves_every_described_field() {
    let app = TestApp::spawn().await;
    // Some state behind the lists: a direct message each way and a channel message.
    app.ok(
        "POST",
        "/api/v1/messages",
        HAMLET,
        &[
            ("type", "direct"),
            ("to", &format!("[{IAGO_ID}]")),
            ("content", "hi"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/messages",
        IAGO,
        &[
            ("type", "direct"),
            ("to", &format!("[{HAMLET_ID}]")),
            ("content", "hello"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/messages",
        IAGO,
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", ""),
            ("content", "@**King Hamlet** hi"),
        ],
    )
    .await;
    let level = 420;
    let mut errors = BTreeSet::new();
    let fields = Checker::new(level, json!({})).register_fields();
    let kinds: BTreeSet<String> = fields
        .values()
        .flatten()
        .flat_map(|k| k.split('+').map(str::to_owned))
        .filter(|k| !k.is_empty() && k != "-")
        .collect();
    let caps = [
        json!({}),
        serde_json::from_str(MOBILE_CAPABILITIES).unwrap(),
    ];
    for capabilities in &caps {
        let checker = Checker::new(level, capabilities.clone());
        let cap_text = capabilities.to_string();
        for kind in &kinds {
            let mut fetch: BTreeSet<String> = kind.split('+').map(str::to_owned).collect();
            if kind == "update_message_flags" {
                fetch.insert("message".into());
            }
            let list = serde_json::to_string(&fetch).unwrap();
            let body = app
                .ok(
                    "POST",
                    "/api/v1/register",
                    HAMLET,
                    &[
                        ("fetch_event_types", &list),
                        ("client_capabilities", &cap_text),
                    ],
                )
                .await;
            for e in checker.check_register(Some(&fetch), &body) {
                errors.insert(format!("[{kind}] {e}"));
            }
        }
    }
    for (client, params) in client_parameter_sets() {
        let checker = Checker::new(level, capabilities_of(&params));
        for who in [HAMLET, IAGO, POLONIUS] {
            let body = app.ok("POST", "/api/v1/register", who, &params).await;
            assert_eq!(body["zulip_feature_level"], level);
            for e in checker.check_register(fetch_set(&params).as_ref(), &body) {
                errors.insert(format!("[{client}] {e}"));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "/register departs from the description:\n{}",
        report(&errors)
    );
}

/// The event types hearth sends, each triggered below; `heartbeat` and `push_device`
/// need a manual clock and a push relay, and have a test of their own
/// (`heartbeat_and_push_device_events_carry_their_described_fields`).
const SENT: &[&str] = &[
    "alert_words",
    "attachment",
    "channel_folder",
    "custom_profile_fields",
    "default_streams",
    "delete_message",
    "drafts",
    "invites_changed",
    "message",
    "muted_topics",
    "muted_users",
    "navigation_view",
    "presence",
    "reaction",
    "realm",
    "realm_bot",
    "realm_emoji",
    "realm_export",
    "realm_export_consent",
    "realm_linkifiers",
    "realm_playgrounds",
    "realm_user",
    "realm_user_settings_defaults",
    "saved_snippets",
    "scheduled_messages",
    "stream",
    "subscription",
    "typing",
    "typing_edit_message",
    "update_message",
    "update_message_flags",
    "user_group",
    "user_settings",
    "user_status",
    "user_topic",
];

/// Event types whose fields are the ones that changed, as Zulip sends them, though the
/// description lists no `required` for them: `user_status` carries only what the update
/// passed (Zulip's `do_update_user_status`).
const PARTIAL: &[&str] = &["user_status"];

/// Legacy event types hearth still sends to queues that ask for them, no longer in the
/// description (removed at feature level 439, above hearth's).
const UNDESCRIBED: [&str; 2] = ["update_display_settings", "update_global_notifications"];

#[actix_web::test]
async fn every_event_carries_its_described_fields() {
    let app = TestApp::spawn().await;
    let level = 420;
    let plain = json!({});
    let mobile: Value = serde_json::from_str(MOBILE_CAPABILITIES).unwrap();
    let linkifiers = json!({"linkifier_url_template": true});
    // `muted_topics` goes only to queues that did not ask for `user_topic`.
    let legacy_topics = app
        .register(HAMLET, &[("event_types", r#"["muted_topics"]"#)])
        .await;
    let mut queues = Vec::new();
    for (who, caps) in [
        (IAGO, &plain),
        (IAGO, &mobile),
        (HAMLET, &mobile),
        (HAMLET, &plain),
        (HAMLET, &linkifiers),
    ] {
        let cap_text = caps.to_string();
        let q = app
            .register(
                who,
                &[
                    ("client_capabilities", &cap_text),
                    ("apply_markdown", "true"),
                ],
            )
            .await;
        queues.push((who, caps.clone(), q));
    }
    let verona = app.stream_id("Verona").await;
    let to_iago = format!("[{IAGO_ID}]");
    let send = |who: &'static str, params: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            app.ok("POST", "/api/v1/messages", who, &p).await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let s = |v: &str| v.to_owned();
    let m1 = send(
        HAMLET,
        vec![
            ("type", s("stream")),
            ("to", s("Verona")),
            ("topic", s("")),
            ("content", s("@**Iago** first")),
        ],
    )
    .await;
    let m2 = send(
        HAMLET,
        vec![
            ("type", s("direct")),
            ("to", to_iago.clone()),
            ("content", s("a direct message")),
        ],
    )
    .await;
    let m3 = send(
        IAGO,
        vec![
            ("type", s("stream")),
            ("to", s("Verona")),
            ("topic", s("plans")),
            ("content", s("third")),
        ],
    )
    .await;
    let ids = format!("[{m1},{m2}]");
    for (op, flag) in [
        ("add", "read"),
        ("remove", "read"),
        ("add", "starred"),
        ("remove", "starred"),
    ] {
        app.ok(
            "POST",
            "/api/v1/messages/flags",
            IAGO,
            &[("messages", &ids), ("op", op), ("flag", flag)],
        )
        .await;
        app.ok(
            "POST",
            "/api/v1/messages/flags",
            HAMLET,
            &[("messages", &ids), ("op", op), ("flag", flag)],
        )
        .await;
    }
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{m1}"),
        HAMLET,
        &[("content", "edited")],
    )
    .await;
    app.ok(
        "PATCH",
        &format!("/api/v1/messages/{m3}"),
        IAGO,
        &[("topic", "moved"), ("propagate_mode", "change_all")],
    )
    .await;
    app.ok(
        "POST",
        &format!("/api/v1/messages/{m1}/reactions"),
        IAGO,
        &[("emoji_name", "smile")],
    )
    .await;
    app.ok(
        "DELETE",
        &format!("/api/v1/messages/{m1}/reactions"),
        IAGO,
        &[("emoji_name", "smile")],
    )
    .await;
    app.ok("DELETE", &format!("/api/v1/messages/{m3}"), IAGO, &[])
        .await;
    app.ok(
        "POST",
        "/api/v1/typing",
        HAMLET,
        &[("op", "start"), ("to", &to_iago)],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/typing",
        HAMLET,
        &[
            ("op", "stop"),
            ("type", "stream"),
            ("stream_id", &verona.to_string()),
            ("topic", "plans"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", r#"[{"name": "fresh"}]"#),
            ("principals", &format!("[{IAGO_ID},{HAMLET_ID}]")),
        ],
    )
    .await;
    let fresh = app.stream_id("fresh").await;
    app.ok(
        "PATCH",
        &format!("/api/v1/streams/{fresh}"),
        IAGO,
        &[("description", "new words")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions/properties",
        HAMLET,
        &[(
            "subscription_data",
            &format!(r#"[{{"stream_id": {fresh}, "property": "pin_to_top", "value": true}}]"#),
        )],
    )
    .await;
    app.ok(
        "DELETE",
        "/api/v1/users/me/subscriptions",
        HAMLET,
        &[("subscriptions", r#"["fresh"]"#)],
    )
    .await;
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("default_language", "de")],
    )
    .await;
    app.ok(
        "PATCH",
        "/api/v1/realm",
        IAGO,
        &[("description", "a realm")],
    )
    .await;
    app.ok(
        "PATCH",
        "/api/v1/realm/user_settings_defaults",
        IAGO,
        &[("enter_sends", "true")],
    )
    .await;
    let group = app
        .ok(
            "POST",
            "/api/v1/user_groups/create",
            IAGO,
            &[
                ("name", "crew"),
                ("description", "d"),
                ("members", &format!("[{IAGO_ID}]")),
            ],
        )
        .await["group_id"]
        .as_i64()
        .unwrap();
    app.ok(
        "POST",
        &format!("/api/v1/user_groups/{group}/members"),
        IAGO,
        &[("add", &format!("[{HAMLET_ID}]"))],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/alert_words",
        HAMLET,
        &[("alert_words", r#"["tea"]"#)],
    )
    .await;
    app.ok(
        "POST",
        &format!("/api/v1/users/me/muted_users/{OTHELLO_ID}"),
        HAMLET,
        &[],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/user_topics",
        HAMLET,
        &[
            ("stream_id", &verona.to_string()),
            ("topic", "plans"),
            ("visibility_policy", "1"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/status",
        HAMLET,
        &[("status_text", "out")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/realm/profile_fields",
        IAGO,
        &[("name", "Team"), ("field_type", "1")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/realm/filters",
        IAGO,
        &[
            ("pattern", "#(?P<id>[0-9]+)"),
            ("url_template", "https://example.com/{id}"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/realm/playgrounds",
        IAGO,
        &[
            ("name", "Py"),
            ("pygments_language", "Python"),
            ("url_template", "https://p.example/?c={code}"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/drafts",
        HAMLET,
        &[(
            "drafts",
            r#"[{"type": "", "to": [], "topic": "", "content": "draft", "timestamp": 1800000000}]"#,
        )],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/saved_snippets",
        HAMLET,
        &[("title", "hi"), ("content", "hello")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/scheduled_messages",
        HAMLET,
        &[
            ("type", "stream"),
            ("to", &verona.to_string()),
            ("topic", "later"),
            ("content", "soon"),
            ("scheduled_delivery_timestamp", "4000000000"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/users/me/presence",
        HAMLET,
        &[("status", "active")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/default_streams",
        IAGO,
        &[("stream_id", &fresh.to_string())],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/channel_folders/create",
        IAGO,
        &[("name", "Work"), ("description", "")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/navigation_views",
        HAMLET,
        &[
            ("fragment", "narrow/is/alerted"),
            ("is_pinned", "true"),
            ("name", "Alerts"),
        ],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/bots",
        IAGO,
        &[("full_name", "Helper"), ("short_name", "helper")],
    )
    .await;
    app.create_user("newcomer@zulip.com", "abcd1234", "Newcomer")
        .await;
    let key = app.api_key(HAMLET).await;
    let upload = app
        .request(
            reqwest::Method::POST,
            "/api/v1/user_uploads",
            Auth::Basic(HAMLET, &key),
        )
        .multipart(reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(b"text".to_vec()).file_name("a.txt"),
        ));
    assert_eq!(send_req(upload).await, 200);
    let iago_key = app.api_key(IAGO).await;
    let emoji = app
        .request(
            reqwest::Method::POST,
            "/api/v1/realm/emoji/complete_emoji",
            Auth::Basic(IAGO, &iago_key),
        )
        .multipart(reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(png()).file_name("e.png"),
        ));
    assert_eq!(send_req(emoji).await, 200);
    app.ok("POST", "/api/v1/export/realm", IAGO, &[]).await;

    app.ok(
        "POST",
        "/api/v1/invites",
        IAGO,
        &[
            ("invitee_emails", "guest@example.com"),
            ("stream_ids", "[]"),
        ],
    )
    .await;
    app.ok(
        "POST",
        &format!("/api/v1/messages/{m2}/typing"),
        HAMLET,
        &[("op", "start")],
    )
    .await;
    app.ok(
        "PATCH",
        "/api/v1/settings",
        HAMLET,
        &[("allow_private_data_export", "true")],
    )
    .await;
    queues.push((HAMLET, json!({}), legacy_topics));

    let schemas = Checker::new(level, json!({})).event_schemas();
    let mut errors = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for (who, caps, queue) in &queues {
        let checker = Checker::new(level, caps.clone());
        for event in app.events(who, queue).await {
            let ty = event["type"].as_str().unwrap_or_default().to_owned();
            seen.insert(ty.clone());
            if UNDESCRIBED.contains(&ty.as_str()) {
                continue;
            }
            for e in checker.check_event(&schemas, &event) {
                errors.insert(e);
            }
        }
    }
    for missed in SENT.iter().filter(|t| !seen.contains(**t)) {
        errors.insert(format!("{missed}: not triggered"));
    }
    assert!(
        errors.is_empty(),
        "events depart from the description:\n{}",
        report(&errors)
    );
}

/// `heartbeat`, which a parked poll answers after a minute without events (the clock
/// is moved by hand), and `push_device` in each of its statuses, from a registration
/// the loopback push relay accepts and one it refuses; with the `push_devices` of
/// `/register` that they update.
#[actix_web::test]
async fn heartbeat_and_push_device_events_carry_their_described_fields() {
    let (url, relay, _relay) = start_relay();
    let app = TestApp::spawn_configured_with_clock(ManualClock::new(START_MS), move |c| {
        c.push_relay_url = Some(url.clone())
    })
    .await;
    let level = 420;
    let mobile: Value = serde_json::from_str(MOBILE_CAPABILITIES).unwrap();
    let schemas = Checker::new(level, json!({})).event_schemas();
    let checker = Checker::new(level, mobile.clone());
    let mut errors = BTreeSet::new();
    let mut seen = BTreeSet::new();

    // A poll parked on a queue with nothing in it hears a heartbeat a minute later.
    let cap_text = mobile.to_string();
    let params = [("client_capabilities", cap_text.as_str())];
    let quiet = app.register(IAGO, &params).await;
    let key = app.api_key(IAGO).await;
    let long_poll = app
        .request(
            reqwest::Method::GET,
            "/api/v1/events",
            Auth::Basic(IAGO, &key),
        )
        .query(&[("queue_id", quiet.as_str()), ("last_event_id", "-1")]);
    let answer = tokio::spawn(async move { send(long_poll).await });
    let hub = app.server().hub("localhost").unwrap();
    poll(Duration::from_secs(10), "a parked poll", || {
        let parked = hub.parked_polls() > 0;
        async move { parked.then_some(()) }
    })
    .await;
    app.clock().advance_ms(HEARTBEAT_MS);
    app.tick();
    let (status, _, body) = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .expect("the heartbeat within the poll")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let heartbeats = body["events"].as_array().unwrap();
    assert_eq!(heartbeats.len(), 1, "{body}");

    // Registrations: one the relay accepts (pending, then active), one it refuses
    // (pending, then failed with its code).
    let queue = app.register(HAMLET, &params).await;
    let push_key =
        base64::engine::general_purpose::STANDARD.encode([[0x31].as_slice(), &[7; 32]].concat());
    let register_device = |account: &'static str| {
        let app = &app;
        let push_key = push_key.clone();
        async move {
            let params = [
                ("token_kind", "fcm"),
                ("push_account_id", account),
                ("push_key", push_key.as_str()),
                ("bouncer_public_key", "bouncer-public-key"),
                (
                    "encrypted_push_registration",
                    "encrypted-push-registration-data",
                ),
            ];
            app.ok("POST", "/api/v1/mobile_push/register", HAMLET, &params)
                .await;
        }
    };
    let devices = || {
        let app = &app;
        async move {
            let fetch = r#"["push_device"]"#;
            app.ok(
                "POST",
                "/api/v1/register",
                HAMLET,
                &[("fetch_event_types", fetch)],
            )
            .await
        }
    };
    register_device("111222").await;
    poll(Duration::from_secs(20), "an active device", || async {
        let body = devices().await;
        (body["push_devices"]["111222"]["status"] == "active").then_some(())
    })
    .await;
    relay.lock().unwrap().register = vec![(
        400,
        json!({"result": "error", "code": "INVALID_BOUNCER_PUBLIC_KEY", "msg": "Invalid bouncer_public_key"}),
    )];
    register_device("333444").await;
    let registered = poll(Duration::from_secs(20), "a failed device", || async {
        let body = devices().await;
        (body["push_devices"]["333444"]["status"] == "failed").then_some(body)
    })
    .await;
    let fetch: BTreeSet<String> = ["push_device".to_owned()].into();
    for e in checker.check_register(Some(&fetch), &registered) {
        errors.insert(format!("[push_device] {e}"));
    }

    let events = app.events(HAMLET, &queue).await;
    let pushed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "push_device")
        .collect();
    let statuses: Vec<(&Value, &Value)> = pushed
        .iter()
        .map(|e| (&e["push_account_id"], &e["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            (&json!("111222"), &json!("pending")),
            (&json!("111222"), &json!("active")),
            (&json!("333444"), &json!("pending")),
            (&json!("333444"), &json!("failed")),
        ]
    );
    for event in heartbeats.iter().chain(pushed.iter().copied()) {
        seen.insert(event["type"].as_str().unwrap().to_owned());
        for e in checker.check_event(&schemas, event) {
            errors.insert(e);
        }
    }
    assert_eq!(seen, ["heartbeat", "push_device"].map(str::to_owned).into());
    assert!(
        errors.is_empty(),
        "events depart from the description:\n{}",
        report(&errors)
    );

    // The exception is narrow: the string form is the one before feature level 450,
    // an integer after it, and a failure without its code is still caught.
    let failed = pushed[3];
    let at_450 = Checker::new(450, mobile.clone()).check_event(&schemas, failed);
    assert_eq!(
        at_450,
        [r#"push_device.push_account_id: "333444" is not of type integer"#]
    );
    let mut not_a_number = failed.clone();
    not_a_number["push_account_id"] = json!("abc");
    assert_eq!(
        checker.check_event(&schemas, &not_a_number),
        [r#"push_device.push_account_id: "abc" is not of type integer"#]
    );
    let mut without_code = failed.clone();
    without_code.as_object_mut().unwrap().remove("error_code");
    assert_eq!(
        checker.check_event(&schemas, &without_code),
        ["push_device.error_code: missing"]
    );
}

async fn send_req(rb: reqwest::RequestBuilder) -> u16 {
    send(rb).await.0.as_u16()
}

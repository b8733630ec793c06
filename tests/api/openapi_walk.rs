//! Every operation of Zulip's OpenAPI description (feature level 464,
//! `tests/schemathesis/zulip-openapi.yaml`) is served, except the documentation-only
//! paths and the push bouncer's own registration (`NOT_SERVED`).
//!
//! `every_operation_is_in_the_route_table` compares the description with the route
//! table. `every_operation_answers_a_valid_call` walks the description on a running
//! development realm: each operation gets the description's own example for every
//! required parameter, with each path id naming a real object of the realm (a message,
//! a channel, a group, a draft, ... made first), as the owner. No answer may be 405,
//! the unknown-path 404, or a server error. The reads go first, then the writes, then
//! the deletions, and the caller's own deactivation is left to a user of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::*;
use reqwest::Method;
use serde_json::Value;

/// The operations hearth does not serve: documentation pages that only describe a
/// payload (`/real-time`, `/rest-error-handling`, `/zulip-outgoing-webhook`) and the
/// push bouncer's endpoint, which a Zulip server calls on the bouncer, not on itself.
const NOT_SERVED: [(&str, &str); 4] = [
    ("POST", "/real-time"),
    ("POST", "/rest-error-handling"),
    ("POST", "/zulip-outgoing-webhook"),
    ("POST", "/remotes/push/e2ee/register"),
];

const OWNER: &str = "desdemona@zulip.com";

/// The description, as JSON.
fn description() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/zulip-openapi.yaml");
    let text = std::fs::read_to_string(&path).expect("the OpenAPI description");
    yaml_serde::from_str(&text).expect("the description parses")
}

/// `{"$ref": "#/components/..."}` followed to what it names.
fn resolve<'a>(spec: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r.strip_prefix('#').expect("a local reference");
            resolve(spec, spec.pointer(pointer).expect("the reference exists"))
        }
        None => node,
    }
}

/// One operation: method, path, and its required non-path parameters with the
/// description's examples.
struct Operation {
    method: String,
    path: String,
    params: Vec<(String, String)>,
}

/// An example as a parameter value: strings as they are, the rest as JSON.
fn as_param(example: &Value) -> String {
    match example {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn operations(spec: &Value) -> Vec<Operation> {
    let mut ops = Vec::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let method = method.to_uppercase();
            if !["GET", "POST", "PATCH", "PUT", "DELETE"].contains(&method.as_str()) {
                continue;
            }
            let mut params = Vec::new();
            for p in op["parameters"].as_array().into_iter().flatten() {
                let p = resolve(spec, p);
                if p["in"] != "path" && p["required"] == true {
                    let example = p
                        .get("example")
                        .or_else(|| p.pointer("/content/application~1json/example"))
                        .or_else(|| p.pointer("/schema/example"));
                    if let Some(example) = example {
                        params.push((p["name"].as_str().unwrap().to_owned(), as_param(example)));
                    }
                }
            }
            if let Some(body) = op.get("requestBody") {
                let body = resolve(spec, body);
                if let Some(schema) =
                    body.pointer("/content/application~1x-www-form-urlencoded/schema")
                {
                    let schema = resolve(spec, schema);
                    let required: BTreeSet<&str> = schema["required"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                        let prop = resolve(spec, prop);
                        if !required.contains(name.as_str()) {
                            continue;
                        }
                        if let Some(example) = prop.get("example") {
                            params.push((name.clone(), as_param(example)));
                        }
                    }
                }
            }
            ops.push(Operation {
                method,
                path: path.clone(),
                params,
            });
        }
    }
    ops
}

fn served(op: &Operation) -> bool {
    let key = (op.method.as_str(), op.path.as_str());
    !NOT_SERVED.contains(&key)
}

/// `{name}` segments as `{}`, as the route table writes them.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut in_braces = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_braces = true;
                out.push_str("{}");
            }
            '}' => in_braces = false,
            _ if in_braces => {}
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn every_operation_is_in_the_route_table() {
    let spec = description();
    let table: BTreeSet<(String, String)> = route_table()
        .into_iter()
        .map(|(m, p)| (m, shape(p.strip_prefix("/api/v1").unwrap_or(&p))))
        .collect();
    let ops = operations(&spec);
    assert!(
        ops.len() >= 142,
        "{} operations in the description",
        ops.len()
    );
    let missing: Vec<String> = ops
        .iter()
        .filter(|op| served(op))
        .filter(|op| !table.contains(&(op.method.clone(), shape(&op.path))))
        .map(|op| format!("{} {}", op.method, op.path))
        .collect();
    assert!(
        missing.is_empty(),
        "operations of the description hearth does not serve: {missing:#?}"
    );
    for (method, path) in NOT_SERVED.iter() {
        assert!(
            ops.iter()
                .any(|op| op.method == *method && op.path == *path),
            "{method} {path} is not in the description any more"
        );
    }
}

/// A request's status and JSON body (`Null` when the body is not JSON: a file).
async fn call(
    app: &TestApp,
    email: &str,
    method: &str,
    path: &str,
    params: &[(String, String)],
) -> (u16, Value) {
    let key = app.api_key(email).await;
    let method = Method::from_bytes(method.as_bytes()).unwrap();
    let rb = app.request(
        method.clone(),
        &format!("/api/v1{path}"),
        Auth::Basic(email, &key),
    );
    let rb = if method == Method::GET {
        rb.query(params)
    } else {
        rb.form(params)
    };
    let resp = rb.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.expect("body read");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// `POST` as the owner, asserting a success; its body.
async fn made(app: &TestApp, path: &str, params: &[(&str, &str)]) -> Value {
    let owned: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let (status, body) = call(app, OWNER, "POST", path, &owned).await;
    assert_eq!(status, 200, "POST {path}: {body}");
    body
}

/// The realm's objects that path ids name, made or found first.
async fn path_values(app: &TestApp) -> BTreeMap<&'static str, String> {
    let mut v = BTreeMap::new();
    let message = send_stream(app, OWNER, "Verona", "walk", "the walk's message").await;
    v.insert("message_id", message.to_string());
    v.insert("stream_id", app.stream_id("Verona").await.to_string());
    let hamlet = app.user_id("hamlet@zulip.com").await;
    v.insert("user_id", hamlet.to_string());
    v.insert("muted_user_id", hamlet.to_string());
    v.insert("user_id_or_email", "hamlet@zulip.com".into());
    v.insert("email", "hamlet@zulip.com".into());
    v.insert(
        "bot_id",
        app.user_id("default-bot@zulip.com").await.to_string(),
    );
    v.insert("emoji_name", "green_tick".into());
    v.insert("fragment", "inbox".into());

    let key = app.api_key(OWNER).await;
    let part = reqwest::multipart::Part::bytes(b"walk".to_vec())
        .file_name("walk.txt")
        .mime_str("text/plain")
        .unwrap();
    let (_, _, upload) = send(
        app.request(
            Method::POST,
            "/api/v1/user_uploads",
            Auth::Basic(OWNER, &key),
        )
        .multipart(reqwest::multipart::Form::new().part("file", part)),
    )
    .await;
    let url = upload["url"].as_str().expect("an upload url");
    let rest = url
        .strip_prefix("/user_uploads/")
        .expect("/user_uploads/...");
    let (realm, filename) = rest.split_once('/').unwrap();
    v.insert("realm_id_str", realm.to_owned());
    v.insert("filename", filename.to_owned());
    // The upload becomes an attachment once a message links it.
    send_stream(app, OWNER, "Verona", "walk", &format!("[walk.txt]({url})")).await;
    let (_, attachments) = call(app, OWNER, "GET", "/attachments", &[]).await;
    v.insert(
        "attachment_id",
        attachments["attachments"][0]["id"].to_string(),
    );

    let (_, folders) = call(app, OWNER, "GET", "/channel_folders", &[]).await;
    v.insert(
        "channel_folder_id",
        folders["channel_folders"][0]["id"].to_string(),
    );
    let (_, linkifiers) = call(app, OWNER, "GET", "/realm/linkifiers", &[]).await;
    v.insert("filter_id", linkifiers["linkifiers"][0]["id"].to_string());
    let (_, groups) = call(app, OWNER, "GET", "/user_groups", &[]).await;
    let group = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["is_system_group"] == false)
        .map(|g| g["id"].to_string());
    let group = match group {
        Some(id) => id,
        None => made(
            app,
            "/user_groups/create",
            &[
                ("name", "walkers"),
                ("description", "walk"),
                ("members", &format!("[{hamlet}]")),
            ],
        )
        .await["group_id"]
            .to_string(),
    };
    v.insert("user_group_id", group);

    let in_a_day = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400)
        .to_string();
    let verona = v["stream_id"].clone();
    let scheduled = made(
        app,
        "/scheduled_messages",
        &[
            ("type", "stream"),
            ("to", &verona),
            ("topic", "walk"),
            ("content", "later"),
            ("scheduled_delivery_timestamp", &in_a_day),
        ],
    )
    .await;
    v.insert(
        "scheduled_message_id",
        scheduled["scheduled_message_id"].to_string(),
    );
    let reminder = made(
        app,
        "/reminders",
        &[
            ("message_id", &message.to_string()),
            ("scheduled_delivery_timestamp", &in_a_day),
        ],
    )
    .await;
    v.insert("reminder_id", reminder["reminder_id"].to_string());
    let drafts = made(
        app,
        "/drafts",
        &[(
            "drafts",
            &format!(r#"[{{"type":"stream","to":[{verona}],"topic":"walk","content":"draft","timestamp":1700000000}}]"#),
        )],
    )
    .await;
    v.insert("draft_id", drafts["ids"][0].to_string());
    let snippet = made(
        app,
        "/saved_snippets",
        &[("title", "walk"), ("content", "snippet")],
    )
    .await;
    v.insert("saved_snippet_id", snippet["saved_snippet_id"].to_string());
    let playground = made(
        app,
        "/realm/playgrounds",
        &[
            ("name", "Walk"),
            ("pygments_language", "Python"),
            ("url_template", "https://python.example/?code={code}"),
        ],
    )
    .await;
    v.insert("playground_id", playground["id"].to_string());
    let multiuse = made(
        app,
        "/invites/multiuse",
        &[("invite_expires_in_minutes", "60")],
    )
    .await;
    let link = multiuse["invite_link"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (_, invites) = call(app, OWNER, "GET", "/invites", &[]).await;
    let invite = invites["invites"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["is_multiuse"] == true || link.ends_with(i["link_url"].as_str().unwrap_or("-")))
        .map(|i| i["id"].to_string())
        .unwrap_or_else(|| panic!("the multiuse invitation in {invites}"));
    v.insert("invite_id", invite);
    v
}

/// Reads first, then writes, then deletions; within each, the description's order.
fn rank(op: &Operation) -> u8 {
    match op.method.as_str() {
        "GET" => 0,
        "DELETE" => 2,
        _ => 1,
    }
}

#[actix_web::test]
async fn every_operation_answers_a_valid_call() {
    let spec = description();
    let app = TestApp::spawn().await;
    let values = path_values(&app).await;
    // The caller's own deactivation (`DELETE /users/me`) is a user of its own.
    let leaver = "walk-leaver@zulip.com";
    app.create_user(leaver, "a long enough password", "Leaver")
        .await;

    let mut ops: Vec<Operation> = operations(&spec).into_iter().filter(served).collect();
    ops.sort_by_key(rank);
    let mut answers: BTreeMap<String, (u16, String)> = BTreeMap::new();
    let mut wrong = Vec::new();
    for op in &ops {
        let mut path = op.path.clone();
        while let Some(start) = path.find('{') {
            let end = path[start..].find('}').unwrap() + start;
            let name = &path[start + 1..end];
            let value = values
                .get(name)
                .unwrap_or_else(|| panic!("no object for {{{name}}} in {} {}", op.method, op.path));
            path.replace_range(start..=end, value);
        }
        let caller = if op.method == "DELETE" && op.path == "/users/me" {
            leaver
        } else {
            OWNER
        };
        let (status, body) = call(&app, caller, &op.method, &path, &op.params).await;
        let what = format!("{} {}", op.method, op.path);
        let unknown_path = status == 404 && body["msg"] == "Not Found";
        if status == 405 || unknown_path || status >= 500 {
            wrong.push(format!("{what} ({path}): {status} {body}"));
        }
        answers.insert(
            what,
            (status, body["msg"].as_str().unwrap_or("").to_owned()),
        );
    }
    let succeeded = answers.values().filter(|(s, _)| *s < 300).count();
    eprintln!(
        "{} operations walked: {succeeded} succeeded, {} refused the description's examples",
        answers.len(),
        answers.len() - succeeded
    );
    for (what, (status, msg)) in answers.iter().filter(|(_, (s, _))| *s >= 300) {
        eprintln!("  {what}: {status} {msg}");
    }
    assert!(wrong.is_empty(), "operations not served: {wrong:#?}");
    assert_eq!(answers.len(), ops.len());
}

//! Custom profile fields (seed 4.3, 2.3, 2.6): create, list, update, delete, reorder,
//! users' values (`PATCH`/`DELETE /users/me/profile_data`), `profile_data` in user
//! objects, `custom_profile_fields` in `/register`, events, restarts. Texts and check
//! order are Zulip's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const FIELDS: &str = "/api/v1/realm/profile_fields";
const DATA: &str = "/api/v1/users/me/profile_data";

async fn fields(app: &TestApp) -> Vec<Value> {
    let body = app.ok("GET", FIELDS, MEMBER, &[]).await;
    body["custom_fields"]
        .as_array()
        .expect("custom_fields")
        .clone()
}

async fn create(app: &TestApp, params: &[(&str, &str)]) -> i64 {
    app.ok("POST", FIELDS, ADMIN, params).await["id"]
        .as_i64()
        .expect("id")
}

async fn profile_data(app: &TestApp, email: &str) -> Value {
    app.ok("GET", "/api/v1/users/me", email, &[]).await["profile_data"].clone()
}

fn set(id: i64, value: Value) -> String {
    json!([{"id": id, "value": value}]).to_string()
}

#[actix_web::test]
async fn the_dev_realm_fields_as_zulip_lists_them() {
    let app = TestApp::spawn().await;
    let list = fields(&app).await;
    assert_eq!(list.len(), 9);
    assert_eq!(
        list[3],
        json!({"id": 4, "name": "Favorite editor", "type": 3, "hint": "", "field_data": "{\"0\":{\"text\":\"Vim\",\"order\":\"1\"},\"1\":{\"text\":\"Emacs\",\"order\":\"2\"}}", "order": 4, "required": false, "editable_by_user": true})
    );
    // As recorded from Zulip's development server (11e-get-profile-fields.json).
    let summary: Vec<(i64, &str, i64, i64)> = list
        .iter()
        .map(|f| {
            assert_eq!(f["required"], false);
            assert_eq!(f["editable_by_user"], true);
            (
                f["id"].as_i64().unwrap(),
                f["name"].as_str().unwrap(),
                f["type"].as_i64().unwrap(),
                f["order"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (1, "Phone number", 1, 1),
            (2, "Biography", 2, 2),
            (3, "Favorite food", 1, 3),
            (4, "Favorite editor", 3, 4),
            (5, "Birthday", 4, 5),
            (6, "Favorite website", 5, 6),
            (7, "Mentor", 6, 7),
            (8, "GitHub username", 7, 8),
            (9, "Pronouns", 8, 9),
        ]
    );
    assert_eq!(list[7]["field_data"], "{\"subtype\":\"github\"}");
    assert_eq!(list[1]["hint"], "What are you known for?");
    // Everyone may list them.
    app.ok("GET", FIELDS, GUEST, &[]).await;
}

#[actix_web::test]
async fn create_rules_in_zulips_order() {
    let app = TestApp::spawn().await;
    for who in [MEMBER, GUEST, BOT] {
        app.err(
            "POST",
            FIELDS,
            who,
            &[],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            "Must be an organization administrator",
        )
        .await;
    }
    let bad = |p: &'static [(&'static str, &'static str)], msg: &'static str| (p, msg);
    let cases = [
        bad(&[("name", "x")], "Missing 'field_type' argument"),
        bad(
            &[("name", "x"), ("field_type", "one")],
            "field_type is not valid JSON",
        ),
        bad(
            &[("name", "x"), ("field_type", "\"1\"")],
            "field_type is not an integer",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "1"),
                ("display_in_profile_summary", "yes"),
            ],
            "display_in_profile_summary is not valid JSON",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "1"),
                ("editable_by_user", "1"),
            ],
            "editable_by_user is not a boolean",
        ),
        bad(
            &[("name", "x"), ("field_type", "3"), ("field_data", "[]")],
            "field_data is not a dict",
        ),
        bad(
            &[("name", "Bad type"), ("field_type", "99")],
            "Invalid field type.",
        ),
        bad(
            &[("name", "  "), ("field_type", "99")],
            "Label cannot be blank.",
        ),
        bad(
            &[("name", "Phone number"), ("field_type", "1")],
            "A field with that label already exists.",
        ),
        bad(
            &[
                ("name", "0123456789012345678901234567890123456789X"),
                ("field_type", "1"),
            ],
            "name is too long (limit: 40 characters)",
        ),
        bad(
            &[("name", "x"), ("field_type", "3")],
            "Field must have at least one choice.",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "3"),
                ("field_data", r#"{"a": {"text": "A"}}"#),
            ],
            "order key is missing from field_data",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "3"),
                (
                    "field_data",
                    r#"{"a": {"text": "A", "order": "1", "x": "y"}}"#,
                ),
            ],
            "Unexpected arguments: x",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "3"),
                ("field_data", r#"{" ": {"text": "A", "order": "1"}}"#),
            ],
            "'value' cannot be blank.",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "3"),
                (
                    "field_data",
                    r#"{"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}}"#,
                ),
            ],
            "Field must not have duplicate choices.",
        ),
        bad(
            &[
                ("field_type", "7"),
                ("field_data", r#"{"subtype": "myspace"}"#),
            ],
            "Invalid external account type",
        ),
        bad(
            &[("field_type", "7"), ("field_data", r#"{}"#)],
            "subtype key is missing from field_data",
        ),
        bad(
            &[
                ("name", "x"),
                ("field_type", "7"),
                (
                    "field_data",
                    r#"{"subtype": "custom", "url_pattern": "https://x.com/"}"#,
                ),
            ],
            "URL pattern must contain '%(username)s'.",
        ),
        bad(
            &[
                ("field_type", "7"),
                ("field_data", r#"{"subtype": "github"}"#),
            ],
            "A field with that label already exists.",
        ),
        bad(
            &[
                ("name", "Bio 2"),
                ("field_type", "2"),
                ("display_in_profile_summary", "true"),
            ],
            "Field type not supported for display in profile summary.",
        ),
        bad(
            &[
                ("name", "Who"),
                ("field_type", "6"),
                ("display_in_profile_summary", "true"),
            ],
            "Field type not supported for display in profile summary.",
        ),
    ];
    for (params, msg) in cases {
        let code = if msg.starts_with("Missing") {
            "REQUEST_VARIABLE_MISSING"
        } else {
            "BAD_REQUEST"
        };
        app.err("POST", FIELDS, ADMIN, params, 400, code, msg).await;
    }
    let hint = "h".repeat(81);
    app.err(
        "POST",
        FIELDS,
        ADMIN,
        &[("name", "x"), ("hint", &hint), ("field_type", "1")],
        400,
        "BAD_REQUEST",
        "hint is too long (limit: 80 characters)",
    )
    .await;
    assert_eq!(fields(&app).await.len(), 9, "nothing was created");

    // Recording 11: the next id, `order` = id.
    let id = create(
        &app,
        &[
            ("name", "Oracle field"),
            ("hint", "Reference field"),
            ("field_type", "1"),
        ],
    )
    .await;
    assert_eq!(id, 10);
    let choice = create(
        &app,
        &[
            ("name", " Pet "),
            ("field_type", "3"),
            (
                "field_data",
                r#"{"cat": {"text": "Cat", "order": "1"}, "dog": {"text": "Dog", "order": "2"}}"#,
            ),
            ("required", "true"),
            ("editable_by_user", "false"),
        ],
    )
    .await;
    let gitlab = create(
        &app,
        &[
            ("name", "ignored"),
            ("hint", "ignored"),
            ("field_type", "7"),
            ("field_data", r#"{"subtype": "gitlab"}"#),
        ],
    )
    .await;
    let custom = create(
        &app,
        &[
            ("name", "Forge"),
            ("field_type", "7"),
            (
                "field_data",
                r#"{"subtype": "custom", "url_pattern": "https://forge.example.com/%(username)s"}"#,
            ),
        ],
    )
    .await;
    let list = fields(&app).await;
    assert_eq!(
        list[9],
        json!({"id": 10, "name": "Oracle field", "type": 1, "hint": "Reference field", "field_data": "", "order": 10, "required": false, "editable_by_user": true})
    );
    let pet = &list[10];
    assert_eq!(
        (pet["id"].as_i64(), pet["name"].as_str()),
        (Some(choice), Some("Pet"))
    );
    assert_eq!(
        pet["field_data"],
        r#"{"cat":{"text":"Cat","order":"1"},"dog":{"text":"Dog","order":"2"}}"#
    );
    assert_eq!(
        (pet["required"].as_bool(), pet["editable_by_user"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(
        list[11],
        json!({"id": gitlab, "name": "GitLab username", "type": 7, "hint": "", "field_data": "{\"subtype\":\"gitlab\"}", "order": gitlab, "required": false, "editable_by_user": true})
    );
    assert_eq!(
        list[12]["field_data"],
        r#"{"subtype":"custom","url_pattern":"https://forge.example.com/%(username)s"}"#
    );
    assert_eq!(list[12]["id"].as_i64(), Some(custom));
}

#[actix_web::test]
async fn at_most_two_in_the_summary() {
    let app = TestApp::spawn().await;
    let a = create(
        &app,
        &[
            ("name", "A"),
            ("field_type", "1"),
            ("display_in_profile_summary", "true"),
        ],
    )
    .await;
    let b = create(
        &app,
        &[
            ("name", "B"),
            ("field_type", "8"),
            ("display_in_profile_summary", "true"),
        ],
    )
    .await;
    let only_two = "Only 2 custom profile fields can be displayed in the profile summary.";
    app.err(
        "POST",
        FIELDS,
        ADMIN,
        &[
            ("name", "C"),
            ("field_type", "1"),
            ("display_in_profile_summary", "true"),
        ],
        400,
        "BAD_REQUEST",
        only_two,
    )
    .await;
    // The limit is checked first, before the field's own checks.
    app.err(
        "POST",
        FIELDS,
        ADMIN,
        &[
            ("name", "C"),
            ("field_type", "2"),
            ("display_in_profile_summary", "true"),
        ],
        400,
        "BAD_REQUEST",
        only_two,
    )
    .await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("display_in_profile_summary", "true")],
        400,
        "BAD_REQUEST",
        only_two,
    )
    .await;
    // A field already shown may be updated; one leaving frees a place.
    app.ok(
        "PATCH",
        &format!("{FIELDS}/{a}"),
        ADMIN,
        &[("display_in_profile_summary", "true"), ("hint", "new")],
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/{b}"),
        ADMIN,
        &[("display_in_profile_summary", "false")],
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("display_in_profile_summary", "true")],
    )
    .await;
    let list = fields(&app).await;
    let shown: Vec<i64> = list
        .iter()
        .filter(|f| f["display_in_profile_summary"] == true)
        .map(|f| f["id"].as_i64().unwrap())
        .collect();
    assert_eq!(shown, vec![1, a]);
    assert!(list
        .iter()
        .find(|f| f["id"] == b)
        .unwrap()
        .get("display_in_profile_summary")
        .is_none());
    // Long text may not be shown, even by an update.
    app.err(
        "PATCH",
        &format!("{FIELDS}/2"),
        ADMIN,
        &[("display_in_profile_summary", "true")],
        400,
        "BAD_REQUEST",
        only_two,
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("display_in_profile_summary", "false")],
    )
    .await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/2"),
        ADMIN,
        &[("display_in_profile_summary", "true")],
        400,
        "BAD_REQUEST",
        "Field type not supported for display in profile summary.",
    )
    .await;
}

#[actix_web::test]
async fn update_delete_and_reorder() {
    let app = TestApp::spawn().await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/1"),
        MEMBER,
        &[],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    .await;
    app.err(
        "DELETE",
        &format!("{FIELDS}/1"),
        MEMBER,
        &[],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    .await;
    app.err(
        "PATCH",
        FIELDS,
        MEMBER,
        &[],
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
    .await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/99"),
        ADMIN,
        &[("name", "x")],
        400,
        "BAD_REQUEST",
        "Field id 99 not found.",
    )
    .await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("name", "Biography")],
        400,
        "BAD_REQUEST",
        "A field with that label already exists.",
    )
    .await;
    app.err(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("name", " ")],
        400,
        "BAD_REQUEST",
        "Label cannot be blank.",
    )
    .await;
    // The default external account (GitHub, id 8): only its summary flag may change.
    app.err(
        "PATCH",
        &format!("{FIELDS}/8"),
        ADMIN,
        &[("name", "GH")],
        400,
        "BAD_REQUEST",
        "Default custom field cannot be updated.",
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/8"),
        ADMIN,
        &[
            ("name", "GitHub username"),
            ("display_in_profile_summary", "true"),
        ],
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[
            ("name", " Phone "),
            ("hint", "Mobile"),
            ("required", "true"),
            ("editable_by_user", "false"),
        ],
    )
    .await;
    let list = fields(&app).await;
    assert_eq!(
        list[0],
        json!({"id": 1, "name": "Phone", "type": 1, "hint": "Mobile", "field_data": "", "order": 1, "required": true, "editable_by_user": false})
    );
    assert_eq!(list[7]["display_in_profile_summary"], true);
    app.err(
        "PATCH",
        &format!("{FIELDS}/4"),
        ADMIN,
        &[("field_data", "{}")],
        400,
        "BAD_REQUEST",
        "Field must have at least one choice.",
    )
    .await;

    // Reorder: every field must be listed; extras and repeats pass, the last place wins.
    app.err(
        "PATCH",
        FIELDS,
        ADMIN,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'order' argument",
    )
    .await;
    app.err(
        "PATCH",
        FIELDS,
        ADMIN,
        &[("order", "[1,2,3]")],
        400,
        "BAD_REQUEST",
        "Invalid order mapping.",
    )
    .await;
    app.ok(
        "PATCH",
        FIELDS,
        ADMIN,
        &[("order", "[9,8,7,6,5,4,3,2,1,1,100]")],
    )
    .await;
    let list = fields(&app).await;
    let ids: Vec<i64> = list.iter().map(|f| f["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, vec![9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(list[8]["order"], 9);
    assert_eq!(list[0]["order"], 0);

    app.err(
        "DELETE",
        &format!("{FIELDS}/99"),
        ADMIN,
        &[],
        400,
        "BAD_REQUEST",
        "Field id 99 not found.",
    )
    .await;
    app.ok("DELETE", &format!("{FIELDS}/3"), ADMIN, &[]).await;
    assert_eq!(fields(&app).await.len(), 8);
    app.err(
        "DELETE",
        &format!("{FIELDS}/3"),
        ADMIN,
        &[],
        400,
        "BAD_REQUEST",
        "Field id 3 not found.",
    )
    .await;
}

#[actix_web::test]
async fn users_set_their_values_with_each_types_checks() {
    let app = TestApp::spawn().await;
    let hamlet = app.user_id(HAMLET).await;
    let othello = app.user_id(OTHELLO).await;
    let bot = app.user_id(BOT).await;
    app.err(
        "PATCH",
        DATA,
        BOT,
        &[],
        400,
        "BAD_REQUEST",
        "This endpoint does not accept bot requests.",
    )
    .await;
    app.err(
        "DELETE",
        DATA,
        BOT,
        &[],
        400,
        "BAD_REQUEST",
        "This endpoint does not accept bot requests.",
    )
    .await;
    app.err(
        "PATCH",
        DATA,
        MEMBER,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'data' argument",
    )
    .await;
    let long = "x".repeat(51);
    let paragraph = "x".repeat(501);
    let cases: Vec<(String, &str)> = vec![
        ("{}".into(), "data is not a list"),
        ("[1]".into(), "data[0] is not a dict"),
        (
            r#"[{"value": "x"}]"#.into(),
            "data[0][\"id\"] field is missing: Field required",
        ),
        (
            r#"[{"id": 1, "value": 5}]"#.into(),
            "data[0][\"value\"][\"str\"] is not a string",
        ),
        (set(99, json!("x")), "Field id 99 not found."),
        (
            set(1, json!(long)),
            "Phone number is too long (limit: 50 characters)",
        ),
        (
            set(2, json!(paragraph)),
            "Biography is too long (limit: 500 characters)",
        ),
        (set(1, json!([1])), "Phone number is not a string"),
        (
            set(4, json!("2")),
            "'2' is not a valid choice for 'Favorite editor'.",
        ),
        (set(5, json!("2000-02-30")), "Birthday is not a date"),
        (set(5, json!("1/1/2000")), "Birthday is not a date"),
        (set(6, json!("not a url")), "Favorite website is not a URL"),
        (set(7, json!("x")), "User IDs is not a list"),
        (
            set(7, json!([hamlet, 9999, 9998])),
            "Invalid user IDs: 9999, 9998",
        ),
        (
            set(7, json!([bot])),
            &*Box::leak(format!("User with ID {bot} is a bot").into_boxed_str()),
        ),
    ];
    for (data, msg) in &cases {
        app.err(
            "PATCH",
            DATA,
            MEMBER,
            &[("data", data)],
            400,
            "BAD_REQUEST",
            msg,
        )
        .await;
    }
    assert_eq!(profile_data(&app, MEMBER).await, json!({}));
    let all = json!([
        {"id": 1, "value": "+1-234-567-8901"},
        {"id": 2, "value": "Prince of **Denmark**, see #D123"},
        {"id": 4, "value": "1"},
        {"id": 5, "value": "2000-01-01"},
        {"id": 6, "value": "https://zulip.readthedocs.io/en/latest/"},
        {"id": 7, "value": [othello]},
        {"id": 8, "value": "hamlet"},
        {"id": 9, "value": "he/him"},
    ])
    .to_string();
    app.ok("PATCH", DATA, MEMBER, &[("data", &all)]).await;
    let data = profile_data(&app, MEMBER).await;
    assert_eq!(
        data["1"],
        json!({"value": "+1-234-567-8901", "rendered_value": "<p>+1-234-567-8901</p>"})
    );
    assert_eq!(
        data["2"]["rendered_value"],
        "<p>Prince of <strong>Denmark</strong>, see <a href=\"https://github.com/zulip/zulip-desktop/pull/123\">#D123</a></p>"
    );
    assert_eq!(data["4"], json!({"value": "1"}));
    assert_eq!(data["7"], json!({"value": format!("[{othello}]")}));
    assert_eq!(data["9"], json!({"value": "he/him"}));
    assert!(data.get("3").is_none());

    // Other users see it with include_custom_profile_fields; never on bots.
    let users = app
        .ok(
            "GET",
            "/api/v1/users",
            OTHELLO,
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    let me = users["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["user_id"] == hamlet)
        .unwrap()
        .clone();
    assert_eq!(me["profile_data"], data);
    let users = app.ok("GET", "/api/v1/users", OTHELLO, &[]).await;
    assert!(users["members"][0].get("profile_data").is_none());
    let one = app
        .ok(
            "GET",
            &format!("/api/v1/users/{hamlet}"),
            OTHELLO,
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    assert_eq!(one["user"]["profile_data"], data);
    let b = app
        .ok(
            "GET",
            &format!("/api/v1/users/{bot}"),
            OTHELLO,
            &[("include_custom_profile_fields", "true")],
        )
        .await;
    assert!(b["user"].get("profile_data").is_none());

    // Removing values: unknown fields refused, missing values ignored.
    app.err(
        "DELETE",
        DATA,
        MEMBER,
        &[("data", "[1, 99]")],
        400,
        "BAD_REQUEST",
        "Field id 99 not found.",
    )
    .await;
    assert!(
        profile_data(&app, MEMBER).await.get("1").is_some(),
        "all or nothing"
    );
    app.ok("DELETE", DATA, MEMBER, &[("data", "[1, 3]")]).await;
    let data = profile_data(&app, MEMBER).await;
    assert!(data.get("1").is_none());
    assert_eq!(data.as_object().unwrap().len(), 7);

    // Removing a choice removes the values naming it; deleting a field its values.
    app.ok(
        "PATCH",
        &format!("{FIELDS}/4"),
        ADMIN,
        &[("field_data", r#"{"0": {"text": "Vim", "order": "1"}}"#)],
    )
    .await;
    assert!(profile_data(&app, MEMBER).await.get("4").is_none());
    app.ok("DELETE", &format!("{FIELDS}/9"), ADMIN, &[]).await;
    assert!(profile_data(&app, MEMBER).await.get("9").is_none());
}

#[actix_web::test]
async fn fields_not_editable_by_users() {
    let app = TestApp::spawn().await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/1"),
        ADMIN,
        &[("editable_by_user", "false")],
    )
    .await;
    let refused =
        "You are not allowed to change this field. Contact an administrator to update it.";
    app.err(
        "PATCH",
        DATA,
        MEMBER,
        &[("data", &set(1, json!("1")))],
        400,
        "BAD_REQUEST",
        refused,
    )
    .await;
    app.err(
        "DELETE",
        DATA,
        MEMBER,
        &[("data", "[1]")],
        400,
        "BAD_REQUEST",
        refused,
    )
    .await;
    app.ok("PATCH", DATA, ADMIN, &[("data", &set(1, json!("555")))])
        .await;
    app.ok("PATCH", DATA, OWNER, &[("data", &set(1, json!("556")))])
        .await;
    assert_eq!(profile_data(&app, ADMIN).await["1"]["value"], "555");
    app.ok("DELETE", DATA, ADMIN, &[("data", "[1]")]).await;
    assert_eq!(profile_data(&app, ADMIN).await, json!({}));
}

#[actix_web::test]
async fn register_and_events() {
    let app = TestApp::spawn().await;
    let state = app
        .ok(
            "POST",
            "/api/v1/register",
            MEMBER,
            &[("fetch_event_types", r#"["custom_profile_fields"]"#)],
        )
        .await;
    assert_eq!(state["custom_profile_fields"].as_array().unwrap().len(), 9);
    assert_eq!(
        state["custom_profile_field_types"]["PRONOUNS"],
        json!({"id": 8, "name": "Pronouns"})
    );

    let queue = app.register(OTHELLO, &[]).await;
    let id = create(&app, &[("name", "Team"), ("field_type", "1")]).await;
    let events = app.events(OTHELLO, &queue).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["type"], "custom_profile_fields");
    assert_eq!(events[0]["fields"].as_array().unwrap().len(), 10);
    assert_eq!(events[0]["fields"][9]["name"], "Team");

    let queue = app.register(OTHELLO, &[]).await;
    let hamlet = app.user_id(HAMLET).await;
    let data = json!([{"id": id, "value": "Blue"}, {"id": 5, "value": "2000-01-01"}]).to_string();
    app.ok("PATCH", DATA, MEMBER, &[("data", &data)]).await;
    // Setting the same values again changes nothing and sends nothing.
    app.ok("PATCH", DATA, MEMBER, &[("data", &data)]).await;
    app.ok("DELETE", DATA, MEMBER, &[("data", &format!("[{id}]"))])
        .await;
    let events = app.events(OTHELLO, &queue).await;
    let people: Vec<Value> = events.iter().map(|e| e["person"].clone()).collect();
    assert!(
        events
            .iter()
            .all(|e| e["type"] == "realm_user" && e["op"] == "update"),
        "{events:?}"
    );
    assert_eq!(
        people,
        vec![
            json!({"user_id": hamlet, "custom_profile_field": {"id": id, "value": "Blue", "rendered_value": "<p>Blue</p>"}}),
            json!({"user_id": hamlet, "custom_profile_field": {"id": 5, "value": "2000-01-01"}}),
            json!({"user_id": hamlet, "custom_profile_field": {"id": id, "value": null}}),
        ]
    );
    let queue = app.register(OTHELLO, &[]).await;
    app.ok(
        "PATCH",
        FIELDS,
        ADMIN,
        &[("order", "[1,2,3,4,5,6,7,8,9,10]")],
    )
    .await;
    app.ok(
        "PATCH",
        &format!("{FIELDS}/{id}"),
        ADMIN,
        &[("hint", "Which team")],
    )
    .await;
    app.ok("DELETE", &format!("{FIELDS}/{id}"), ADMIN, &[])
        .await;
    let kinds: Vec<usize> = app
        .events(OTHELLO, &queue)
        .await
        .iter()
        .map(|e| {
            assert_eq!(e["type"], "custom_profile_fields");
            e["fields"].as_array().unwrap().len()
        })
        .collect();
    assert_eq!(kinds, vec![10, 10, 9]);
}

#[actix_web::test]
async fn fields_and_values_survive_a_restart() {
    let mut app = TestApp::spawn().await;
    let id = create(
        &app,
        &[
            ("name", "Pet"),
            ("field_type", "3"),
            ("field_data", r#"{"cat": {"text": "Cat", "order": "1"}}"#),
        ],
    )
    .await;
    app.ok(
        "PATCH",
        DATA,
        MEMBER,
        &[(
            "data",
            &json!([{"id": id, "value": "cat"}, {"id": 2, "value": "*Hi*"}]).to_string(),
        )],
    )
    .await;
    app.ok(
        "PATCH",
        FIELDS,
        ADMIN,
        &[("order", &format!("[{id},1,2,3,4,5,6,7,8,9]"))],
    )
    .await;
    app.ok("DELETE", &format!("{FIELDS}/3"), ADMIN, &[]).await;
    let (before, data) = (fields(&app).await, profile_data(&app, MEMBER).await);
    app.restart().await;
    assert_eq!(fields(&app).await, before);
    assert_eq!(profile_data(&app, MEMBER).await, data);
    assert_eq!(data["2"]["rendered_value"], "<p><em>Hi</em></p>");
    assert_eq!(
        create(&app, &[("name", "Next"), ("field_type", "1")]).await,
        id + 1
    );
}

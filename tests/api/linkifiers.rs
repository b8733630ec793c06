//! Linkifiers (seed 4.11): list, add, update, remove, reorder; Zulip's validation texts
//! and `errors` object; administrators only; `realm_linkifiers` in `/register` and as
//! events (only for queues with the `linkifier_url_template` capability); restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const LINKIFIERS: &str = "/api/v1/realm/linkifiers";
const FILTERS: &str = "/api/v1/realm/filters";
const CAPABLE: &str = r#"{"linkifier_url_template": true}"#;

async fn list(app: &TestApp) -> Vec<Value> {
    let body = app.ok("GET", LINKIFIERS, MEMBER, &[]).await;
    body["linkifiers"].as_array().expect("linkifiers").clone()
}

fn patterns(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|l| l["pattern"].as_str().expect("pattern").to_owned())
        .collect()
}

fn ids(list: &[Value]) -> Vec<i64> {
    list.iter().map(|l| l["id"].as_i64().expect("id")).collect()
}

async fn add(app: &TestApp, pattern: &str, template: &str) -> i64 {
    let body = app
        .ok(
            "POST",
            FILTERS,
            ADMIN,
            &[("pattern", pattern), ("url_template", template)],
        )
        .await;
    body["id"].as_i64().expect("id")
}

#[actix_web::test]
async fn the_dev_realm_has_zulips_linkifiers_in_order() {
    let app = TestApp::spawn().await;
    let list = list(&app).await;
    assert_eq!(
        patterns(&list),
        [
            "#D(?P<id>[0-9]{2,8})",
            "zulip-mobile#(?P<id>[0-9]{2,8})",
            "zulip-(?P<repo>[a-zA-Z-_0-9]+)#(?P<id>[0-9]{2,8})"
        ]
    );
    assert_eq!(
        list[2],
        json!({"pattern": "zulip-(?P<repo>[a-zA-Z-_0-9]+)#(?P<id>[0-9]{2,8})", "url_template": "https://github.com/zulip/{repo}/pull/{id}", "id": list[2]["id"]})
    );
    // Everyone may list them, guests included.
    app.ok("GET", LINKIFIERS, GUEST, &[]).await;
}

#[actix_web::test]
async fn only_administrators_before_any_parameter() {
    let app = TestApp::spawn().await;
    let id = list(&app).await[0]["id"].to_string();
    for (who, method, path) in [
        (MEMBER, "POST", FILTERS.to_owned()),
        (GUEST, "POST", FILTERS.to_owned()),
        (MEMBER, "PATCH", format!("{FILTERS}/{id}")),
        (MEMBER, "DELETE", format!("{FILTERS}/{id}")),
        (MEMBER, "DELETE", format!("{FILTERS}/15000")),
        (MEMBER, "PATCH", LINKIFIERS.to_owned()),
    ] {
        app.err(
            method,
            &path,
            who,
            &[],
            400,
            "UNAUTHORIZED_PRINCIPAL",
            "Must be an organization administrator",
        )
        .await;
    }
    // Owners are administrators.
    add(&app, "OWN-(?P<id>[0-9]+)", "https://o.example.com/{id}").await;
    app.ok(
        "POST",
        FILTERS,
        OWNER,
        &[
            ("pattern", "X-(?P<id>[0-9]+)"),
            ("url_template", "https://x.com/{id}"),
        ],
    )
    .await;
    assert_eq!(list(&app).await.len(), 5);
}

#[actix_web::test]
async fn validation_as_zulip() {
    let app = TestApp::spawn().await;
    let t = "https://realm.com/my_realm_filter/{id}";
    app.err(
        "POST",
        FILTERS,
        ADMIN,
        &[("url_template", t)],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'pattern' argument",
    )
    .await;
    app.err(
        "POST",
        FILTERS,
        ADMIN,
        &[("pattern", "a")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'url_template' argument",
    )
    .await;
    let cases: Vec<(&str, &str, &str, Value)> = vec![
        (
            "",
            t,
            "This field cannot be blank.",
            json!({"pattern": ["This field cannot be blank."], "__all__": ["Group 'id' in URL template is not present in linkifier pattern."]}),
        ),
        (
            "  ",
            t,
            "This field cannot be blank.",
            json!({"pattern": ["This field cannot be blank."], "__all__": ["Group 'id' in URL template is not present in linkifier pattern."]}),
        ),
        (
            "(foo",
            t,
            "Bad regular expression: missing ): (foo",
            json!({"__all__": ["Bad regular expression: missing ): (foo"]}),
        ),
        (
            r"ZUL-(?P<id>\d????)",
            t,
            "Bad regular expression: bad repetition operator: ????",
            json!({"__all__": ["Bad regular expression: bad repetition operator: ????"]}),
        ),
        (
            r"ZUL-(?P<id>\d+)",
            "$fgfg",
            "Group 'id' in linkifier pattern is not present in URL template.",
            json!({"__all__": ["Group 'id' in linkifier pattern is not present in URL template."]}),
        ),
        (
            r"ZUL-(?P<id>\d+)",
            "https://realm.com/my_realm_filter/",
            "Group 'id' in linkifier pattern is not present in URL template.",
            json!({"__all__": ["Group 'id' in linkifier pattern is not present in URL template."]}),
        ),
        (
            r"ZUL-(?P<id>\d+)",
            "https://realm.com/my_realm_filter/{hello}",
            "Group 'hello' in URL template is not present in linkifier pattern.",
            json!({"__all__": ["Group 'hello' in URL template is not present in linkifier pattern."]}),
        ),
        (
            r"ZUL-(?P<id>\d+)-(?P<hello>\d+)",
            "https://realm.com/my_realm_filter/{hello}",
            "Group 'id' in linkifier pattern is not present in URL template.",
            json!({"__all__": ["Group 'id' in linkifier pattern is not present in URL template."]}),
        ),
        (
            "#(?P<id>[123])",
            "{id",
            "Invalid URL template.",
            json!({"url_template": ["Invalid URL template."]}),
        ),
        (
            "#(?P<id>[123])",
            "",
            "This field cannot be blank.",
            json!({"url_template": ["This field cannot be blank."], "__all__": ["Group 'id' in linkifier pattern is not present in URL template."]}),
        ),
        (
            "#D(?P<id>[0-9]{2,8})",
            "https://example.com/{id}",
            "Realm filter with this Realm and Pattern already exists.",
            json!({"__all__": ["Realm filter with this Realm and Pattern already exists."]}),
        ),
    ];
    for (pattern, template, msg, errors) in cases {
        let body = app
            .err(
                "POST",
                FILTERS,
                ADMIN,
                &[("pattern", pattern), ("url_template", template)],
                400,
                "BAD_REQUEST",
                msg,
            )
            .await;
        assert_eq!(body["errors"], errors, "{pattern} {template}");
    }
    assert_eq!(list(&app).await.len(), 3, "nothing was added");
    // Zulip's valid ones, stripped.
    for (p, t) in [
        (
            r"ZUL-(?P<id>\d+)",
            "https://realm.com/my_realm_filter/#hashtag/{id}",
        ),
        (
            r"  ZUL2-(?P<id>\d+)  ",
            "  https://realm.com/my_realm_filter/?value={id}  ",
        ),
        (
            r"_code=(?P<id>[0-9a-zA-Z]+)",
            "https://example.com/product/{id}/details",
        ),
        (r"ZUL-URL-(?P<id>\d+)", "https://example.com/%ba/{id}"),
        (
            r"(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)",
            "https://github.com/{org}/{repo}/issue/{id}",
        ),
        (
            r"FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+);(?P<location>[a-z]+);(?P<name>[a-z]{2,8});(?P<chapter>[0-9]{2,3});(?P<fragment>[a-z]{2,8})",
            "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}",
        ),
        ("3#123", "https://example.com"),
    ] {
        add(&app, p, t).await;
    }
    let list = list(&app).await;
    assert_eq!(list.len(), 10);
    assert_eq!(list[4]["pattern"], r"ZUL2-(?P<id>\d+)");
    assert_eq!(
        list[4]["url_template"],
        "https://realm.com/my_realm_filter/?value={id}"
    );
}

#[actix_web::test]
async fn update_remove_and_reorder() {
    let app = TestApp::spawn().await;
    let id = add(
        &app,
        "#(?P<id>[123])",
        "https://realm.com/my_realm_filter/{id}",
    )
    .await;
    let path = format!("{FILTERS}/{id}");
    let missing = format!("{FILTERS}/{}", id + 100);
    let good = [
        ("pattern", "#(?P<id>[0-9]+)"),
        (
            "url_template",
            "https://realm.com/my_realm_filter/issues/{id}",
        ),
    ];
    app.err(
        "PATCH",
        &missing,
        ADMIN,
        &good,
        400,
        "BAD_REQUEST",
        "Linkifier not found.",
    )
    .await;
    // The lookup comes before validation.
    app.err(
        "PATCH",
        &missing,
        ADMIN,
        &[("pattern", "(foo"), ("url_template", "x")],
        400,
        "BAD_REQUEST",
        "Linkifier not found.",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        ADMIN,
        &[("pattern", "x")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'url_template' argument",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        ADMIN,
        &[
            ("pattern", r"ZUL-(?P<id>\d????)"),
            ("url_template", "https://realm.com/{id}"),
        ],
        400,
        "BAD_REQUEST",
        "Bad regular expression: bad repetition operator: ????",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        ADMIN,
        &[("pattern", "#(?P<id>[123])"), ("url_template", "{id")],
        400,
        "BAD_REQUEST",
        "Invalid URL template.",
    )
    .await;
    app.err(
        "PATCH",
        &path,
        ADMIN,
        &[
            ("pattern", "#D(?P<id>[0-9]{2,8})"),
            ("url_template", "https://x.com/{id}"),
        ],
        400,
        "BAD_REQUEST",
        "Realm filter with this Realm and Pattern already exists.",
    )
    .await;
    // Its own pattern is no duplicate.
    app.ok(
        "PATCH",
        &path,
        ADMIN,
        &[
            ("pattern", "#(?P<id>[123])"),
            ("url_template", "https://y.com/{id}"),
        ],
    )
    .await;
    app.ok("PATCH", &path, ADMIN, &good).await;
    let l = list(&app).await;
    assert_eq!(
        l[3],
        json!({"pattern": "#(?P<id>[0-9]+)", "url_template": "https://realm.com/my_realm_filter/issues/{id}", "id": id})
    );
    app.err(
        "PATCH",
        &format!("{FILTERS}/abc"),
        ADMIN,
        &good,
        400,
        "BAD_REQUEST",
        "filter_id is not an integer",
    )
    .await;

    // Reorder: every linkifier exactly once.
    let mut order = ids(&l);
    order.reverse();
    let json_of = |v: &[i64]| serde_json::to_string(v).unwrap();
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'ordered_linkifier_ids' argument",
    )
    .await;
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", "nope")],
        400,
        "BAD_REQUEST",
        "ordered_linkifier_ids is not valid JSON",
    )
    .await;
    let mut dup = order.clone();
    dup.push(order[0]);
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", &json_of(&dup))],
        400,
        "BAD_REQUEST",
        "The ordered list must not contain duplicated linkifiers",
    )
    .await;
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", &json_of(&order[..2]))],
        400,
        "BAD_REQUEST",
        "The ordered list must enumerate all existing linkifiers exactly once",
    )
    .await;
    let mut extra = order.clone();
    extra.push(9999);
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", &json_of(&extra))],
        400,
        "BAD_REQUEST",
        "The ordered list must enumerate all existing linkifiers exactly once",
    )
    .await;
    app.err(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", "[]")],
        400,
        "BAD_REQUEST",
        "The ordered list must enumerate all existing linkifiers exactly once",
    )
    .await;
    app.ok(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[("ordered_linkifier_ids", &json_of(&order))],
    )
    .await;
    assert_eq!(ids(&list(&app).await), order);
    // A new linkifier goes last; removing one keeps the others' order.
    let newest = add(&app, "N-(?P<id>[0-9]+)", "https://n.com/{id}").await;
    let mut expected = order.clone();
    expected.push(newest);
    assert_eq!(ids(&list(&app).await), expected);
    app.err(
        "DELETE",
        &missing,
        ADMIN,
        &[],
        400,
        "BAD_REQUEST",
        "Linkifier not found.",
    )
    .await;
    app.ok("DELETE", &format!("{FILTERS}/{}", order[1]), ADMIN, &[])
        .await;
    expected.remove(1);
    assert_eq!(ids(&list(&app).await), expected);
    app.err(
        "DELETE",
        &format!("{FILTERS}/{}", order[1]),
        ADMIN,
        &[],
        400,
        "BAD_REQUEST",
        "Linkifier not found.",
    )
    .await;
}

#[actix_web::test]
async fn register_and_events_need_the_capability() {
    let app = TestApp::spawn().await;
    let plain = app
        .ok(
            "POST",
            "/api/v1/register",
            MEMBER,
            &[(
                "fetch_event_types",
                r#"["realm_linkifiers","realm_filters"]"#,
            )],
        )
        .await;
    assert_eq!(plain["realm_linkifiers"], json!([]));
    assert_eq!(plain["realm_filters"], json!([]));
    let capable = app
        .ok(
            "POST",
            "/api/v1/register",
            MEMBER,
            &[
                ("fetch_event_types", r#"["realm_linkifiers"]"#),
                ("client_capabilities", CAPABLE),
            ],
        )
        .await;
    assert_eq!(capable["realm_linkifiers"].as_array().unwrap().len(), 3);
    assert_eq!(
        capable["realm_linkifiers"][0]["url_template"],
        "https://github.com/zulip/zulip-desktop/pull/{id}"
    );

    let with = app
        .register(MEMBER, &[("client_capabilities", CAPABLE)])
        .await;
    let without = app.register(MEMBER, &[]).await;
    let admin_queue = app
        .register(ADMIN, &[("client_capabilities", CAPABLE)])
        .await;
    let id = add(&app, "T-(?P<id>[0-9]+)", "https://t.com/{id}").await;
    let events = app.events(MEMBER, &with).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "realm_linkifiers");
    let all = events[0]["realm_linkifiers"].as_array().unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(
        all[3],
        json!({"pattern": "T-(?P<id>[0-9]+)", "url_template": "https://t.com/{id}", "id": id})
    );
    assert!(app.events(MEMBER, &without).await.is_empty());
    assert_eq!(app.events(ADMIN, &admin_queue).await.len(), 1);

    app.ok(
        "PATCH",
        &format!("{FILTERS}/{id}"),
        ADMIN,
        &[
            ("pattern", "U-(?P<id>[0-9]+)"),
            ("url_template", "https://u.com/{id}"),
        ],
    )
    .await;
    app.ok("DELETE", &format!("{FILTERS}/{id}"), ADMIN, &[])
        .await;
    let mut order = ids(&list(&app).await);
    order.reverse();
    app.ok(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[(
            "ordered_linkifier_ids",
            &serde_json::to_string(&order).unwrap(),
        )],
    )
    .await;
    let events = app.events(MEMBER, &with).await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(
        events[1]["realm_linkifiers"][3]["pattern"],
        "U-(?P<id>[0-9]+)"
    );
    assert_eq!(events[2]["realm_linkifiers"].as_array().unwrap().len(), 3);
    assert_eq!(
        ids(events[3]["realm_linkifiers"].as_array().unwrap()),
        order
    );
    assert!(app.events(MEMBER, &without).await.is_empty());
}

#[actix_web::test]
async fn linkifiers_survive_a_restart() {
    let mut app = TestApp::spawn().await;
    let a = add(&app, "A-(?P<id>[0-9]+)", "https://a.com/{id}").await;
    let b = add(&app, "B-(?P<id>[0-9]+)", "https://b.com/{id}").await;
    app.ok(
        "PATCH",
        &format!("{FILTERS}/{a}"),
        ADMIN,
        &[
            ("pattern", "A2-(?P<id>[0-9]+)"),
            ("url_template", "https://a2.com/{id}"),
        ],
    )
    .await;
    let first = list(&app).await[0]["id"].as_i64().unwrap();
    app.ok("DELETE", &format!("{FILTERS}/{first}"), ADMIN, &[])
        .await;
    let mut order = ids(&list(&app).await);
    order.rotate_left(1);
    app.ok(
        "PATCH",
        LINKIFIERS,
        ADMIN,
        &[(
            "ordered_linkifier_ids",
            &serde_json::to_string(&order).unwrap(),
        )],
    )
    .await;
    let before = list(&app).await;
    app.restart().await;
    assert_eq!(list(&app).await, before);
    // Ids keep growing after a restart.
    let c = add(&app, "C-(?P<id>[0-9]+)", "https://c.com/{id}").await;
    assert!(c > b && b > a);
}

//! Navigation views (seed 4.8, 4.10): every rule and error, per user, with events and
//! restarts; the recorded exchanges 07* and 08*.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const VIEWS: &str = "/api/v1/navigation_views";

fn view(fragment: &str) -> String {
    format!("{VIEWS}/{fragment}")
}

async fn views(s: &TestApp, who: &str) -> Value {
    s.ok("GET", VIEWS, who, &[]).await["navigation_views"].clone()
}

/// The seed's 404 for an unknown fragment.
async fn not_found(s: &TestApp, method: &str, path: &str, who: &str, params: &[(&str, &str)]) {
    s.err(
        method,
        path,
        who,
        params,
        404,
        "NOT_FOUND",
        "Navigation view does not exist.",
    )
    .await;
}

/// Every fragment in Zulip's `BUILT_IN_VIEW_FRAGMENTS` (`zerver/views/navigation_views.py`)
/// is a built-in view: it refuses a custom name and is added without one.
#[actix_web::test]
async fn every_built_in_view_refuses_a_name() {
    let s = TestApp::spawn().await;
    let built_in = [
        "inbox",
        "recent",
        "feed",
        "drafts",
        "narrow/has/reaction/sender/me",
        "narrow/is/mentioned",
        "narrow/is/starred",
        "scheduled",
        "reminders",
    ];
    for fragment in built_in {
        s.bad(
            "POST",
            VIEWS,
            IAGO,
            &[
                ("fragment", fragment),
                ("name", "Mine"),
                ("is_pinned", "false"),
            ],
            "Built-in views cannot have a custom name.",
        )
        .await;
        s.ok(
            "POST",
            VIEWS,
            IAGO,
            &[("fragment", fragment), ("is_pinned", "false")],
        )
        .await;
    }
    let listed = views(&s, IAGO).await;
    assert_eq!(listed.as_array().unwrap().len(), built_in.len());
    assert!(listed
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["name"].is_null()));
}

#[actix_web::test]
async fn navigation_views_rules() {
    let mut s = TestApp::spawn().await;
    assert_eq!(views(&s, IAGO).await, json!([]));
    // Recording 07: a custom view.
    let verona = [
        ("fragment", "narrow/channel/3-Verona"),
        ("name", "Verona view"),
        ("is_pinned", "true"),
    ];
    let body = s.ok("POST", VIEWS, IAGO, &verona).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    // 07b, 07c.
    s.bad(
        "POST",
        VIEWS,
        IAGO,
        &verona,
        "Navigation view already exists.",
    )
    .await;
    s.bad(
        "POST",
        VIEWS,
        IAGO,
        &[
            ("fragment", "inbox"),
            ("name", "My inbox"),
            ("is_pinned", "false"),
        ],
        "Built-in views cannot have a custom name.",
    )
    .await;
    let table: &[(&[(&str, &str)], &str)] = &[
        // Missing parameters first, then each value in order.
        (&[], "Missing 'fragment' argument"),
        (&[("fragment", " ")], "Missing 'is_pinned' argument"),
        (
            &[("fragment", " "), ("is_pinned", "yes")],
            "fragment cannot be blank",
        ),
        (
            &[("fragment", "x"), ("is_pinned", "yes")],
            "is_pinned is not valid JSON",
        ),
        (
            &[("fragment", "x"), ("is_pinned", "1")],
            "is_pinned is not a boolean",
        ),
        (
            &[("fragment", "x"), ("is_pinned", "true"), ("name", "  ")],
            "name cannot be blank",
        ),
        (
            &[("fragment", "x"), ("is_pinned", "true")],
            "Custom views must have a valid name.",
        ),
        // The same fragment once stripped; a name already used.
        (
            &[
                ("fragment", " narrow/channel/3-Verona "),
                ("is_pinned", "true"),
                ("name", "Other"),
            ],
            "Navigation view already exists.",
        ),
        (
            &[
                ("fragment", "narrow/other"),
                ("is_pinned", "true"),
                ("name", " Verona view "),
            ],
            "Navigation view already exists.",
        ),
        (
            &[
                ("fragment", "recent"),
                ("is_pinned", "true"),
                ("name", "Recent"),
            ],
            "Built-in views cannot have a custom name.",
        ),
    ];
    for (params, msg) in table {
        let code = if msg.starts_with("Missing") {
            "REQUEST_VARIABLE_MISSING"
        } else {
            "BAD_REQUEST"
        };
        s.err("POST", VIEWS, IAGO, params, 400, code, msg).await;
    }
    // A built-in view is configured without a name.
    s.ok(
        "POST",
        VIEWS,
        IAGO,
        &[("fragment", " inbox"), ("is_pinned", "false")],
    )
    .await;
    s.bad(
        "POST",
        VIEWS,
        IAGO,
        &[("fragment", "inbox"), ("is_pinned", "true")],
        "Navigation view already exists.",
    )
    .await;
    // 07d.
    let want = json!([
        {"fragment": "narrow/channel/3-Verona", "is_pinned": true, "name": "Verona view"},
        {"fragment": "inbox", "is_pinned": false, "name": null},
    ]);
    assert_eq!(views(&s, IAGO).await, want);

    // Updates. Recording 08: an unknown fragment (the seed's NOT_FOUND); 08b.
    not_found(
        &s,
        "PATCH",
        &view("narrow/no-such-view"),
        IAGO,
        &[("is_pinned", "false")],
    )
    .await;
    s.ok(
        "PATCH",
        &view("narrow/channel/3-Verona"),
        IAGO,
        &[("is_pinned", "false")],
    )
    .await;
    // Name checks come before the lookup; the name may not be one already used.
    s.bad(
        "PATCH",
        &view("inbox"),
        IAGO,
        &[("name", "Mine")],
        "Built-in views cannot have a custom name.",
    )
    .await;
    s.bad(
        "PATCH",
        &view("narrow/no-such-view"),
        IAGO,
        &[("name", "Verona view")],
        "Navigation view already exists.",
    )
    .await;
    s.bad(
        "PATCH",
        &view("narrow/channel/3-Verona"),
        IAGO,
        &[("name", "Verona view")],
        "Navigation view already exists.",
    )
    .await;
    s.bad("PATCH", &view("%20"), IAGO, &[], "fragment cannot be blank")
        .await;
    s.bad(
        "PATCH",
        &view("inbox"),
        IAGO,
        &[("is_pinned", "no")],
        "is_pinned is not valid JSON",
    )
    .await;
    s.bad(
        "PATCH",
        &view("inbox"),
        IAGO,
        &[("name", " ")],
        "name cannot be blank",
    )
    .await;
    s.ok(
        "PATCH",
        &view("narrow/channel/3-Verona"),
        IAGO,
        &[("name", " Verona "), ("is_pinned", "true")],
    )
    .await;
    s.ok("PATCH", &view("inbox"), IAGO, &[("is_pinned", "true")])
        .await;
    let want = json!([
        {"fragment": "narrow/channel/3-Verona", "is_pinned": true, "name": "Verona"},
        {"fragment": "inbox", "is_pinned": true, "name": null},
    ]);
    assert_eq!(views(&s, IAGO).await, want);

    // Views are per user: hamlet sees none and cannot touch iago's.
    assert_eq!(views(&s, HAMLET).await, json!([]));
    not_found(
        &s,
        "PATCH",
        &view("inbox"),
        HAMLET,
        &[("is_pinned", "false")],
    )
    .await;
    not_found(&s, "DELETE", &view("narrow/channel/3-Verona"), HAMLET, &[]).await;
    s.ok(
        "POST",
        VIEWS,
        HAMLET,
        &[
            ("fragment", "narrow/channel/3-Verona"),
            ("is_pinned", "false"),
            ("name", "Verona"),
        ],
    )
    .await;
    // Guests and bots have views too.
    for who in [GUEST, BOT] {
        s.ok(
            "POST",
            VIEWS,
            who,
            &[("fragment", "feed"), ("is_pinned", "true")],
        )
        .await;
        assert_eq!(
            views(&s, who).await,
            json!([{"fragment": "feed", "is_pinned": true, "name": null}])
        );
    }

    s.restart().await;
    assert_eq!(views(&s, IAGO).await, want);
    // Recording 08c; then a real removal.
    not_found(&s, "DELETE", &view("narrow/no-such-view"), IAGO, &[]).await;
    s.ok("DELETE", &view("narrow/channel/3-Verona"), IAGO, &[])
        .await;
    not_found(&s, "DELETE", &view("narrow/channel/3-Verona"), IAGO, &[]).await;
    s.restart().await;
    assert_eq!(
        views(&s, IAGO).await,
        json!([{"fragment": "inbox", "is_pinned": true, "name": null}])
    );
    assert_eq!(
        views(&s, HAMLET).await,
        json!([{"fragment": "narrow/channel/3-Verona", "is_pinned": false, "name": "Verona"}])
    );
    s.stop().await;
}

#[actix_web::test]
async fn navigation_view_events_and_register() {
    let s = TestApp::spawn().await;
    let q = s
        .register(HAMLET, &[("event_types", r#"["navigation_view"]"#)])
        .await;
    let other = s
        .register(IAGO, &[("event_types", r#"["navigation_view"]"#)])
        .await;
    s.ok(
        "POST",
        VIEWS,
        HAMLET,
        &[
            ("fragment", "narrow/is/dm"),
            ("is_pinned", "true"),
            ("name", "DMs"),
        ],
    )
    .await;
    s.ok(
        "PATCH",
        &view("narrow/is/dm"),
        HAMLET,
        &[("is_pinned", "false")],
    )
    .await;
    s.ok(
        "PATCH",
        &view("narrow/is/dm"),
        HAMLET,
        &[("name", "Direct")],
    )
    .await;
    s.ok("PATCH", &view("narrow/is/dm"), HAMLET, &[]).await;
    s.ok(
        "POST",
        VIEWS,
        HAMLET,
        &[("fragment", "recent"), ("is_pinned", "false")],
    )
    .await;
    s.ok("DELETE", &view("narrow/is/dm"), HAMLET, &[]).await;
    let events: Vec<Value> = s
        .events(HAMLET, &q)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "navigation_view", "op": "add", "navigation_view": {"fragment": "narrow/is/dm", "is_pinned": true, "name": "DMs"}}),
            json!({"type": "navigation_view", "op": "update", "fragment": "narrow/is/dm", "data": {"is_pinned": false}}),
            json!({"type": "navigation_view", "op": "update", "fragment": "narrow/is/dm", "data": {"name": "Direct"}}),
            json!({"type": "navigation_view", "op": "update", "fragment": "narrow/is/dm", "data": {}}),
            json!({"type": "navigation_view", "op": "add", "navigation_view": {"fragment": "recent", "is_pinned": false, "name": null}}),
            json!({"type": "navigation_view", "op": "remove", "fragment": "narrow/is/dm"}),
        ]
    );
    assert!(s.events(IAGO, &other).await.is_empty());
    let body = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[("fetch_event_types", r#"["navigation_views"]"#)],
        )
        .await;
    assert_eq!(
        body["navigation_views"],
        json!([{"fragment": "recent", "is_pinned": false, "name": null}])
    );
}

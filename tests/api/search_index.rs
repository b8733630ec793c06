//! `search` narrows through the full-text index (`storage::messages::search`): English stems,
//! phrases, stop words, access as the rest of `GET /messages` decides it, edits, moves
//! and deletions seen at once, an index rebuilt at start, and Zulip's highlighting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

async fn send_to(app: &TestApp, who: &str, channel: &str, topic: &str, content: &str) -> u64 {
    let body = app
        .ok(
            "POST",
            "/api/v1/messages",
            who,
            &[
                ("type", "stream"),
                ("to", channel),
                ("topic", topic),
                ("content", content),
            ],
        )
        .await;
    body["id"].as_u64().expect("id")
}

/// `GET /messages` newest first, 100 before, with `narrow`.
async fn fetch(app: &TestApp, who: &str, narrow: &Value) -> Value {
    app.ok(
        "GET",
        "/api/v1/messages",
        who,
        &[
            ("anchor", "newest"),
            ("num_before", "100"),
            ("num_after", "0"),
            ("narrow", &narrow.to_string()),
        ],
    )
    .await
}

/// The ids a search of `operand` finds for `who` (with more `terms` in the narrow).
async fn found(app: &TestApp, who: &str, operand: &str, terms: &[Value]) -> Vec<u64> {
    let mut narrow = terms.to_vec();
    narrow.push(json!({"operator": "search", "operand": operand}));
    ids(&fetch(app, who, &Value::Array(narrow)).await)
}

fn ids(body: &Value) -> Vec<u64> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["id"].as_u64().expect("id"))
        .collect()
}

fn channel(name: &str) -> Value {
    json!({"operator": "channel", "operand": name})
}

/// Creates a channel as Iago with these subscribers.
async fn create_channel(app: &TestApp, name: &str, invite_only: bool, shared_history: bool) {
    let subs = json!([{ "name": name }]).to_string();
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[
            ("subscriptions", &subs),
            ("invite_only", if invite_only { "true" } else { "false" }),
            (
                "history_public_to_subscribers",
                if shared_history { "true" } else { "false" },
            ),
        ],
    )
    .await;
}

async fn subscribe(app: &TestApp, name: &str, who: i64) {
    let subs = json!([{ "name": name }]).to_string();
    let principals = json!([who]).to_string();
    app.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        IAGO,
        &[("subscriptions", &subs), ("principals", &principals)],
    )
    .await;
}

#[actix_web::test]
async fn a_word_is_found_through_another_form() {
    let app = TestApp::spawn().await;
    let deploying = send_to(&app, IAGO, "Verona", "ops", "We are deploying the build").await;
    let topic = send_to(&app, IAGO, "Verona", "Deployments", "nothing to see").await;
    send_to(&app, IAGO, "Verona", "ops", "an unrelated line").await;
    assert_eq!(
        found(&app, IAGO, "deployed", &[]).await,
        vec![deploying, topic]
    );
    assert_eq!(
        found(&app, IAGO, "DEPLOYS", &[]).await,
        vec![deploying, topic]
    );
    // Every word must occur (in the content or the topic).
    assert_eq!(
        found(&app, IAGO, "deploy build", &[]).await,
        vec![deploying]
    );
    assert_eq!(found(&app, IAGO, "deploy see", &[]).await, vec![topic]);
    assert_eq!(
        found(&app, IAGO, "deploy zebra", &[]).await,
        Vec::<u64>::new()
    );
    // With the other terms of the narrow.
    let topic_term = json!({"operator": "topic", "operand": "ops"});
    assert_eq!(
        found(&app, IAGO, "deploy", &[channel("Verona"), topic_term]).await,
        vec![deploying]
    );
    let negated = json!({"operator": "topic", "operand": "ops", "negated": true});
    assert_eq!(found(&app, IAGO, "deploy", &[negated]).await, vec![topic]);
    // The same once the index committed them.
    actix_web::rt::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        found(&app, IAGO, "deployed", &[]).await,
        vec![deploying, topic]
    );
}

#[actix_web::test]
async fn a_phrase_is_found_only_in_order() {
    let app = TestApp::spawn().await;
    let ordered = send_to(&app, IAGO, "Verona", "sea", "A Blue Whale was sighted").await;
    let reversed = send_to(&app, IAGO, "Verona", "sea", "the whale is blue").await;
    let in_topic = send_to(&app, IAGO, "Verona", "blue whale watch", "whale blue").await;
    assert_eq!(
        found(&app, IAGO, "\"blue whale\"", &[]).await,
        vec![ordered, in_topic]
    );
    assert_eq!(
        found(&app, IAGO, "blue whale", &[]).await,
        vec![ordered, reversed, in_topic]
    );
    assert_eq!(
        found(&app, IAGO, "sighted \"whale is\"", &[]).await,
        Vec::<u64>::new()
    );
    let body = fetch(
        &app,
        IAGO,
        &json!([{"operator": "search", "operand": "\"whale is blue\""}]),
    )
    .await;
    assert_eq!(ids(&body), vec![reversed]);
    assert_eq!(body["found_oldest"], true);
    assert_eq!(body["found_newest"], true);
}

#[actix_web::test]
async fn a_stop_word_alone_finds_nothing() {
    let app = TestApp::spawn().await;
    let the = send_to(&app, IAGO, "Verona", "words", "the").await;
    // Zulip's `plainto_tsquery` of stop words alone is empty, and matches nothing.
    let body = fetch(
        &app,
        IAGO,
        &json!([{"operator": "search", "operand": "the"}]),
    )
    .await;
    assert_eq!(ids(&body), Vec::<u64>::new());
    assert_eq!(body["found_oldest"], true);
    assert_eq!(body["found_newest"], true);
    assert_eq!(found(&app, IAGO, "\"the\"", &[]).await, Vec::<u64>::new());
    // Beside another word, a stop word is dropped.
    let cats = send_to(&app, IAGO, "Verona", "words", "cats").await;
    assert_eq!(found(&app, IAGO, "the cat", &[]).await, vec![cats]);
    assert_ne!(the, cats);
}

/// Zulip's `NarrowParameter` requires a `search` operand: a blank one is refused (on
/// `/messages` and on the flags-by-narrow write alike), and changes nothing.
#[actix_web::test]
async fn a_blank_search_operand_is_refused() {
    let app = TestApp::spawn().await;
    for operand in ["", "   "] {
        let narrow = json!([{"operator": "search", "operand": operand}]).to_string();
        app.err(
            "GET",
            "/api/v1/messages",
            IAGO,
            &[
                ("anchor", "newest"),
                ("num_before", "5"),
                ("num_after", "0"),
                ("narrow", &narrow),
            ],
            400,
            "BAD_REQUEST",
            "operand cannot be blank.",
        )
        .await;
        app.err(
            "POST",
            "/api/v1/messages/flags/narrow",
            IAGO,
            &[
                ("anchor", "newest"),
                ("num_before", "1"),
                ("num_after", "0"),
                ("narrow", &narrow),
                ("op", "add"),
                ("flag", "read"),
            ],
            400,
            "BAD_REQUEST",
            "operand cannot be blank.",
        )
        .await;
    }
}

/// A negated `search` term keeps the messages that do not match, as Zulip's
/// `maybe_negate` does for both its full-text and its quoted-phrase conditions.
#[actix_web::test]
async fn a_negated_search_keeps_what_does_not_match() {
    let app = TestApp::spawn().await;
    let kept = send_to(&app, IAGO, "Verona", "negation", "apples only").await;
    let dropped = send_to(&app, IAGO, "Verona", "negation", "bananas only").await;
    let body = fetch(
        &app,
        IAGO,
        &json!([
            {"operator": "topic", "operand": "negation"},
            {"operator": "search", "operand": "banana", "negated": true}
        ]),
    )
    .await;
    let got = ids(&body);
    assert!(got.contains(&kept) && !got.contains(&dropped), "{got:?}");
}

#[actix_web::test]
async fn a_private_channel_is_never_found_by_a_non_subscriber() {
    let app = TestApp::spawn().await;
    create_channel(&app, "secret", true, true).await;
    let secret = send_to(&app, IAGO, "secret", "plans", "zanzibar plans").await;
    let public = send_to(&app, IAGO, "Verona", "plans", "zanzibar too").await;
    assert_eq!(
        found(&app, IAGO, "zanzibar", &[]).await,
        vec![secret, public]
    );
    assert_eq!(found(&app, OTHELLO, "zanzibar", &[]).await, vec![public]);
    let public_term = json!({"operator": "channels", "operand": "public"});
    assert_eq!(
        found(&app, OTHELLO, "zanzibar", &[public_term]).await,
        vec![public]
    );
    // The channel itself is unknown to them.
    let narrow = json!([channel("secret"), {"operator": "search", "operand": "zanzibar"}]);
    app.err(
        "GET",
        "/api/v1/messages",
        OTHELLO,
        &[
            ("anchor", "newest"),
            ("num_before", "10"),
            ("num_after", "0"),
            ("narrow", &narrow.to_string()),
        ],
        400,
        "BAD_NARROW",
        "Invalid narrow operator: unknown channel secret",
    )
    .await;
}

#[actix_web::test]
async fn protected_and_shared_history_as_zulip() {
    let app = TestApp::spawn().await;
    // Protected history: a new subscriber finds only what they received.
    create_channel(&app, "vault", true, false).await;
    let before = send_to(&app, IAGO, "vault", "t", "quokka before").await;
    subscribe(&app, "vault", OTHELLO_ID).await;
    let after = send_to(&app, IAGO, "vault", "t", "quokka after").await;
    assert_eq!(found(&app, OTHELLO, "quokka", &[]).await, vec![after]);
    assert_eq!(
        found(&app, OTHELLO, "quokka", &[channel("vault")]).await,
        vec![after]
    );
    assert_eq!(found(&app, IAGO, "quokka", &[]).await, vec![before, after]);
    // Shared history: narrowed to the channel, its history is theirs too.
    create_channel(&app, "archive", true, true).await;
    let old = send_to(&app, IAGO, "archive", "t", "wombat old").await;
    subscribe(&app, "archive", OTHELLO_ID).await;
    assert_eq!(found(&app, OTHELLO, "wombat", &[]).await, Vec::<u64>::new());
    assert_eq!(
        found(&app, OTHELLO, "wombat", &[channel("archive")]).await,
        vec![old]
    );
    // A public channel's history, to a member not subscribed, narrowed to it.
    create_channel(&app, "lounge", false, true).await;
    let lounge = send_to(&app, IAGO, "lounge", "t", "capybara").await;
    assert_eq!(
        found(&app, OTHELLO, "capybara", &[]).await,
        Vec::<u64>::new()
    );
    assert_eq!(
        found(&app, OTHELLO, "capybara", &[channel("lounge")]).await,
        vec![lounge]
    );
    // `is:` terms other than `is:resolved` keep history out (Zulip's
    // `ok_to_include_history`).
    let starred = json!({"operator": "is", "operand": "starred"});
    assert_eq!(
        found(&app, OTHELLO, "capybara", &[channel("lounge"), starred]).await,
        Vec::<u64>::new()
    );
}

#[actix_web::test]
async fn edits_moves_and_deletions_are_reflected_at_once() {
    let app = TestApp::spawn().await;
    let id = send_to(&app, IAGO, "Verona", "fruit", "kiwi salad").await;
    let path = format!("/api/v1/messages/{id}");
    for settled in [false, true] {
        assert_eq!(found(&app, IAGO, "kiwi", &[]).await, vec![id]);
        if settled {
            break;
        }
        // Once more after the index committed the send.
        actix_web::rt::time::sleep(Duration::from_millis(800)).await;
    }
    app.ok("PATCH", &path, IAGO, &[("content", "mango salad")])
        .await;
    assert_eq!(found(&app, IAGO, "kiwi", &[]).await, Vec::<u64>::new());
    assert_eq!(found(&app, IAGO, "mango", &[]).await, vec![id]);
    app.ok(
        "PATCH",
        &path,
        IAGO,
        &[("topic", "papaya talk"), ("propagate_mode", "change_one")],
    )
    .await;
    // Iago's messages only: the notices of the move name both topics.
    let by_iago = json!({"operator": "sender", "operand": IAGO_ID});
    assert_eq!(
        found(&app, IAGO, "papaya", std::slice::from_ref(&by_iago)).await,
        vec![id]
    );
    assert_eq!(
        found(&app, IAGO, "fruit", std::slice::from_ref(&by_iago)).await,
        Vec::<u64>::new()
    );
    actix_web::rt::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(found(&app, IAGO, "kiwi", &[]).await, Vec::<u64>::new());
    assert_eq!(found(&app, IAGO, "papaya", &[by_iago]).await, vec![id]);
    assert_eq!(found(&app, IAGO, "papaya mango", &[]).await, vec![id]);
    app.ok("DELETE", &path, IAGO, &[]).await;
    assert_eq!(found(&app, IAGO, "mango", &[]).await, Vec::<u64>::new());
    actix_web::rt::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(found(&app, IAGO, "mango", &[]).await, Vec::<u64>::new());
}

/// The index folder of the development realm.
fn index_dir(app: &TestApp) -> std::path::PathBuf {
    app.dir
        .path()
        .join("search")
        .join(format!("realm-{}", hex_of("zulip")))
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

async fn wait_for_layout(app: &TestApp) {
    let layout = index_dir(app).join("hearth-layout");
    poll(Duration::from_secs(30), "the index rebuilt", || {
        let layout = layout.clone();
        async move { std::fs::read_to_string(&layout).ok().filter(|l| l == "1") }
    })
    .await;
}

#[actix_web::test]
async fn a_deleted_index_folder_is_rebuilt_at_start() {
    let mut app = TestApp::spawn().await;
    let first = send_to(&app, IAGO, "Verona", "t", "pelican one").await;
    let second = send_to(&app, IAGO, "Denmark", "t", "pelicans two").await;
    wait_for_layout(&app).await;
    app.stop().await;
    std::fs::remove_dir_all(app.dir.path().join("search")).unwrap();
    app.start().await;
    wait_for_layout(&app).await;
    assert_eq!(found(&app, IAGO, "pelican", &[]).await, vec![first, second]);
    // An index of another layout is rebuilt too, and so is one left dirty.
    app.stop().await;
    std::fs::write(index_dir(&app).join("hearth-layout"), "0").unwrap();
    app.start().await;
    wait_for_layout(&app).await;
    assert_eq!(found(&app, IAGO, "pelican", &[]).await, vec![first, second]);
    app.stop().await;
    std::fs::write(index_dir(&app).join("hearth-dirty"), "").unwrap();
    app.start().await;
    poll(Duration::from_secs(30), "the dirty index rebuilt", || {
        let dirty = index_dir(&app).join("hearth-dirty");
        async move { (!dirty.exists()).then_some(()) }
    })
    .await;
    wait_for_layout(&app).await;
    assert_eq!(found(&app, IAGO, "pelican", &[]).await, vec![first, second]);
}

/// The inode of the index's layout file: a rebuild writes a new one.
fn layout_inode(app: &TestApp) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(index_dir(app).join("hearth-layout"))
        .expect("the index's layout file")
        .ino()
}

#[actix_web::test]
async fn a_clean_stop_right_after_a_send_commits_the_index() {
    let mut app = TestApp::spawn().await;
    let first = send_to(&app, IAGO, "Verona", "t", "heron one").await;
    wait_for_layout(&app).await;
    let inode = layout_inode(&app);
    // Stopped within the index's gathering delay: its commit is still pending, and the
    // stop must make it while the rows can still be read.
    let second = send_to(&app, IAGO, "Verona", "t", "herons two").await;
    app.stop().await;
    assert!(
        !index_dir(&app).join("hearth-dirty").exists(),
        "a clean stop left the search index dirty (it would be rebuilt whole)"
    );
    app.start().await;
    assert_eq!(found(&app, IAGO, "heron", &[]).await, vec![first, second]);
    assert_eq!(layout_inode(&app), inode, "the index was rebuilt at start");
}

#[actix_web::test]
async fn highlights_are_exact_on_html_and_topics() {
    let app = TestApp::spawn().await;
    let id = send_to(
        &app,
        IAGO,
        "Verona",
        "deploy <plans> & amp",
        "Deploying R&D: `deploys` <b>x</b> [deployed](https://deploy.example.com)",
    )
    .await;
    let body = fetch(
        &app,
        IAGO,
        &json!([{"operator": "search", "operand": "deployed plans"}]),
    )
    .await;
    assert_eq!(ids(&body), vec![id]);
    let m = &body["messages"][0];
    assert_eq!(
        m["match_content"],
        "<p><span class=\"highlight\">Deploying</span> R&amp;D: <code>\
         <span class=\"highlight\">deploys</span></code> &lt;b&gt;x&lt;/b&gt; \
         <a href=\"https://deploy.example.com\"><span class=\"highlight\">deployed</span></a></p>"
    );
    assert_eq!(
        m["match_subject"],
        "<span class=\"highlight\">deploy</span> &lt;<span class=\"highlight\">plans</span>&gt; &amp; amp"
    );
    // `/messages/matches_narrow` highlights the same way.
    let narrow = json!([{"operator": "search", "operand": "deployed plans"}]).to_string();
    let matches = app
        .ok(
            "GET",
            "/api/v1/messages/matches_narrow",
            IAGO,
            &[("msg_ids", &format!("[{id}]")), ("narrow", &narrow)],
        )
        .await;
    assert_eq!(
        matches["messages"][id.to_string()]["match_content"],
        m["match_content"]
    );
    assert_eq!(
        matches["messages"][id.to_string()]["match_subject"],
        m["match_subject"]
    );
    // A character reference is no word: `amp` is found only in the topic's text.
    let body = fetch(
        &app,
        IAGO,
        &json!([{"operator": "search", "operand": "amp"}]),
    )
    .await;
    assert_eq!(ids(&body), vec![id]);
    assert_eq!(
        body["messages"][0]["match_subject"],
        "deploy &lt;plans&gt; &amp; <span class=\"highlight\">amp</span>"
    );
    assert_eq!(
        body["messages"][0]["match_content"],
        body["messages"][0]["content"]
    );
    // Without a search term there is nothing to highlight.
    let body = fetch(&app, IAGO, &json!([channel("Verona")])).await;
    assert!(body["messages"][0].get("match_content").is_none());
}

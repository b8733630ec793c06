//! The read path: what readers see and when. Reads and authentication run on the HTTP
//! workers against the realm's published version; a write becomes visible once it is
//! durable, to its writer before the answer; a registration's state and its queue
//! agree; one request's long lists are capped and do not hold the realm.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;
use hearth::api::params::MAX_LIST_ITEMS;
use hearth::hub::MAX_QUEUES_PER_USER;
use serde_json::{json, Value};

/// In `always` mode, what a write acknowledges is visible at once: to the writer and
/// to everyone else, on the very next read.
#[actix_web::test]
async fn an_acknowledged_write_is_visible_on_the_next_read() {
    let app = TestApp::spawn_durable().await;
    for i in 0..30 {
        let name = format!("visible {i}");
        app.ok(
            "POST",
            "/api/v1/channels/create",
            ADMIN,
            &[("name", &name), ("subscribers", "[]")],
        )
        .await;
        let body = app
            .ok("GET", "/api/v1/get_stream_id", MEMBER, &[("stream", &name)])
            .await;
        assert!(body["stream_id"].is_i64(), "{body}");
    }
    let body = app.ok("GET", "/api/v1/streams", MEMBER, &[]).await;
    let seen: HashSet<String> = names(&body["streams"]).into_iter().collect();
    assert!((0..30).all(|i| seen.contains(&format!("visible {i}"))));
}

/// Registrations racing with writes: every channel created is either in a queue's
/// initial state or announced by exactly one `stream` `create` event on it, never both
/// and never neither. One registration at most per channel created, so that the queues
/// stay under the per-user cap (`MAX_QUEUES_PER_USER`, 64: beyond it the oldest queue
/// is collected, and its poll answers `BAD_EVENT_QUEUE_ID`) however the two race.
#[actix_web::test]
async fn registration_state_and_queue_never_overlap_nor_miss() {
    let app = TestApp::spawn().await;
    let total = 60;
    assert!(total < MAX_QUEUES_PER_USER);
    let created = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (url, client, key, created) = (
            app.url.clone(),
            app.client.clone(),
            app.api_key(ADMIN).await,
            created.clone(),
        );
        actix_web::rt::spawn(async move {
            for i in 0..total {
                let resp = client
                    .post(format!("{url}/api/v1/channels/create"))
                    .basic_auth(ADMIN, Some(&key))
                    .form(&[("name", format!("race {i}")), ("subscribers", "[]".into())])
                    .send()
                    .await
                    .expect("sent");
                assert!(resp.status().is_success());
                created.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let mut queues = Vec::new();
    let mut registered_after = None;
    while !writer.is_finished() {
        let now = created.load(Ordering::SeqCst);
        if registered_after == Some(now) {
            actix_web::rt::time::sleep(std::time::Duration::from_millis(1)).await;
            continue;
        }
        registered_after = Some(now);
        let body = app
            .ok(
                "POST",
                "/api/v1/register",
                MEMBER,
                &[
                    ("event_types", r#"["stream"]"#),
                    ("fetch_event_types", r#"["stream"]"#),
                ],
            )
            .await;
        let in_state: BTreeSet<String> = names(&body["streams"])
            .into_iter()
            .filter(|n| n.starts_with("race "))
            .collect();
        queues.push((
            body["queue_id"].as_str().expect("queue").to_owned(),
            in_state,
        ));
    }
    writer.await.expect("writer");
    assert!(!queues.is_empty());
    let all: BTreeSet<String> = (0..total).map(|i| format!("race {i}")).collect();
    for (queue, in_state) in &queues {
        let mut announced = Vec::new();
        for e in app.events(MEMBER, queue).await {
            if e["op"] == "create" {
                announced.extend(names(&e["streams"]));
            }
        }
        let announced_set: BTreeSet<String> = announced.iter().cloned().collect();
        assert_eq!(announced.len(), announced_set.len(), "announced twice");
        assert!(
            in_state.is_disjoint(&announced_set),
            "in the state and announced: {:?}",
            in_state.intersection(&announced_set).collect::<Vec<_>>()
        );
        let union: BTreeSet<String> = in_state.union(&announced_set).cloned().collect();
        assert_eq!(union, all, "queue {queue} missed channels");
    }
}

/// One request may subscribe to `MAX_LIST_ITEMS` new channels; one more is refused with
/// a clear error and changes nothing. Colors come from the palette in turn.
#[actix_web::test]
async fn ten_thousand_channels_in_one_request_and_not_one_more() {
    let mut app = TestApp::spawn().await;
    let too_many: Vec<Value> = (0..=MAX_LIST_ITEMS)
        .map(|i| json!({"name": format!("bulk {i}")}))
        .collect();
    app.err(
        "POST",
        "/api/v1/users/me/subscriptions",
        MEMBER,
        &[(
            "subscriptions",
            &serde_json::to_string(&too_many).expect("json"),
        )],
        400,
        "BAD_REQUEST",
        &format!("subscriptions is too long (limit: {MAX_LIST_ITEMS} items)"),
    )
    .await;
    let (status, _) = app
        .call(
            "GET",
            "/api/v1/get_stream_id",
            MEMBER,
            &[("stream", "bulk 0")],
        )
        .await;
    assert_eq!(status, 400, "nothing was created");

    let most = &too_many[..MAX_LIST_ITEMS];
    let body = app
        .ok(
            "POST",
            "/api/v1/users/me/subscriptions",
            MEMBER,
            &[("subscriptions", &serde_json::to_string(most).expect("json"))],
        )
        .await;
    let me = app.user_id(MEMBER).await.to_string();
    assert_eq!(
        body["subscribed"][&me]
            .as_array()
            .expect("subscribed")
            .len(),
        MAX_LIST_ITEMS
    );
    app.restart().await;
    let subs = app
        .ok("GET", "/api/v1/users/me/subscriptions", MEMBER, &[])
        .await;
    let subs = subs["subscriptions"].as_array().expect("subscriptions");
    let bulk: Vec<&Value> = subs
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("bulk ")))
        .collect();
    assert_eq!(bulk.len(), MAX_LIST_ITEMS);
    let colors: HashSet<&str> = bulk.iter().filter_map(|s| s["color"].as_str()).collect();
    assert_eq!(colors.len(), 24, "the whole palette, in turn");
}

//! The hub's tests: queues, heartbeats, collection, poisoned locks, the log's pruning.

use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::error::{ApiResult, ErrorCode};
use crate::locks::read;
use crate::realm::events::{Audience, Event};
use crate::realm::{Change, ChannelChange, ManualClock, UserChange};

fn hub(clock: ManualClock) -> EventHub {
    let realm = crate::realm::Realm::new(crate::realm::RealmSettings {
        name: "test".into(),
        subdomain: "test".into(),
        url: String::new(),
        dev: false,
        email_visibility: crate::realm::EmailVisibility::Everyone,
        fake_email_domain: "test.invalid".into(),
        empty_topic_display_name: "general chat".into(),
        date_created: 0,
    });
    EventHub::new(Arc::new(clock), Arc::new(realm))
}

fn event(kind: &str, audience: Audience) -> Event {
    Event::new(json!({"type": kind, "op": "add"}), audience)
}

#[tokio::test]
async fn queue_sees_only_its_events_after_registration() {
    let clock = ManualClock::new(1_000_000);
    let hub = hub(clock.clone());
    hub.publish(vec![event("before", Audience::Everyone)]);
    let (q, _) = hub.register(7, QueueOptions::default());
    hub.publish(vec![
        event("mine", Audience::users(vec![7])),
        event("other", Audience::users(vec![8])),
    ]);
    let evs = hub.get_events(7, &q, Some(-1), true).await.expect("events");
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["type"], "mine");
    assert_eq!(evs[0]["id"], 0);
    // Not acknowledged yet: delivered again; acknowledged: gone.
    assert_eq!(
        hub.get_events(7, &q, Some(-1), true)
            .await
            .expect("again")
            .len(),
        1
    );
    assert!(hub
        .get_events(7, &q, Some(0), true)
        .await
        .expect("acked")
        .is_empty());
    assert_eq!(
        hub.get_events(8, &q, None, true).await.map_err(|e| e.msg),
        Err(format!("Bad event queue ID: {q}"))
    );
}

#[tokio::test]
async fn event_types_filter() {
    let hub = hub(ManualClock::new(0));
    let opts = QueueOptions {
        event_types: Some(["b".to_owned()].into()),
        ..Default::default()
    };
    let (q, _) = hub.register(1, opts);
    hub.publish(vec![
        event("a", Audience::Everyone),
        event("b", Audience::Everyone),
    ]);
    let evs = hub.get_events(1, &q, None, true).await.expect("events");
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["type"], "b");
}

#[tokio::test]
async fn parked_poll_wakes_on_publish_and_heartbeat() {
    let clock = ManualClock::new(0);
    let hub = Arc::new(hub(clock.clone()));
    let (q, _) = hub.register(1, QueueOptions::default());
    let (h, id) = (hub.clone(), q.clone());
    let poll = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
    tokio::task::yield_now().await;
    hub.publish(vec![event("x", Audience::Everyone)]);
    let evs = poll.await.expect("join").expect("events");
    assert_eq!(evs[0]["type"], "x");

    let (h, id) = (hub.clone(), q.clone());
    let poll = tokio::spawn(async move { h.get_events(1, &id, Some(0), false).await });
    tokio::task::yield_now().await;
    hub.tick();
    tokio::task::yield_now().await;
    assert!(!poll.is_finished(), "no heartbeat before a minute");
    clock.advance_ms(HEARTBEAT_MS);
    hub.tick();
    let evs = poll.await.expect("join").expect("events");
    assert_eq!(evs, vec![json!({"type": "heartbeat", "id": 1})]);
}

/// The events a spawned poll answered with (a hang guard of 5 s, not a timing).
async fn answered(poll: tokio::task::JoinHandle<ApiResult<Vec<Value>>>) -> Vec<Value> {
    tokio::time::timeout(std::time::Duration::from_secs(5), poll)
        .await
        .expect("woken")
        .expect("join")
        .expect("events")
}

/// A poll parked in the middle of a second hears its heartbeat at the tick of the
/// second after it is due; ticks in between leave it parked.
#[tokio::test]
async fn heartbeats_come_due_by_the_second_they_fall_in() {
    let clock = ManualClock::new(1_000_400);
    let hub = Arc::new(hub(clock.clone()));
    hub.tick();
    let (q, _) = hub.register(1, QueueOptions::default());
    let (h, id) = (hub.clone(), q.clone());
    let poll = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    for step in [700, 29_000, 30_000] {
        clock.advance_ms(step);
        hub.tick();
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        assert!(!poll.is_finished(), "no heartbeat {step} ms later");
    }
    // 59.7 s after parking; the heartbeat is due at 60.4 s, and is sent by the tick
    // of the second after (at most a second late).
    clock.advance_ms(1000);
    hub.tick();
    assert_eq!(
        answered(poll).await,
        vec![json!({"type": "heartbeat", "id": 0})]
    );
    // A clock that jumps ahead more than a minute still wakes every second's polls.
    let (h, id) = (hub.clone(), q.clone());
    let poll = tokio::spawn(async move { h.get_events(1, &id, Some(0), false).await });
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    clock.advance_ms(5 * HEARTBEAT_MS + 123);
    hub.tick();
    assert_eq!(answered(poll).await[0]["type"], "heartbeat");
}

#[tokio::test]
async fn idle_queues_are_collected_and_answer_bad_queue_id() {
    let clock = ManualClock::new(0);
    let hub = hub(clock.clone());
    let (q, _) = hub.register(1, QueueOptions::default());
    clock.advance_ms(QUEUE_TIMEOUT_MS);
    hub.tick();
    let err = hub.get_events(1, &q, None, true).await.expect_err("gone");
    assert_eq!(err.code, ErrorCode::BadEventQueueId);
    assert_eq!(err.msg, format!("Bad event queue ID: {q}"));
    assert_eq!(err.extra["queue_id"], q);
}

#[tokio::test]
async fn a_poisoned_lock_drops_no_staged_decision_nor_event() {
    let hub = hub(ManualClock::new(0));
    let (q, _) = hub.register(1, QueueOptions::default());
    let poison = |f: &(dyn Fn() + Sync)| {
        let _ = std::thread::scope(|s| s.spawn(f).join());
    };
    poison(&|| {
        let _g = hub.staged.lock();
        panic!("poison staged");
    });
    poison(&|| {
        let _g = hub.log.write();
        panic!("poison log");
    });
    poison(&|| {
        let _g = hub.waker.lock();
        panic!("poison waker");
    });
    assert!(hub.staged.is_poisoned() && hub.log.is_poisoned());
    let mut next = (*hub.current()).clone();
    next.settings.name = "renamed".into();
    let change = Change::User(UserChange::CanCreateUsersSet {
        user_id: 1,
        value: true,
    });
    hub.stage(1, 1, vec![(vec![change], Arc::new(next))]);
    assert_eq!(hub.staged_len(), 1);
    hub.release(1);
    assert_eq!(hub.current().settings.name, "renamed");
    hub.publish(vec![event("x", Audience::Everyone)]);
    let evs = hub.get_events(1, &q, None, true).await.expect("events");
    assert_eq!(evs.last().expect("an event")["type"], "x");

    // Discarded decisions never become visible.
    hub.stage(
        2,
        2,
        vec![(
            vec![Change::User(UserChange::CanCreateUsersSet {
                user_id: 1,
                value: false,
            })],
            Arc::new(crate::realm::Realm::clone(&hub.current())),
        )],
    );
    assert_eq!(hub.discard_staged(), vec![2]);
    hub.release(2);
    assert_eq!(hub.current().settings.name, "renamed");
}

fn log_len(hub: &EventHub) -> usize {
    read(&hub.log).entries.len()
}

#[tokio::test]
async fn nothing_is_logged_for_nobody_and_read_entries_are_pruned() {
    let hub = hub(ManualClock::new(0));
    let default_set = |ticket: u64| {
        let version = Arc::new(crate::realm::Realm::clone(&hub.current()));
        let change = Change::Channel(ChannelChange::DefaultChannelSet {
            channel_id: 1,
            is_default: true,
        });
        hub.stage(ticket, ticket, vec![(vec![change], version)]);
        hub.release(ticket);
    };
    // No queue: a released decision renders nothing, yet counts as rendered.
    default_set(1);
    hub.settled().await;
    assert_eq!(log_len(&hub), 0);

    let (q, _) = hub.register(7, QueueOptions::default());
    default_set(2);
    hub.settled().await;
    assert_eq!(log_len(&hub), 1);
    hub.tick();
    assert_eq!(log_len(&hub), 1, "not read yet");
    // (The realm has no users, so the event is for nobody; the poll reads past it.)
    hub.get_events(7, &q, None, true).await.expect("events");
    hub.tick();
    assert_eq!(log_len(&hub), 0, "read by every queue");
    hub.delete(7, &q).expect("delete");
    default_set(3);
    hub.settled().await;
    assert_eq!(log_len(&hub), 0, "the last queue is gone");
}

#[tokio::test]
async fn a_user_holds_at_most_max_queues_oldest_collected_first() {
    let clock = ManualClock::new(0);
    let hub = hub(clock.clone());
    let ids: Vec<String> = (0..MAX_QUEUES_PER_USER + 2)
        .map(|_| hub.register(1, QueueOptions::default()).0)
        .collect();
    let (other, _) = hub.register(2, QueueOptions::default());
    assert_eq!(hub.queue_count(), MAX_QUEUES_PER_USER + 1);
    let err = hub.get_events(1, &ids[0], None, true).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::BadEventQueueId);
    assert!(hub.get_events(1, &ids[1], None, true).await.is_err());
    assert!(hub.get_events(1, &ids[2], None, true).await.is_ok());
    assert!(hub
        .get_events(1, &ids[ids.len() - 1], None, true)
        .await
        .is_ok());
    assert!(hub.get_events(2, &other, None, true).await.is_ok());
    // A deleted queue frees its place.
    hub.delete(1, &ids[2]).expect("delete");
    hub.register(1, QueueOptions::default());
    assert!(hub.get_events(1, &ids[3], None, true).await.is_ok());
}

#[tokio::test]
async fn queue_lifespan_is_zulips() {
    let clock = ManualClock::new(0);
    let hub = hub(clock.clone());
    let with = |secs| QueueOptions {
        lifespan_secs: secs,
        ..Default::default()
    };
    let (default, _) = hub.register(1, with(0));
    let (short, _) = hub.register(1, with(30));
    let (long, _) = hub.register(1, with(3600));
    let (capped, _) = hub.register(1, with(MAX_QUEUE_TIMEOUT_SECS * 10));
    clock.advance_ms(30_000);
    hub.tick();
    assert_eq!(hub.queue_count(), 3, "the 30 s queue is gone");
    clock.advance_ms(QUEUE_TIMEOUT_MS);
    hub.tick();
    assert!(hub.get_events(1, &default, None, true).await.is_err());
    assert!(hub.get_events(1, &short, None, true).await.is_err());
    assert!(hub.get_events(1, &long, None, true).await.is_ok());
    clock.advance_ms(MAX_QUEUE_TIMEOUT_SECS * 1000);
    hub.tick();
    assert!(hub.get_events(1, &capped, None, true).await.is_err());
}

#[tokio::test]
async fn a_new_poll_finishes_the_previous_one() {
    let hub = Arc::new(hub(ManualClock::new(0)));
    let (q, _) = hub.register(1, QueueOptions::default());
    let (h, id) = (hub.clone(), q.clone());
    let first = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
    tokio::task::yield_now().await;
    let (h, id) = (hub.clone(), q.clone());
    let second = tokio::spawn(async move { h.get_events(1, &id, None, false).await });
    assert_eq!(
        first.await.expect("join").expect("events"),
        Vec::<Value>::new()
    );
    hub.publish(vec![event("x", Audience::Everyone)]);
    assert_eq!(second.await.expect("join").expect("events").len(), 1);
}

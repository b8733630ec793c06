//! What the undo log costs a write to the message store: the same projections made
//! logged (`MessageStore::project` with the WAL record's number, as the realm actor
//! makes them) and unlogged (`None`, as a replay makes them), alternating in rounds on
//! one store so that both see the same trees and the same machine load:
//!
//! 1. a flag change of one message (star, then unstar);
//! 2. a content edit of one message;
//! 3. a move of a whole 500-message topic to another topic and back.
//!
//! `cargo bench --bench undo`. Reports the median per operation of each mode and their
//! ratio; in-process, no HTTP, durability `never` (no flush is timed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use hearth::realm::messages::{flags, EditRecord, Message, MessageChange, Recipient, Wildcard};
use hearth::realm::{dev, Change, Cx, Realm};
use hearth::storage::messages::MessageStore;
use hearth::storage::{DurabilityMode, Store};

const TOPIC_SIZE: u64 = 500;
const TOPICS: u64 = 20;
const ROUNDS: usize = 9;

fn message(realm: &Realm, id: u64, channel: u64, sender: u64, topic: u64) -> Message {
    let content = format!("message {id}: the quick brown fox jumps over the lazy dog");
    Message {
        id,
        sender_id: sender,
        recipient: Recipient::Channel {
            channel_id: channel,
            topic: format!("topic {topic}"),
        },
        rendered_content: format!("<p>{content}</p>"),
        content,
        timestamp: 1_700_000_000 + id as i64,
        client: "bench".into(),
        is_me_message: false,
        mentioned: Vec::new(),
        wildcard: Wildcard::None,
        sender_read: realm.user(sender).is_some(),
        edits: Vec::new(),
        last_edit_timestamp: None,
        last_moved_timestamp: None,
        reactions: Vec::new(),
    }
}

/// Median time per op of `ops` changes projected logged (`logged`) or not.
fn time(
    store: &MessageStore,
    realm: &Realm,
    seq: &mut u64,
    ops: &[Change],
    logged: bool,
) -> Duration {
    let started = Instant::now();
    for c in ops {
        *seq += 1;
        store
            .project(realm, c, logged.then_some((*seq, 0)))
            .expect("project");
    }
    started.elapsed() / ops.len() as u32
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn report(name: &str, unlogged: Vec<Duration>, logged: Vec<Duration>) {
    let (u, l) = (median(unlogged), median(logged));
    println!(
        "{name:<34} unlogged {:>9.1} µs   logged {:>9.1} µs   logged/unlogged {:.2}×",
        u.as_secs_f64() * 1e6,
        l.as_secs_f64() * 1e6,
        l.as_secs_f64() / u.as_secs_f64()
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), DurabilityMode::Never).expect("store");
    let mut rs = store.realm(hearth::DEV_SUBDOMAIN).expect("realm store");
    let mut cx = Cx::seeded(1_700_000_000_000, 7);
    let changes = dev::dev_realm_changes(&mut cx).expect("dev realm");
    let mut realm = hearth::actor::create_realm(&mut rs, &changes).expect("create");
    let rome = realm.channel_by_name("Rome").expect("Rome").id;
    let sender = realm
        .user_by_delivery_email("desdemona@zulip.com")
        .expect("sender")
        .id;
    let reader = realm
        .channel(rome)
        .expect("Rome")
        .subscriber_ids()
        .into_iter()
        .find(|u| *u != sender)
        .expect("another subscriber");
    let msgs = rs.messages().clone();
    store.message_db().db().expect("message database open");
    let first = realm.messages.next_id;
    let mut seq = 1_000_000u64;
    for i in 0..TOPIC_SIZE * TOPICS {
        let m = message(&realm, first + i, rome, sender, i % TOPICS);
        let c = Change::Message(MessageChange::Sent(Box::new(m)));
        msgs.project(&realm, &c, None).expect("project");
        realm.apply(&c);
    }
    println!(
        "{} messages in Rome over {TOPICS} topics; {ROUNDS} rounds per mode, alternating",
        TOPIC_SIZE * TOPICS
    );

    // 1. One flag change: star then unstar, 2 000 messages.
    let star: Vec<Change> = (0..2_000u64)
        .flat_map(|i| {
            [true, false].map(|add| {
                Change::Message(MessageChange::FlagsChanged {
                    user_id: reader,
                    flag: flags::STARRED,
                    add,
                    ids: vec![first + i],
                })
            })
        })
        .collect();
    // 2. One content edit each of 2 000 messages (the row as stored, then edited).
    let edit: Vec<Change> = (0..2_000u64)
        .map(|i| {
            let before = msgs.get(first + i).expect("read").expect("row");
            let mut after = before.clone();
            after.content = format!("{} (edited)", before.content);
            after.rendered_content = format!("<p>{}</p>", after.content);
            after.last_edit_timestamp = Some(1_800_000_000);
            after.edits.push(EditRecord {
                user_id: sender,
                timestamp: 1_800_000_000,
                prev_content: Some(before.content.clone()),
                prev_rendered_content: Some(before.rendered_content.clone()),
                prev_topic: None,
                prev_channel: None,
                topic: None,
                channel: None,
            });
            Change::Message(MessageChange::Edited {
                user_id: sender,
                propagate_mode: "change_one".into(),
                pairs: vec![(before.clone(), after)],
                topic_max: Vec::new(),
            })
        })
        .collect();
    let (mut star_u, mut star_l, mut edit_u, mut edit_l) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        // Each mode goes first in every other round.
        for logged in [round % 2 == 0, round % 2 == 1] {
            let t = time(&msgs, &realm, &mut seq, &star, logged);
            if logged { &mut star_l } else { &mut star_u }.push(t);
            // The edit ops are replayed on rows already edited: the same writes.
            let t = time(&msgs, &realm, &mut seq, &edit, logged);
            if logged { &mut edit_l } else { &mut edit_u }.push(t);
        }
        msgs.trim_undo(seq).expect("trim");
    }
    report("flag change (1 message)", star_u, star_l);
    report("content edit (1 message)", edit_u, edit_l);

    // 3. A whole topic moved away and back.
    let topic_rows: Vec<Message> = (0..TOPIC_SIZE)
        .map(|k| msgs.get(first + k * TOPICS).expect("read").expect("row"))
        .collect();
    let moved = |rows: &[Message], to: &str| -> Vec<(Message, Message)> {
        rows.iter()
            .map(|m| {
                let mut after = m.clone();
                after.recipient = Recipient::Channel {
                    channel_id: rome,
                    topic: to.into(),
                };
                (m.clone(), after)
            })
            .collect()
    };
    let away = moved(&topic_rows, "elsewhere");
    let back_rows: Vec<Message> = away.iter().map(|(_, a)| a.clone()).collect();
    let back = moved(&back_rows, "topic 0");
    let mv = |pairs: Vec<(Message, Message)>| {
        Change::Message(MessageChange::Edited {
            user_id: sender,
            propagate_mode: "change_all".into(),
            pairs,
            topic_max: Vec::new(),
        })
    };
    let there_and_back = [mv(away), mv(back)];
    let (mut move_u, mut move_l) = (vec![], vec![]);
    for round in 0..ROUNDS {
        for logged in [round % 2 == 0, round % 2 == 1] {
            let t = time(&msgs, &realm, &mut seq, &there_and_back, logged);
            if logged { &mut move_l } else { &mut move_u }.push(t);
        }
        msgs.trim_undo(seq).expect("trim");
    }
    report(
        &format!("topic move ({TOPIC_SIZE} messages)"),
        move_u,
        move_l,
    );
    store.durability.shutdown();
}

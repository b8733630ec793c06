//! The seeding both message benches share (`benches/messages.rs`, `benches/archive.rs`):
//! the development realm plus `n` messages, written in-process through the same path
//! the realm actor takes (a WAL record per send, `MessageStore::project`, `apply`), in
//! batches of 10 000 sends, each followed by a snapshot (as the actor's default
//! `--snapshot-every`); to channel `Rome` (5 subscribers) over 1 000 topics,
//! from one sender, ~60 bytes of content each.

use std::path::Path;
use std::time::Instant;

use hearth::realm::messages::{Message, MessageChange, Recipient, Wildcard};
use hearth::realm::{dev, Change, Cx, Realm};
use hearth::storage::{DurabilityMode, Store};

/// The one sender of the seeded messages.
pub const SENDER: &str = "desdemona@zulip.com";
/// Topics the seeded messages are spread over.
pub const TOPICS: u64 = 1_000;
const BATCH: usize = 10_000;

/// The development realm plus `n` messages in `Rome`; returns the realm (for keys).
#[allow(dead_code)]
pub fn seed(dir: &Path, n: u64) -> Realm {
    seed_with(dir, n, &|i| {
        format!("message {i}: the quick brown fox jumps over the lazy dog")
    })
}

/// `seed` with the content of message `i` from `content`. The search index is not
/// written: the server builds it from the rows at its first start.
pub fn seed_with(dir: &Path, n: u64, content: &dyn Fn(u64) -> String) -> Realm {
    hearth::storage::messages::search::set_enabled(false);
    let store = Store::open(dir, DurabilityMode::Never).expect("store");
    let mut rs = store.realm(hearth::DEV_SUBDOMAIN).expect("realm store");
    let mut cx = Cx::seeded(1_700_000_000_000, 7);
    let changes = dev::dev_realm_changes(&mut cx).expect("dev realm");
    let mut realm = hearth::actor::create_realm(&mut rs, &changes).expect("create");
    let rome = realm.channel_by_name("Rome").expect("Rome").id;
    let sender = realm.user_by_delivery_email(SENDER).expect("sender").id;
    let mut batch: Vec<Change> = Vec::with_capacity(BATCH);
    let started = Instant::now();
    for i in 0..n {
        let content = content(i);
        let m = Message {
            id: realm.messages.next_id + batch.len() as u64,
            sender_id: sender,
            recipient: Recipient::Channel {
                channel_id: rome,
                topic: format!("topic {}", i % TOPICS),
            },
            rendered_content: format!("<p>{content}</p>"),
            content,
            timestamp: 1_700_000_000 + i as i64,
            client: "bench".into(),
            is_me_message: false,
            mentioned: Vec::new(),
            wildcard: Wildcard::None,
            sender_read: true,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        };
        batch.push(Change::Message(MessageChange::Sent(Box::new(m))));
        if batch.len() == BATCH || i + 1 == n {
            // One WAL record per send, as the realm actor writes them (a record of
            // 10 000 sends is a 1.6 MB value, which sled keeps in a blob file of its
            // own that outlives the record).
            for c in &batch {
                rs.append(std::slice::from_ref(c)).expect("append");
            }
            for c in &batch {
                rs.messages().project(&realm, c, None).expect("project");
                realm.apply(c);
            }
            batch.clear();
            // A snapshot every 10 000 records, as `serve --snapshot-every`'s default:
            // the WAL never holds more (its records are deleted by the snapshot).
            rs.snapshot(&realm).expect("snapshot");
        }
    }
    rs.snapshot(&realm).expect("snapshot");
    store.durability.flush_now().expect("flush");
    store.durability.shutdown();
    if n > 0 {
        println!(
            "seeded {n} messages in {:.1} s ({:.0} messages/s)",
            started.elapsed().as_secs_f64(),
            n as f64 / started.elapsed().as_secs_f64()
        );
    }
    realm
}

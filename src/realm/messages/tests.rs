//! The message rules against rows in memory (`MemRows`): who may read a message,
//! flags, a propagated topic move, deletion, and the uploads a message claims and
//! releases.

use std::sync::Arc;

use super::edit::{DeleteMessage, EditRequest, Propagate};
use super::flags::{FlagsRequest, READ, STARRED};
use super::rows::MemRows;
use super::send::{Addressee, ChannelRef};
use super::{MessageChange, MessageId, TopicMax};
use crate::error::ApiResult;
use crate::realm::attachments::{AttachmentChange, StoredUpload};
use crate::realm::{Change, Cx, Decided, Realm, User};

const NOW_MS: i64 = 1_700_000_000_000;

/// The development realm, and its message rows.
fn world() -> (Realm, MemRows) {
    (
        crate::realm::dev::testing::dev_realm(&mut Cx::seeded(NOW_MS, 7)),
        MemRows::default(),
    )
}

fn user(realm: &Realm, email: &str) -> User {
    realm
        .user_by_delivery_email(email)
        .unwrap_or_else(|| panic!("{email}"))
        .clone()
}

/// A context reading (a copy of) `rows`.
fn cx(rows: &MemRows) -> Cx {
    Cx::seeded(NOW_MS + 1000, 1).with_rows(Arc::new(rows.clone()))
}

/// Runs a rule as the actor does; on success, writes its changes (rows first, as the
/// store's projection precedes `apply`).
fn run<Q, A>(
    realm: &mut Realm,
    rows: &mut MemRows,
    me: &User,
    q: Q,
    rule: fn(&Realm, &User, Q, &mut Cx) -> ApiResult<Decided<A>>,
) -> ApiResult<(Vec<Change>, A)> {
    let decided = rule(realm, me, q, &mut cx(rows))?;
    for c in &decided.changes {
        rows.project(realm, c);
        realm.apply(c);
    }
    Ok((decided.changes, decided.answer))
}

fn to_channel(name: &str, topic: &str) -> Addressee {
    Addressee::Channel {
        channel: ChannelRef::Name(name.into()),
        topic: topic.into(),
    }
}

fn send(realm: &mut Realm, rows: &mut MemRows, me: &User, to: Addressee, text: &str) -> MessageId {
    let q = realm
        .send_request(rows, to, text.into(), "test".into(), false)
        .expect("prepared");
    run(realm, rows, me, q, Realm::decide_send).expect("sent").1
}

fn err<T>(r: ApiResult<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.msg,
    }
}

#[test]
fn access_follows_who_may_read() {
    let (mut realm, mut rows) = world();
    let hamlet = user(&realm, "hamlet@zulip.com");
    let othello = user(&realm, "othello@zulip.com");
    let cordelia = user(&realm, "cordelia@zulip.com");
    let polonius = user(&realm, "polonius@zulip.com");
    let verona = send(
        &mut realm,
        &mut rows,
        &hamlet,
        to_channel("Verona", "t"),
        "hi",
    );
    let denmark = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Denmark", "t"),
        "hej",
    );
    let core = send(
        &mut realm,
        &mut rows,
        &cordelia,
        to_channel("core team", "t"),
        "x",
    );
    let dm = send(
        &mut realm,
        &mut rows,
        &hamlet,
        Addressee::Direct {
            ids: vec![othello.id as i64],
            emails: Vec::new(),
        },
        "psst",
    );
    let can = |me: &User, id: MessageId| realm.access_message(&rows, me, id as i64).is_ok();
    // Recipients read what they received.
    assert!(can(&othello, verona) && can(&polonius, verona));
    assert!(can(&othello, dm) && can(&hamlet, dm));
    // A public channel's history is open to members, not to guests.
    assert!(can(&hamlet, denmark));
    let (_, flags) = realm
        .access_message(&rows, &hamlet, denmark as i64)
        .expect("read");
    assert_eq!(flags, None);
    assert!(can(&polonius, denmark), "polonius is subscribed to Denmark");
    // A private channel and someone else's conversation are not.
    assert!(!can(&hamlet, core));
    assert!(!can(&cordelia, dm));
    assert_eq!(
        err(realm.access_message(&rows, &cordelia, dm as i64)),
        "Invalid message(s)"
    );
    // Ids that do not exist (yet) or cannot.
    assert!(!can(&hamlet, realm.messages.next_id));
    assert_eq!(
        err(realm.access_message(&rows, &hamlet, -1)),
        "Invalid message(s)"
    );
}

#[test]
fn flags_change_only_what_differs() {
    let (mut realm, mut rows) = world();
    let hamlet = user(&realm, "hamlet@zulip.com");
    let othello = user(&realm, "othello@zulip.com");
    let cordelia = user(&realm, "cordelia@zulip.com");
    let received = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "t"),
        "a",
    );
    let history = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Denmark", "t"),
        "b",
    );
    let private = send(
        &mut realm,
        &mut rows,
        &cordelia,
        to_channel("core team", "t"),
        "c",
    );
    assert_eq!(rows.flags.get(&(hamlet.id, received)), Some(&0));
    let flags = |ids: Vec<MessageId>, add: bool, flag: u32| FlagsRequest {
        ids: ids.into_iter().map(|i| i as i64).collect(),
        add,
        flag,
    };
    let mark = |realm: &mut Realm, rows: &mut MemRows, q| {
        run(realm, rows, &hamlet, q, Realm::decide_update_flags)
    };

    let (changes, n) = mark(
        &mut realm,
        &mut rows,
        flags(vec![received, received], true, READ),
    )
    .expect("read");
    assert_eq!(n, 1);
    assert_eq!(
        changes,
        vec![Change::Message(MessageChange::FlagsChanged {
            user_id: hamlet.id,
            flag: READ,
            add: true,
            ids: vec![received],
        })]
    );
    // Already read: nothing to change.
    let (changes, n) =
        mark(&mut realm, &mut rows, flags(vec![received], true, READ)).expect("again");
    assert!(changes.is_empty() && n == 0);
    // A message not received is read already; starring it makes it historical.
    let (changes, n) = mark(&mut realm, &mut rows, flags(vec![history], true, READ)).expect("noop");
    assert!(changes.is_empty() && n == 0);
    let (_, n) = mark(&mut realm, &mut rows, flags(vec![history], true, STARRED)).expect("star");
    assert_eq!(n, 1);
    assert_eq!(
        rows.flags.get(&(hamlet.id, history)),
        Some(&(READ | super::flags::HISTORICAL | STARRED))
    );
    // One that cannot be read is refused, as is an id that cannot be one.
    assert_eq!(
        err(mark(
            &mut realm,
            &mut rows,
            flags(vec![private], true, STARRED)
        )),
        "Invalid message(s)"
    );
    let negative = FlagsRequest {
        ids: vec![-3],
        add: true,
        flag: STARRED,
    };
    assert_eq!(
        err(mark(&mut realm, &mut rows, negative)),
        "Invalid message(s)"
    );
}

#[test]
fn a_propagated_move_takes_the_rest_of_the_topic() {
    let (mut realm, mut rows) = world();
    let othello = user(&realm, "othello@zulip.com");
    let iago = user(&realm, "iago@zulip.com");
    let first = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "old"),
        "1",
    );
    let second = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "old"),
        "2",
    );
    let third = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "old"),
        "3",
    );
    send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "other"),
        "4",
    );
    let verona = realm.channel_by_name("Verona").expect("Verona").id;
    let edit = EditRequest {
        content: None,
        rendered: None,
        topic: Some("new".into()),
        channel_id: None,
        propagate: Propagate::Later,
        topic_participants: Vec::new(),
    };
    let q = realm
        .update_message_request(
            &rows,
            second as i64,
            edit,
            (false, true),
            "https://chat.example".into(),
        )
        .expect("prepared");
    // The worker read the whole topic.
    let others: Vec<MessageId> = q.others.iter().map(|m| m.id).collect();
    assert_eq!(others, vec![first, second, third]);
    let notice_id = realm.messages.next_id;
    let (changes, detached) = run(
        &mut realm,
        &mut rows,
        &iago,
        q,
        Realm::decide_update_message,
    )
    .expect("moved");
    assert!(detached.is_empty());
    let Change::Message(MessageChange::Edited {
        pairs, topic_max, ..
    }) = &changes[0]
    else {
        panic!("an edit first: {changes:?}");
    };
    // The named message first, then the later ones; the first stays.
    let moved: Vec<MessageId> = pairs.iter().map(|(_, a)| a.id).collect();
    assert_eq!(moved, vec![second, third]);
    assert!(pairs
        .iter()
        .all(|(_, a)| a.recipient.is_topic(verona, "new")));
    assert_eq!(
        topic_max,
        &vec![
            TopicMax {
                channel_id: verona,
                topic: "new".into(),
                max_id: Some(third),
            },
            TopicMax {
                channel_id: verona,
                topic: "old".into(),
                max_id: Some(first),
            },
        ]
    );
    // The Notification Bot tells the new topic.
    let notices: Vec<&super::Message> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Message(MessageChange::Notice { message, .. }) => Some(&**message),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].id, notice_id);
    assert!(notices[0].recipient.is_topic(verona, "new"));
    assert!(
        notices[0]
            .content
            .starts_with("2 messages were moved here from #**Verona>old** by"),
        "{}",
        notices[0].content
    );
    // The rows and the realm's topics agree.
    assert!(rows.rows[&first].recipient.is_topic(verona, "old"));
    assert!(rows.rows[&third].recipient.is_topic(verona, "new"));
    let topics = &realm.messages.topics[&verona];
    assert_eq!(topics["old"].max_id, first);
    assert_eq!(topics["new"].max_id, notice_id);
}

#[test]
fn a_deletion_is_checked_and_leaves_its_topic_consistent() {
    let (mut realm, mut rows) = world();
    let othello = user(&realm, "othello@zulip.com");
    let hamlet = user(&realm, "hamlet@zulip.com");
    let iago = user(&realm, "iago@zulip.com");
    let first = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "t"),
        "1",
    );
    let second = send(
        &mut realm,
        &mut rows,
        &othello,
        to_channel("Verona", "t"),
        "2",
    );
    let delete = |id: MessageId| DeleteMessage { id: id as i64 };
    assert_eq!(
        err(run(
            &mut realm,
            &mut rows,
            &hamlet,
            delete(second),
            Realm::decide_delete_message
        )),
        "You don't have permission to delete this message"
    );
    let (changes, detached) = run(
        &mut realm,
        &mut rows,
        &iago,
        delete(second),
        Realm::decide_delete_message,
    )
    .expect("deleted");
    assert!(detached.is_empty());
    let verona = realm.channel_by_name("Verona").expect("Verona").id;
    let Change::Message(MessageChange::Deleted {
        messages,
        topic_max,
    }) = &changes[0]
    else {
        panic!("a deletion: {changes:?}");
    };
    assert_eq!(
        messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![second]
    );
    assert_eq!(
        topic_max,
        &vec![TopicMax {
            channel_id: verona,
            topic: "t".into(),
            max_id: Some(first),
        }]
    );
    assert_eq!(realm.messages.topics[&verona]["t"].max_id, first);
    // Gone: no one reads it, no one deletes it again.
    assert!(realm
        .access_message(&rows, &othello, second as i64)
        .is_err());
    assert_eq!(
        err(run(
            &mut realm,
            &mut rows,
            &iago,
            delete(second),
            Realm::decide_delete_message
        )),
        "Invalid message(s)"
    );
    // The last message of a topic empties it.
    let (changes, _) = run(
        &mut realm,
        &mut rows,
        &iago,
        delete(first),
        Realm::decide_delete_message,
    )
    .expect("deleted");
    assert!(matches!(
        &changes[0],
        Change::Message(MessageChange::Deleted { topic_max, .. })
            if topic_max[0].max_id.is_none()
    ));
    assert!(!realm.messages.topics[&verona].contains_key("t"));
}

#[test]
fn uploads_are_claimed_and_released() {
    let (mut realm, mut rows) = world();
    let hamlet = user(&realm, "hamlet@zulip.com");
    let othello = user(&realm, "othello@zulip.com");
    let upload = |realm: &mut Realm, name: &str| {
        let stored = StoredUpload {
            name: name.into(),
            size: 10,
            sha256: format!("sha-{name}"),
            content_type: "text/plain".into(),
        };
        let decided = realm
            .decide_create_attachment(&hamlet, stored, &mut Cx::seeded(NOW_MS, 3))
            .unwrap();
        decided.changes.iter().for_each(|c| realm.apply(c));
        decided.answer
    };
    let a = upload(&mut realm, "a.txt");
    let b = upload(&mut realm, "b.txt");
    let link = |path: &str| format!("[file](/user_uploads/{path})");
    let claims = |changes: &[Change]| -> Vec<MessageId> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Attachment(AttachmentChange::Claimed { message_id, .. }) => {
                    Some(*message_id)
                }
                _ => None,
            })
            .collect()
    };

    // Othello may not claim Hamlet's upload: he cannot read any message with it.
    let q = realm
        .send_request(
            &rows,
            to_channel("Verona", "files"),
            link(&a),
            "test".into(),
            false,
        )
        .expect("prepared");
    let (changes, _) = run(&mut realm, &mut rows, &othello, q, Realm::decide_send).expect("sent");
    assert!(claims(&changes).is_empty());
    // Hamlet's message claims both of his.
    let q = realm
        .send_request(
            &rows,
            to_channel("Verona", "files"),
            format!("{} {}", link(&a), link(&b)),
            "test".into(),
            false,
        )
        .expect("prepared");
    let (changes, id) = run(&mut realm, &mut rows, &hamlet, q, Realm::decide_send).expect("sent");
    assert_eq!(claims(&changes), vec![id]);
    assert!(realm
        .attachment_by_path(&a)
        .expect("a")
        .messages
        .contains_key(&id));

    // An edit that drops `a` releases it and reports it detached (no other message).
    let edit = EditRequest {
        content: Some(link(&b)),
        rendered: None,
        topic: None,
        channel_id: None,
        propagate: Propagate::One,
        topic_participants: Vec::new(),
    };
    let q = realm
        .update_message_request(&rows, id as i64, edit, (false, true), String::new())
        .expect("prepared");
    let (changes, detached) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        q,
        Realm::decide_update_message,
    )
    .expect("edited");
    assert_eq!(
        detached
            .iter()
            .map(|a| a.path_id.clone())
            .collect::<Vec<_>>(),
        vec![a.clone()]
    );
    assert!(changes.iter().any(|c| matches!(
        c,
        Change::Attachment(AttachmentChange::Released { message_id, deleted, .. })
            if *message_id == id && deleted.is_empty()
    )));
    assert!(realm
        .attachment_by_path(&a)
        .expect("kept until swept")
        .messages
        .is_empty());

    // Deleting the message releases `b` and deletes its attachment with it.
    let (changes, detached) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        DeleteMessage { id: id as i64 },
        Realm::decide_delete_message,
    )
    .expect("deleted");
    assert_eq!(
        detached
            .iter()
            .map(|a| a.sha256.clone())
            .collect::<Vec<_>>(),
        vec!["sha-b.txt".to_owned()]
    );
    assert!(changes.iter().any(|c| matches!(
        c,
        Change::Attachment(AttachmentChange::Released { deleted, .. }) if deleted.len() == 1
    )));
    assert!(realm.attachment_by_path(&b).is_none());
}

#[test]
fn mark_as_read_in_bulk() {
    use super::read::{MarkAllRead, MarkChannelRead};
    let (mut realm, mut rows) = world();
    let hamlet = user(&realm, "hamlet@zulip.com");
    let othello = user(&realm, "othello@zulip.com");
    let mut sent = Vec::new();
    for topic in ["a", "a", "B", "c"] {
        sent.push(send(
            &mut realm,
            &mut rows,
            &othello,
            to_channel("Verona", topic),
            "x",
        ));
    }
    let unread = |rows: &MemRows| -> Vec<MessageId> {
        sent.iter()
            .copied()
            .filter(|id| rows.flags.get(&(hamlet.id, *id)) == Some(&0))
            .collect()
    };
    let channel = |topic: Option<&str>| MarkChannelRead {
        stream_id: realm.channel_by_name("Verona").expect("Verona").id as i64,
        topic: topic.map(str::to_owned),
    };
    let (q_a, q_unknown, q_all) = (channel(Some("A")), channel(Some("zzz")), channel(None));

    // A topic, case-insensitively: the same change `POST /messages/flags` makes.
    let (changes, n) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        q_a,
        Realm::decide_mark_channel_read,
    )
    .expect("topic");
    assert_eq!(n, 2);
    assert_eq!(
        changes,
        vec![Change::Message(MessageChange::FlagsChanged {
            user_id: hamlet.id,
            flag: READ,
            add: true,
            ids: vec![sent[0], sent[1]],
        })]
    );
    assert_eq!(unread(&rows), vec![sent[2], sent[3]]);
    assert_eq!(
        err(run(
            &mut realm,
            &mut rows,
            &hamlet,
            q_unknown,
            Realm::decide_mark_channel_read
        )),
        "No such topic 'zzz'"
    );
    let bad = MarkChannelRead {
        stream_id: 99_999,
        topic: None,
    };
    assert_eq!(
        err(run(
            &mut realm,
            &mut rows,
            &hamlet,
            bad,
            Realm::decide_mark_channel_read
        )),
        "Invalid channel ID"
    );

    // All, one message per batch: newest first, `complete` once none is left.
    let (changes, complete) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        MarkAllRead { batch: 1 },
        Realm::decide_mark_all_as_read,
    )
    .expect("batch");
    assert!(!complete);
    assert_eq!(
        changes,
        vec![Change::Message(MessageChange::FlagsChanged {
            user_id: hamlet.id,
            flag: READ,
            add: true,
            ids: vec![sent[3]],
        })]
    );
    let (_, complete) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        MarkAllRead { batch: 1 },
        Realm::decide_mark_all_as_read,
    )
    .expect("last");
    assert!(complete);
    assert!(unread(&rows).is_empty());
    // Nothing left: no change, and the channel too has nothing to mark.
    let (changes, complete) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        MarkAllRead { batch: 1 },
        Realm::decide_mark_all_as_read,
    )
    .expect("none");
    assert!(changes.is_empty() && complete);
    let (changes, n) = run(
        &mut realm,
        &mut rows,
        &hamlet,
        q_all,
        Realm::decide_mark_channel_read,
    )
    .expect("channel");
    assert!(changes.is_empty() && n == 0);
}

#[test]
fn a_topic_is_deleted_one_batch_at_a_time() {
    use super::edit::DeleteTopic;
    let (mut realm, mut rows) = world();
    let hamlet = user(&realm, "hamlet@zulip.com");
    let iago = user(&realm, "iago@zulip.com");
    let verona = realm.channel_by_name("Verona").expect("Verona").id;
    let ids: Vec<MessageId> = (0..5)
        .map(|i| {
            send(
                &mut realm,
                &mut rows,
                &hamlet,
                to_channel("Verona", "doomed"),
                &format!("m{i}"),
            )
        })
        .collect();
    let kept = send(
        &mut realm,
        &mut rows,
        &hamlet,
        to_channel("Verona", "kept"),
        "stays",
    );
    let q = || DeleteTopic {
        stream_id: verona as i64,
        topic: "DOOMED".into(),
        batch: 2,
    };
    assert_eq!(
        err(run(
            &mut realm,
            &mut rows,
            &hamlet,
            q(),
            Realm::decide_delete_topic
        )),
        "Must be an organization administrator"
    );
    // Newest first, two per request.
    let mut deleted = Vec::new();
    let mut answers = Vec::new();
    for _ in 0..4 {
        let (changes, complete) = run(
            &mut realm,
            &mut rows,
            &iago,
            q(),
            Realm::decide_delete_topic,
        )
        .expect("deleted");
        answers.push(complete);
        for c in changes {
            if let Change::Message(MessageChange::Deleted { messages, .. }) = c {
                deleted.push(messages.iter().map(|m| m.id).collect::<Vec<_>>());
            }
        }
    }
    assert_eq!(answers, vec![false, false, true, true]);
    assert_eq!(
        deleted,
        vec![vec![ids[3], ids[4]], vec![ids[1], ids[2]], vec![ids[0]]]
    );
    assert!(!realm.messages.topics[&verona].contains_key("doomed"));
    assert!(realm.access_message(&rows, &hamlet, kept as i64).is_ok());
}

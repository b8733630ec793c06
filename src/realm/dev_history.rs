//! The development realm's message history: a few conversations in several channels,
//! topics, a direct message and a group direct message, with reactions, so that every
//! client has something to show on a first start (Zulip's development server starts
//! with a populated database). Written when the realm is seeded, as `Sent`,
//! `ReactionAdded` and `FlagsChanged` changes, through the normal message store path.
//!
//! Deterministic: the same messages in the same order every time (only their times
//! follow the clock). Everyone has read everything except King Hamlet, who has
//! `HAMLET_UNREAD` messages unread, one of them mentioning him.

use super::emoji::unicode_emoji_code;
use super::messages::moves::WELCOME_BOT_ID;
use super::messages::{flags, Message, MessageChange, MessageId, Reaction, Recipient};
use super::onboarding::{
    OnboardingTopic, ZULIP_DISCUSSION_CHANNEL_NAME, ZULIP_SANDBOX_CHANNEL_NAME,
};
use super::{Change, Cx, Realm, UserId};

/// How many messages King Hamlet has not read.
pub const HAMLET_UNREAD: usize = 5;

/// Where a scripted message goes.
enum To {
    Channel(&'static str, &'static str),
    Direct(&'static [&'static str]),
}

/// One scripted message: sender, where, text, whether hamlet leaves it unread, and
/// reactions (user, emoji name).
struct Line {
    from: &'static str,
    to: To,
    text: &'static str,
    hamlet_unread: bool,
    reactions: &'static [(&'static str, &'static str)],
}

const fn line(from: &'static str, to: To, text: &'static str) -> Line {
    Line {
        from,
        to,
        text,
        hamlet_unread: false,
        reactions: &[],
    }
}

const fn unread(from: &'static str, to: To, text: &'static str) -> Line {
    Line {
        from,
        to,
        text,
        hamlet_unread: true,
        reactions: &[],
    }
}

const IAGO: &str = "iago@zulip.com";
const HAMLET: &str = "hamlet@zulip.com";
const OTHELLO: &str = "othello@zulip.com";
const CORDELIA: &str = "cordelia@zulip.com";
const PROSPERO: &str = "prospero@zulip.com";
const DESDEMONA: &str = "desdemona@zulip.com";
const POLONIUS: &str = "polonius@zulip.com";
const SHIVA: &str = "shiva@zulip.com";
const ZOE: &str = "ZOE@zulip.com";

const IAGO_HAMLET: &[&str] = &[IAGO, HAMLET];
const HAMLET_IAGO_OTHELLO: &[&str] = &[HAMLET, IAGO, OTHELLO];

fn script() -> Vec<Line> {
    use To::{Channel, Direct};
    vec![
        Line {
            reactions: &[(HAMLET, "+1"), (OTHELLO, "+1")],
            ..line(
                IAGO,
                Channel("Verona", "test suite"),
                "Has anyone run the whole test suite since the storage change landed?",
            )
        },
        line(
            HAMLET,
            Channel("Verona", "test suite"),
            "I did this morning: everything passed on my machine.",
        ),
        line(OTHELLO, Channel("Verona", "test suite"), "Same here. :+1:"),
        line(
            POLONIUS,
            Channel("Denmark", "castle"),
            "The watch saw something on the battlements again last night.",
        ),
        line(
            OTHELLO,
            Channel("Denmark", "castle"),
            "Then we keep watch with them tonight.",
        ),
        line(
            DESDEMONA,
            Channel("devel", "release plan"),
            "The release branch is cut on Thursday: please land large changes before then.",
        ),
        line(
            IAGO,
            Channel("devel", "release plan"),
            "The importer migration will be ready by Wednesday.",
        ),
        line(
            SHIVA,
            Channel("devel", "release plan"),
            "I am going through the open reviews now.",
        ),
        line(
            CORDELIA,
            Channel("design", "sidebar colors"),
            "Here is a proposal for the sidebar colors: **lighter** headers, *softer* \
             borders.",
        ),
        Line {
            reactions: &[(CORDELIA, "heart")],
            ..line(
                CORDELIA,
                Channel("Verona", "lunch"),
                "Lunch at the usual place at noon?",
            )
        },
        line(HAMLET, Channel("Verona", "lunch"), "Count me in."),
        line(
            IAGO,
            Direct(IAGO_HAMLET),
            "Hamlet, could you look at my importer change when you have a moment?",
        ),
        line(HAMLET, Direct(IAGO_HAMLET), "Sure, after lunch."),
        line(
            OTHELLO,
            Direct(HAMLET_IAGO_OTHELLO),
            "Shall the three of us meet about the roadmap tomorrow?",
        ),
        line(
            HAMLET,
            Direct(HAMLET_IAGO_OTHELLO),
            "Tomorrow morning suits me.",
        ),
        line(
            ZOE,
            Channel("social", "books"),
            "Any recommendations for a long train ride?",
        ),
        line(
            HAMLET,
            Channel("social", "books"),
            "*The Tempest*: @**Prospero from The Tempest** will surely approve.",
        ),
        // What King Hamlet has not read yet.
        Line {
            reactions: &[(ZOE, "book")],
            ..unread(PROSPERO, Channel("social", "books"), "I approve. :book:")
        },
        unread(
            PROSPERO,
            Channel("Verona", "lunch"),
            "Running late: save me a seat!",
        ),
        unread(
            DESDEMONA,
            Channel("devel", "release plan"),
            "@**King Hamlet** could you read the release notes before Thursday?",
        ),
        unread(IAGO, Direct(IAGO_HAMLET), "Thanks!"),
        unread(IAGO, Direct(HAMLET_IAGO_OTHELLO), "Ten o'clock, then."),
    ]
}

/// The history's changes, for a development realm whose seeding `first` holds.
pub fn history_changes(first: &[Change], cx: &Cx) -> Result<Vec<Change>, String> {
    let mut realm = first
        .first()
        .and_then(Realm::from_first_change)
        .ok_or("a realm starts with RealmCreated")?;
    first.iter().for_each(|c| realm.apply(c));
    let id_of = |realm: &Realm, email: &str| {
        realm
            .user_by_delivery_email(email)
            .map(|u| u.id)
            .ok_or_else(|| format!("the development realm has no {email}"))
    };
    let hamlet = id_of(&realm, HAMLET)?;
    let lines = script();
    // The Welcome Bot's conversations in the realm's Zulip and sandbox channels (the
    // development realm has no "general").
    let (mut changes, _) = realm.initial_message_changes(
        |t| match t {
            OnboardingTopic::MovingMessages | OnboardingTopic::WelcomeToZulip => {
                Some(ZULIP_DISCUSSION_CHANNEL_NAME)
            }
            OnboardingTopic::Experiments | OnboardingTopic::StartConversation => {
                Some(ZULIP_SANDBOX_CHANNEL_NAME)
            }
            OnboardingTopic::Greetings => None,
        },
        cx,
    );
    let total = changes
        .iter()
        .filter(|c| matches!(c, Change::Message(MessageChange::Sent(_))))
        .count()
        + lines.len();
    // One message every seven minutes, the last one now.
    let now = cx.now_secs();
    let time_of = |id: MessageId| now - 7 * 60 * (total as i64 - id as i64);
    for c in &mut changes {
        if let Change::Message(MessageChange::Sent(m)) = c {
            m.timestamp = time_of(m.id);
        }
    }
    changes.iter().for_each(|c| realm.apply(c));
    let mut read: std::collections::BTreeMap<UserId, Vec<MessageId>> = Default::default();
    for c in &changes {
        if let Change::Message(MessageChange::Sent(m)) = c {
            for (u, _) in realm.message_recipients(m) {
                if u != WELCOME_BOT_ID {
                    read.entry(u).or_default().push(m.id);
                }
            }
        }
    }
    for l in &lines {
        let sender = id_of(&realm, l.from)?;
        let recipient = match &l.to {
            To::Channel(name, topic) => Recipient::Channel {
                channel_id: realm
                    .channel_by_name(name)
                    .ok_or_else(|| format!("the development realm has no channel {name}"))?
                    .id,
                topic: (*topic).to_owned(),
            },
            To::Direct(emails) => {
                let mut users = emails
                    .iter()
                    .map(|e| id_of(&realm, e))
                    .collect::<Result<Vec<_>, _>>()?;
                users.sort_unstable();
                Recipient::Direct { users }
            }
        };
        let id = realm.messages.next_id;
        let rendered = realm.render_message(l.text);
        let mentioned = realm.mentioned_recipients(&recipient, &rendered.mentioned, sender);
        let m = Message {
            id,
            sender_id: sender,
            recipient: recipient.clone(),
            content: l.text.to_owned(),
            rendered_content: rendered.html,
            timestamp: time_of(id),
            client: "populate_db".to_owned(),
            is_me_message: false,
            mentioned,
            wildcard: rendered.wildcard,
            sender_read: true,
            edits: Vec::new(),
            last_edit_timestamp: None,
            last_moved_timestamp: None,
            reactions: Vec::new(),
        };
        for (u, _) in realm.message_recipients(&m) {
            if u != sender && !(u == hamlet && l.hamlet_unread) {
                read.entry(u).or_default().push(id);
            }
        }
        let mut batch = vec![Change::Message(MessageChange::Sent(Box::new(m)))];
        for (who, emoji) in l.reactions {
            batch.push(Change::Message(MessageChange::ReactionAdded {
                message_id: id,
                recipient: recipient.clone(),
                reaction: Reaction {
                    user_id: id_of(&realm, who)?,
                    emoji_name: (*emoji).to_owned(),
                    emoji_code: unicode_emoji_code(emoji)
                        .ok_or_else(|| format!("no emoji {emoji}"))?
                        .to_owned(),
                    reaction_type: "unicode_emoji".to_owned(),
                },
            }));
        }
        batch.iter().for_each(|c| realm.apply(c));
        changes.extend(batch);
    }
    for (user_id, ids) in read {
        changes.push(Change::Message(MessageChange::FlagsChanged {
            user_id,
            flag: flags::READ,
            add: true,
            ids,
        }));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::seed_changes;

    #[test]
    fn the_history_is_the_same_every_time_and_leaves_hamlet_a_few_unread() {
        let mut cx = Cx::seeded(1_700_000_000_000, 7);
        let first = seed_changes(&mut cx).expect("seed");
        let a = history_changes(&first, &cx).expect("history");
        let b = history_changes(&first, &cx).expect("history");
        assert_eq!(a, b);
        let sent: Vec<&Message> = a
            .iter()
            .filter_map(|c| match c {
                Change::Message(MessageChange::Sent(m)) => Some(&**m),
                _ => None,
            })
            .collect();
        assert_eq!(sent.len(), script().len() + 10);
        assert!(sent.windows(2).all(|w| w[0].id + 1 == w[1].id));
        assert!(sent.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
        assert!(sent
            .iter()
            .any(|m| matches!(&m.recipient, Recipient::Direct { users } if users.len() == 3)));
        let mut realm = Realm::from_first_change(&first[0]).expect("realm");
        first.iter().for_each(|c| realm.apply(c));
        let hamlet = realm.user_by_delivery_email(HAMLET).expect("hamlet").id;
        let hamlet_gets: usize = sent
            .iter()
            .filter(|m| {
                realm
                    .message_recipients(m)
                    .iter()
                    .any(|(u, _)| *u == hamlet)
            })
            .filter(|m| m.sender_id != hamlet)
            .count();
        let hamlet_read: usize = a
            .iter()
            .filter_map(|c| match c {
                Change::Message(MessageChange::FlagsChanged { user_id, ids, .. })
                    if *user_id == hamlet =>
                {
                    Some(ids.len())
                }
                _ => None,
            })
            .sum();
        assert_eq!(hamlet_gets - hamlet_read, HAMLET_UNREAD);
    }
}

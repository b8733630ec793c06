//! Missed-message emails: the schedule of emails the server owes people who were away
//! when a message for them arrived (Zulip's `ScheduledMessageNotificationEmail`).
//!
//! A message's candidates are decided with the message (`MailChange::Queued` beside
//! `Sent`), so the promise is exactly as durable as the message: one entry per person
//! and message, with the strongest reason it may deserve an email (`MailTrigger`) and
//! when it falls due (the sending time plus the person's
//! `email_notifications_batching_period_seconds`).
//!
//! The mail worker (`missed_mail/`) reads the published schedule. When one of a
//! person's entries falls due it takes all of theirs, keeps those that still deserve
//! an email at that moment (`Realm::mail_trigger_now`: unread, not deleted, sender and
//! conversation not muted, the settings still asking for it) and that found the person
//! away, sends one email per conversation, and records the entries as done
//! (`decide_missed_mail_done`). Whether someone was away (no event queue receiving
//! messages, or no `active` presence for Zulip's 140 seconds) is soft state of the
//! event hub, not of the realm: the worker judges it when it first sees an entry.
//!
//! Zulip's triggers, strongest first (`get_email_notification_trigger`):
//!
//! | Trigger | When | Setting |
//! |---------|------|---------|
//! | `DirectMessage` | a direct message | `enable_offline_email_notifications` |
//! | `Mention` | a personal or group mention | `enable_offline_email_notifications` |
//! | `WildcardMentionInFollowedTopic` | `@**all**`/`@**topic**` in a followed topic | `enable_offline_email_notifications` and `enable_followed_topic_wildcard_mentions_notify` |
//! | `WildcardMention` | `@**all**`/`@**topic**` | `enable_offline_email_notifications` and the subscription's (else the user's) `wildcard_mentions_notify` |
//! | `FollowedTopic` | a message in a followed topic | `enable_followed_topic_email_notifications` |
//! | `ChannelEmail` | a message in a channel | the subscription's `email_notifications` (else `enable_stream_email_notifications`) |
//!
//! Muting, as Zulip's `user_allows_notifications_in_StreamTopic`: a muted sender
//! stops every trigger; a muted topic, or a muted channel whose topic is not unmuted
//! or followed, stops the wildcard and channel triggers (a personal mention still
//! counts).

use std::collections::{BTreeMap, BTreeSet};

use imbl::OrdMap;
use serde::{Deserialize, Serialize};

use super::channels::ChannelId;
use super::messages::flags;
use super::messages::{Message, MessageId, Recipient};
use super::user_settings::{setting, SettingValue};
use super::user_topics::VisibilityPolicy;
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::ApiResult;

/// Why a message may deserve an email, strongest first (the order is Zulip's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MailTrigger {
    DirectMessage,
    Mention,
    WildcardMentionInFollowedTopic,
    WildcardMention,
    FollowedTopic,
    ChannelEmail,
}

/// One person's pending email about one message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingMail {
    pub id: u64,
    pub user_id: UserId,
    pub message_id: MessageId,
    pub trigger: MailTrigger,
    /// When the message was sent (UNIX seconds).
    pub queued_at: i64,
    /// When the email may go (UNIX seconds).
    pub due_at: i64,
}

/// The schedule. Stored in the snapshot's `missed_mail` section (`storage::codec::sections`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MissedMailState {
    pub next_id: u64,
    pub pending: OrdMap<u64, PendingMail>,
    /// Each person's open batch: when it falls due, and how many entries it holds.
    /// A message for someone with an open batch joins it (Zulip's worker schedules it
    /// at the batch's time), so one email gathers what arrived meanwhile.
    pub batches: OrdMap<UserId, (i64, u32)>,
}

/// Facts about the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MailChange {
    /// An email was promised (in the message's decision).
    Queued(PendingMail),
    /// These entries are over: sent, or no longer deserving an email.
    Done { ids: Vec<u64> },
}

/// Who asked for channel emails, so that a send looks at them without walking every
/// subscriber. Derived from the user settings and the subscriptions (rebuilt on load).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MailIndex {
    /// Users whose `enable_stream_email_notifications` is on.
    pub stream_email_on: BTreeSet<UserId>,
    /// Per channel, the subscriptions whose `email_notifications` is `true`.
    pub email_subs: BTreeMap<ChannelId, BTreeSet<UserId>>,
}

impl MailIndex {
    /// A user's `enable_stream_email_notifications` became `on`.
    pub fn set_stream_email(&mut self, user: UserId, on: bool) {
        if on {
            self.stream_email_on.insert(user);
        } else {
            self.stream_email_on.remove(&user);
        }
    }

    /// A subscription's `email_notifications` became `value`.
    pub fn set_sub_email(&mut self, channel: ChannelId, user: UserId, value: Option<bool>) {
        if value == Some(true) {
            self.email_subs.entry(channel).or_default().insert(user);
        } else if let Some(users) = self.email_subs.get_mut(&channel) {
            users.remove(&user);
            if users.is_empty() {
                self.email_subs.remove(&channel);
            }
        }
    }
}

/// A message as one person's flags describe it, for `MailTrigger`'s rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct Received {
    pub mentioned: bool,
    pub wildcard_mentioned: bool,
}

impl Received {
    pub fn from_flags(bits: u32) -> Self {
        Received {
            mentioned: bits & flags::MENTIONED != 0,
            wildcard_mentioned: bits
                & (flags::STREAM_WILDCARD_MENTIONED | flags::TOPIC_WILDCARD_MENTIONED)
                != 0,
        }
    }
}

impl Realm {
    /// Rebuilds `mail_index` from the settings and subscriptions (after loading).
    pub(super) fn rebuild_mail_index(&mut self) {
        let mut index = MailIndex::default();
        for (user, settings) in self.user_settings.iter() {
            if settings.get("enable_stream_email_notifications") == Some(&SettingValue::Bool(true))
            {
                index.stream_email_on.insert(*user);
            }
        }
        for ch in self.channels.values() {
            for (user, sub) in ch.subs.iter() {
                index.set_sub_email(ch.id, *user, sub.email_notifications);
            }
        }
        self.mail_index = index;
    }

    pub(super) fn apply_mail_change(&mut self, c: &MailChange) {
        let state = &mut self.missed_mail;
        match c {
            MailChange::Queued(p) => {
                state.next_id = state.next_id.max(p.id + 1);
                if state.pending.insert(p.id, p.clone()).is_none() {
                    let batch = state.batches.entry(p.user_id).or_insert((p.due_at, 0));
                    batch.1 += 1;
                }
            }
            MailChange::Done { ids } => {
                for id in ids {
                    let Some(p) = state.pending.remove(id) else {
                        continue;
                    };
                    let empty = match state.batches.get_mut(&p.user_id) {
                        Some(batch) => {
                            batch.1 = batch.1.saturating_sub(1);
                            batch.1 == 0
                        }
                        None => false,
                    };
                    if empty {
                        state.batches.remove(&p.user_id);
                    }
                }
            }
        }
    }

    /// A boolean user setting's value for `user`.
    fn flag_setting(&self, user: &User, name: &str) -> bool {
        setting(name)
            .is_some_and(|st| matches!(self.user_setting(user, st), SettingValue::Bool(true)))
    }

    /// An integer user setting's value for `user`.
    fn int_setting(&self, user: &User, name: &str) -> Option<i64> {
        match self.user_setting(user, setting(name)?) {
            SettingValue::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The strongest reason `m` deserves an email to `user` by the realm as it is now,
    /// `got` being how they received it; `None`: no email.
    pub fn mail_trigger(&self, m: &Message, user: UserId, got: Received) -> Option<MailTrigger> {
        let u = self.user(user)?;
        if !u.is_active || u.is_bot() || user == m.sender_id || self.has_muted(user, m.sender_id) {
            return None;
        }
        let offline = self.flag_setting(u, "enable_offline_email_notifications");
        let (channel_id, topic) = match &m.recipient {
            Recipient::Direct { users } => {
                return (offline && users.contains(&user)).then_some(MailTrigger::DirectMessage);
            }
            Recipient::Channel { channel_id, topic } => (*channel_id, topic),
        };
        if got.mentioned && offline {
            return Some(MailTrigger::Mention);
        }
        let ch = self.channel(channel_id)?;
        let sub = ch.subs.get(&user).filter(|s| s.active);
        let policy = self.topic_visibility(user, channel_id, topic);
        let followed = policy == VisibilityPolicy::Followed;
        let channel_muted = sub.is_some_and(|s| s.is_muted);
        // Zulip's `user_allows_notifications_in_StreamTopic`.
        let allows = |specific: Option<bool>, global: &str| -> bool {
            if policy == VisibilityPolicy::Muted
                || (channel_muted
                    && !matches!(
                        policy,
                        VisibilityPolicy::Unmuted | VisibilityPolicy::Followed
                    ))
            {
                return false;
            }
            specific.unwrap_or_else(|| self.flag_setting(u, global))
        };
        if got.wildcard_mentioned && offline {
            if followed && self.flag_setting(u, "enable_followed_topic_wildcard_mentions_notify") {
                return Some(MailTrigger::WildcardMentionInFollowedTopic);
            }
            if allows(
                sub.and_then(|s| s.wildcard_mentions_notify),
                "wildcard_mentions_notify",
            ) {
                return Some(MailTrigger::WildcardMention);
            }
        }
        if followed && self.flag_setting(u, "enable_followed_topic_email_notifications") {
            return Some(MailTrigger::FollowedTopic);
        }
        if sub.is_some()
            && allows(
                sub.and_then(|s| s.email_notifications),
                "enable_stream_email_notifications",
            )
        {
            return Some(MailTrigger::ChannelEmail);
        }
        None
    }

    /// The emails a just-decided message `m` may owe, numbered from `next` (moved past
    /// them). Only people who could deserve one are looked at: a direct message's
    /// recipients; in a channel, the mentioned, the topic's followers, and, for a
    /// wildcard mention or a subscriber with channel emails on, the subscribers.
    pub(crate) fn missed_mail_for(&self, m: &Message, now: i64, next: &mut u64) -> Vec<Change> {
        let mut candidates: Vec<(UserId, Received)> = Vec::new();
        match &m.recipient {
            Recipient::Direct { users } => {
                candidates.extend(users.iter().map(|u| (*u, Received::default())));
            }
            Recipient::Channel { channel_id, topic } => {
                let Some(ch) = self.channel(*channel_id) else {
                    return Vec::new();
                };
                let wildcard = m.wildcard != super::messages::Wildcard::None;
                let mut look: BTreeSet<UserId> = if wildcard {
                    // A wildcard mention reaches every subscriber (at most
                    // `WILDCARD_MENTION_THRESHOLD` of them, unless the sender may
                    // mention many).
                    ch.subs.keys().copied().collect()
                } else {
                    let mut look: BTreeSet<UserId> = m.mentioned.iter().copied().collect();
                    look.extend(self.topic_policy_users(*channel_id, topic));
                    if let Some(users) = self.mail_index.email_subs.get(channel_id) {
                        look.extend(users.iter().copied());
                    }
                    look.extend(self.mail_index.stream_email_on.iter().filter(|u| {
                        ch.subs
                            .get(*u)
                            .is_some_and(|s| s.email_notifications.is_none())
                    }));
                    look
                };
                look.retain(|u| ch.is_subscribed(*u));
                candidates.extend(look.into_iter().map(|user| {
                    (
                        user,
                        Received {
                            mentioned: m.mentioned.contains(&user),
                            wildcard_mentioned: wildcard,
                        },
                    )
                }));
            }
        }
        let mut out = Vec::new();
        for (user_id, got) in candidates {
            let Some(trigger) = self.mail_trigger(m, user_id, got) else {
                continue;
            };
            let Some(user) = self.user(user_id) else {
                continue;
            };
            let period = self
                .int_setting(user, "email_notifications_batching_period_seconds")
                .unwrap_or(120);
            let due_at = match self.missed_mail.batches.get(&user_id) {
                Some((due, _)) => *due,
                None => now.saturating_add(period),
            };
            out.push(Change::Mail(MailChange::Queued(PendingMail {
                id: *next,
                user_id,
                message_id: m.id,
                trigger,
                queued_at: now,
                due_at,
            })));
            *next += 1;
        }
        out
    }

    /// The end of pending emails (a system write of the mail worker): sent, or found
    /// no longer deserving one. Ids no longer pending are skipped.
    pub fn decide_missed_mail_done(&self, ids: Vec<u64>, _cx: &mut Cx) -> ApiResult<Decided<()>> {
        let ids: Vec<u64> = ids
            .into_iter()
            .filter(|id| self.missed_mail.pending.contains_key(id))
            .collect();
        if ids.is_empty() {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Mail(MailChange::Done {
            ids,
        })]))
    }

    /// A user's pending emails due at `now` (UNIX seconds), oldest first.
    pub fn due_mail_of(&self, user: UserId, now: i64) -> Vec<PendingMail> {
        self.missed_mail
            .pending
            .values()
            .filter(|p| p.user_id == user && p.due_at <= now)
            .cloned()
            .collect()
    }

    /// The people with emails due at `now` (UNIX seconds).
    pub fn users_with_due_mail(&self, now: i64) -> Vec<UserId> {
        self.missed_mail
            .batches
            .iter()
            .filter(|(_, (due, _))| *due <= now)
            .map(|(user, _)| *user)
            .collect()
    }

    /// Whether the realm names itself in `user`'s emails (Zulip's
    /// `realm_name_in_email_notifications_policy`: 1 automatic, decided by the caller
    /// from `multiple_accounts`; 2 always; 3 never).
    pub fn realm_name_in_email(&self, user: &User, multiple_accounts: bool) -> bool {
        match self.int_setting(user, "realm_name_in_email_notifications_policy") {
            Some(2) => true,
            Some(3) => false,
            _ => multiple_accounts,
        }
    }

    /// Whether `user`'s emails may quote the messages (`message_content_in_email_notifications`).
    pub fn message_content_in_email(&self, user: &User) -> bool {
        self.flag_setting(user, "message_content_in_email_notifications")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> Realm {
        crate::realm::dev::testing::dev_realm(&mut Cx::seeded(1_700_000_000_000, 7))
    }

    fn dm(from: UserId, to: UserId) -> Message {
        realm_message(
            from,
            Recipient::Direct {
                users: vec![from.min(to), from.max(to)],
            },
        )
    }

    fn realm_message(from: UserId, recipient: Recipient) -> Message {
        crate::realm::dev::testing::message(1, from, recipient, 0)
    }

    #[test]
    fn a_direct_message_is_owed_an_email_unless_the_setting_is_off_or_the_sender_muted() {
        let realm = world();
        let (a, b) = two_humans(&realm);
        let m = dm(a, b);
        assert_eq!(
            realm.mail_trigger(&m, b, Received::default()),
            Some(MailTrigger::DirectMessage)
        );
        // Never to the sender.
        assert_eq!(realm.mail_trigger(&m, a, Received::default()), None);
        let mut next = 7;
        let changes = realm.missed_mail_for(&m, 1000, &mut next);
        assert_eq!(next, 8);
        match &changes[..] {
            [Change::Mail(MailChange::Queued(p))] => {
                assert_eq!((p.id, p.user_id, p.due_at), (7, b, 1120));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A channel's email subscribers are found through the index, which changes keep
    /// equal to a rebuilt one.
    #[test]
    fn channel_email_subscribers_are_found_through_the_index() {
        use crate::realm::channels::SubProperty;
        use crate::realm::{ChannelChange, PersonalChange};
        let mut realm = world();
        let (a, b) = two_humans(&realm);
        let ch = realm
            .channels
            .values()
            .find(|c| c.is_subscribed(a) && c.is_subscribed(b))
            .map(|c| c.id)
            .unwrap();
        let m = realm_message(
            a,
            Recipient::Channel {
                channel_id: ch,
                topic: "t".into(),
            },
        );
        let mut next = 0;
        assert!(realm.missed_mail_for(&m, 0, &mut next).is_empty());
        realm.apply(&Change::Channel(ChannelChange::SubscriptionPropertySet {
            user_id: b,
            channel_id: ch,
            property: SubProperty::EmailNotifications(true),
        }));
        let owed = realm.missed_mail_for(&m, 0, &mut next);
        assert!(matches!(&owed[..], [Change::Mail(MailChange::Queued(p))]
            if p.user_id == b && p.trigger == MailTrigger::ChannelEmail));
        // The global setting reaches subscriptions that follow it, not the sender.
        for user in [a, b] {
            realm.apply(&Change::Personal(PersonalChange::SettingSet {
                user_id: user,
                name: "enable_stream_email_notifications".into(),
                value: SettingValue::Bool(true),
            }));
        }
        realm.apply(&Change::Channel(ChannelChange::SubscriptionPropertySet {
            user_id: b,
            channel_id: ch,
            property: SubProperty::EmailNotifications(false),
        }));
        assert!(realm.missed_mail_for(&m, 0, &mut next).is_empty());
        let kept = realm.mail_index.clone();
        realm.rebuild_mail_index();
        assert_eq!(realm.mail_index, kept);
        assert!(kept.stream_email_on.contains(&a) && kept.stream_email_on.contains(&b));
    }

    fn two_humans(realm: &Realm) -> (UserId, UserId) {
        let mut humans = realm
            .users
            .values()
            .filter(|u| u.is_active && !u.is_bot())
            .map(|u| u.id);
        (humans.next().unwrap(), humans.next().unwrap())
    }
}

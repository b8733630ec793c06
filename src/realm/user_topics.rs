//! Topic visibility policies: `POST /user_topics` and the legacy
//! `PATCH /users/me/subscriptions/muted_topics`, as Zulip's `zerver/views/user_topics.py`
//! and `bulk_do_set_user_topic_visibility_policy` decide them.
//!
//! A user has at most one row per channel and topic, the topic compared
//! case-insensitively (Zulip's `topic_name__iexact`); an update keeps the row's
//! spelling. Setting the policy a row already has, or removing a row that does not
//! exist, changes nothing and sends no event, as Zulip's does.
//!
//! | Change         | Events                                                      | Recipients |
//! |----------------|-------------------------------------------------------------|------------|
//! | `UserTopicSet` | `muted_topics` `{muted_topics: [[channel name, topic, last_updated]]}` (queues that did not ask for `user_topic`), then `user_topic` `{stream_id, topic_name, last_updated, visibility_policy}` | the user |

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::events::{Audience, Event};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::{Channel, ChannelId};

/// Zulip's `UserTopic.VisibilityPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VisibilityPolicy {
    Inherit,
    Muted,
    Unmuted,
    Followed,
}

impl VisibilityPolicy {
    pub fn value(self) -> i64 {
        match self {
            VisibilityPolicy::Inherit => 0,
            VisibilityPolicy::Muted => 1,
            VisibilityPolicy::Unmuted => 2,
            VisibilityPolicy::Followed => 3,
        }
    }

    pub fn from_value(v: i64) -> Option<Self> {
        Some(match v {
            0 => VisibilityPolicy::Inherit,
            1 => VisibilityPolicy::Muted,
            2 => VisibilityPolicy::Unmuted,
            3 => VisibilityPolicy::Followed,
            _ => return None,
        })
    }
}

/// One of a user's topic rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTopic {
    pub channel_id: ChannelId,
    pub topic: String,
    /// Never `Inherit` (that removes the row).
    pub policy: VisibilityPolicy,
    /// UNIX seconds.
    pub last_updated: i64,
}

/// How the request named the channel.
#[derive(Debug, Clone, PartialEq)]
pub enum TopicChannel {
    Id(i64),
    /// The legacy endpoint's `stream`.
    Name(String),
}

/// `POST /user_topics` and `PATCH /users/me/subscriptions/muted_topics`, parsed on the
/// worker (the topic at most 60 characters; the realm's empty-topic name read as the
/// empty topic).
#[derive(Debug, Clone, PartialEq)]
pub struct SetUserTopic {
    pub channel: TopicChannel,
    pub topic: String,
    pub policy: VisibilityPolicy,
    /// The legacy endpoint: an unknown channel on removal is "Topic is not muted".
    pub legacy: bool,
}

fn invalid_channel_id() -> ApiError {
    ApiError::bad_request("Invalid channel ID")
}

/// Who has a policy for each topic: (channel, lower-cased topic) -> users. Derived from
/// `Realm::user_topics`, so that a topic move reads its topics' rows without walking
/// every user's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicPolicyIndex(BTreeMap<(ChannelId, String), BTreeSet<UserId>>);

impl TopicPolicyIndex {
    fn users(&self, channel: ChannelId, topic: &str) -> impl Iterator<Item = UserId> + '_ {
        self.0
            .get(&(channel, topic.to_lowercase()))
            .into_iter()
            .flatten()
            .copied()
    }
}

/// Zulip's `get_visibility_policy_after_merge`: the more visible of the two policies.
fn policy_after_merge(orig: VisibilityPolicy, target: VisibilityPolicy) -> VisibilityPolicy {
    use VisibilityPolicy::*;
    let both = [orig, target];
    [Followed, Unmuted, Inherit]
        .into_iter()
        .find(|p| both.contains(p))
        .unwrap_or(Muted)
}

impl Realm {
    /// Rebuilds `topic_policy_index` from the rows (after loading).
    pub(in crate::realm) fn rebuild_topic_policy_index(&mut self) {
        let mut index = TopicPolicyIndex::default();
        for (user, rows) in self.user_topics.iter() {
            for r in rows {
                index
                    .0
                    .entry((r.channel_id, r.topic.to_lowercase()))
                    .or_default()
                    .insert(*user);
            }
        }
        self.topic_policy_index = index;
    }

    /// What a move of a whole topic (as the mover sees it) does to its visibility
    /// policies (Zulip's `do_update_message` with `moved_all_visible_messages`): a user
    /// who cannot read the new channel loses the old topic's row; for everyone else with
    /// a row on either topic, the old row goes and the new topic gets the old policy,
    /// or, when it already had messages, the more visible of the two.
    pub(in crate::realm) fn move_topic_policies(
        &self,
        old: (ChannelId, &str),
        new: (ChannelId, &str),
        target_had_messages: bool,
        now: i64,
    ) -> Vec<Change> {
        let set = |user_id, (channel_id, topic): (ChannelId, &str), policy| {
            Change::Personal(PersonalChange::UserTopicSet {
                user_id,
                channel_id,
                topic: topic.to_owned(),
                policy,
                last_updated: now,
            })
        };
        let new_channel = self.channel(new.0);
        let users: BTreeSet<UserId> = self
            .topic_policy_index
            .users(old.0, old.1)
            .chain(self.topic_policy_index.users(new.0, new.1))
            .collect();
        let mut changes = Vec::new();
        for user_id in users {
            let orig = self.topic_visibility(user_id, old.0, old.1);
            let target = self.topic_visibility(user_id, new.0, new.1);
            let loses_access = old.0 != new.0
                && !matches!(
                    (self.user(user_id), new_channel),
                    (Some(u), Some(ch)) if self.can_access_channel(u, ch)
                );
            if loses_access {
                if orig != VisibilityPolicy::Inherit {
                    changes.push(set(user_id, old, VisibilityPolicy::Inherit));
                }
                continue;
            }
            if orig != VisibilityPolicy::Inherit {
                changes.push(set(user_id, old, VisibilityPolicy::Inherit));
            }
            let policy = if target_had_messages {
                policy_after_merge(orig, target)
            } else {
                orig
            };
            if policy != target {
                changes.push(set(user_id, new, policy));
            }
        }
        changes
    }

    /// A user's topic rows, in the order they were first set.
    pub fn user_topics_of(&self, user: UserId) -> &[UserTopic] {
        self.user_topics
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The users with a policy (any) for a topic, in id order.
    pub(in crate::realm) fn topic_policy_users(
        &self,
        channel: ChannelId,
        topic: &str,
    ) -> Vec<UserId> {
        self.topic_policy_index.users(channel, topic).collect()
    }

    /// A user's policy for a topic (`Inherit` without a row).
    pub fn topic_visibility(
        &self,
        user: UserId,
        channel: ChannelId,
        topic: &str,
    ) -> VisibilityPolicy {
        self.user_topic_row(user, channel, topic)
            .map_or(VisibilityPolicy::Inherit, |r| r.policy)
    }

    fn user_topic_row(&self, user: UserId, channel: ChannelId, topic: &str) -> Option<&UserTopic> {
        let lower = topic.to_lowercase();
        self.user_topics_of(user)
            .iter()
            .find(|r| r.channel_id == channel && r.topic.to_lowercase() == lower)
    }

    /// Rows of channels that are not archived (Zulip's `get_user_topics`).
    fn live_user_topics(&self, user: UserId) -> impl Iterator<Item = (&UserTopic, &Channel)> {
        self.user_topics_of(user).iter().filter_map(|r| {
            self.channel(r.channel_id)
                .filter(|ch| !ch.is_archived)
                .map(|ch| (r, ch))
        })
    }

    /// `user_topics` of `/register`.
    pub fn view_user_topics(&self, me: &User) -> Vec<Value> {
        self.live_user_topics(me.id)
            .map(|(r, _)| {
                json!({
                    "stream_id": r.channel_id,
                    "topic_name": r.topic,
                    "last_updated": r.last_updated,
                    "visibility_policy": r.policy.value(),
                })
            })
            .collect()
    }

    /// The legacy `muted_topics` (Zulip's `get_topic_mutes`): `[channel name, topic,
    /// last_updated]` of the muted rows.
    pub fn view_muted_topics(&self, user: UserId) -> Vec<Value> {
        self.live_user_topics(user)
            .filter(|(r, _)| r.policy == VisibilityPolicy::Muted)
            .map(|(r, ch)| json!([ch.name, r.topic, r.last_updated]))
            .collect()
    }

    /// The channel a policy is set in: `access_stream_by_id` / `access_stream_by_name`
    /// (content access, not archived), or, to remove a policy, any channel of the
    /// realm (`access_stream_to_remove_visibility_policy_by_*`).
    fn channel_for_user_topic(&self, me: &User, q: &SetUserTopic) -> ApiResult<&Channel> {
        if q.policy == VisibilityPolicy::Inherit {
            let error = || {
                if q.legacy {
                    ApiError::bad_request("Topic is not muted")
                } else {
                    invalid_channel_id()
                }
            };
            return match &q.channel {
                TopicChannel::Id(id) => u64::try_from(*id)
                    .ok()
                    .and_then(|id| self.channel(id))
                    .ok_or_else(error),
                TopicChannel::Name(name) => self.channel_by_name(name).ok_or_else(error),
            };
        }
        match &q.channel {
            TopicChannel::Id(id) => {
                let ch = self.access_channel(me, *id)?;
                if ch.is_archived {
                    return Err(invalid_channel_id());
                }
                Ok(ch)
            }
            TopicChannel::Name(name) => self
                .channel_by_name(name)
                .filter(|ch| !ch.is_archived && self.can_access_channel(me, ch))
                .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'"))),
        }
    }

    /// `POST /user_topics` and the legacy muted-topics endpoint.
    pub fn decide_set_user_topic(
        &self,
        me: &User,
        q: SetUserTopic,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let channel_id = self.channel_for_user_topic(me, &q)?.id;
        let current = self.topic_visibility(me.id, channel_id, &q.topic);
        if current == q.policy {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::UserTopicSet {
                user_id: me.id,
                channel_id,
                topic: q.topic,
                policy: q.policy,
                last_updated: cx.now_secs(),
            },
        )]))
    }

    pub(in crate::realm) fn apply_user_topic(&mut self, change: &PersonalChange) {
        let PersonalChange::UserTopicSet {
            user_id,
            channel_id,
            topic,
            policy,
            last_updated,
        } = change
        else {
            return;
        };
        let lower = topic.to_lowercase();
        let key = (*channel_id, lower.clone());
        if *policy == VisibilityPolicy::Inherit {
            if let Some(users) = self.topic_policy_index.0.get_mut(&key) {
                users.remove(user_id);
                if users.is_empty() {
                    self.topic_policy_index.0.remove(&key);
                }
            }
        } else {
            self.topic_policy_index
                .0
                .entry(key)
                .or_default()
                .insert(*user_id);
        }
        let rows = self.user_topics.entry(*user_id).or_default();
        let at = rows
            .iter()
            .position(|r| r.channel_id == *channel_id && r.topic.to_lowercase() == lower);
        match (at, policy) {
            (Some(i), VisibilityPolicy::Inherit) => {
                rows.remove(i);
            }
            (Some(i), _) => {
                rows[i].policy = *policy;
                rows[i].last_updated = *last_updated;
            }
            (None, VisibilityPolicy::Inherit) => {}
            (None, _) => rows.push(UserTopic {
                channel_id: *channel_id,
                topic: topic.clone(),
                policy: *policy,
                last_updated: *last_updated,
            }),
        }
        if rows.is_empty() {
            self.user_topics.remove(user_id);
        }
    }

    /// The events of a `UserTopicSet`.
    pub(in crate::realm) fn user_topic_events(&self, change: &PersonalChange) -> Vec<Event> {
        let PersonalChange::UserTopicSet {
            user_id,
            channel_id,
            topic,
            policy,
            last_updated,
        } = change
        else {
            return Vec::new();
        };
        let to = || Audience::users(vec![*user_id]);
        vec![
            Event::new(
                json!({"type": "muted_topics", "muted_topics": self.view_muted_topics(*user_id)}),
                to(),
            ),
            Event::new(
                json!({
                    "type": "user_topic",
                    "stream_id": channel_id,
                    "topic_name": topic,
                    "last_updated": last_updated,
                    "visibility_policy": policy.value(),
                }),
                to(),
            )
            .with_topics(self, &[topic.as_str()]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_values_round_trip() {
        for v in 0..4 {
            assert_eq!(VisibilityPolicy::from_value(v).map(|p| p.value()), Some(v));
        }
        assert_eq!(VisibilityPolicy::from_value(4), None);
        assert_eq!(VisibilityPolicy::from_value(-1), None);
    }
}

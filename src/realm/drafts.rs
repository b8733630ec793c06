//! Drafts: each user's unsent messages, kept on the server so that their clients share
//! them, as Zulip's `zerver/lib/drafts.py` checks them (`DraftData`, then
//! `further_validated_draft_dict`).
//!
//! A draft is addressed to nothing, to one channel (with a topic) or to a direct-message
//! conversation. Its id is unique in the realm. Only its user sees it, through
//! `GET /drafts`, `/register` and `drafts` events.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::messages::send::{normalize_body, truncate, MAX_TOPIC_LENGTH};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

pub type DraftId = u64;

/// Zulip's `MAX_DRAFTS_IN_REGISTER_RESPONSE`: the newest drafts `/register` gives.
pub const MAX_DRAFTS_IN_REGISTER: usize = 1000;

/// Whether `user` synchronizes drafts with the server (Zulip's
/// `enable_drafts_synchronization`, default true).
pub fn drafts_synced(realm: &Realm, user: UserId) -> bool {
    !matches!(
        realm
            .user_settings
            .get(&user)
            .and_then(|m| m.get("enable_drafts_synchronization")),
        Some(crate::realm::user_settings::SettingValue::Bool(false))
    )
}

/// Where a draft is addressed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DraftTo {
    /// Not addressed yet (type `""`).
    Nobody,
    /// A channel, with a topic.
    Channel { channel_id: u64, topic: String },
    /// A direct-message conversation: every participant, the draft's user included,
    /// sorted.
    Direct { users: Vec<UserId> },
}

/// One draft.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub id: DraftId,
    pub to: DraftTo,
    /// Normalized as a message body (`normalize_body`).
    pub content: String,
    /// When it was last edited: UNIX seconds, to the microsecond.
    pub last_edit: f64,
}

impl Draft {
    /// Zulip's `Draft.to_dict` for `user`'s draft (`get_recipient_ids`): a direct draft
    /// lists the others, or the user alone for a conversation with themself.
    pub fn json(&self, user: UserId) -> Value {
        let (kind, to, topic): (&str, Vec<u64>, &str) = match &self.to {
            DraftTo::Nobody => ("", Vec::new(), ""),
            DraftTo::Channel { channel_id, topic } => ("stream", vec![*channel_id], topic),
            DraftTo::Direct { users } => {
                let others: Vec<u64> = users.iter().copied().filter(|u| *u != user).collect();
                let to = if others.is_empty() {
                    vec![user]
                } else {
                    others
                };
                ("private", to, "")
            }
        };
        json!({
            "id": self.id,
            "type": kind,
            "to": to,
            "topic": topic,
            "content": self.content,
            "timestamp": self.last_edit.trunc() as i64,
        })
    }
}

/// The realm's drafts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DraftState {
    /// Each user's drafts by id.
    pub by_user: OrdMap<UserId, OrdMap<DraftId, Draft>>,
    /// The id the next draft gets (0 reads as 1).
    pub next_id: DraftId,
}

/// The type of a draft as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftKind {
    Nobody,
    Channel,
    Direct,
}

/// One draft as the client sent it (Zulip's `DraftData`), checked for shape.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftData {
    pub kind: DraftKind,
    pub to: Vec<i64>,
    pub topic: String,
    /// Stripped, not blank.
    pub content: String,
    pub timestamp: Option<f64>,
}

/// Parses one draft object as pydantic does for `DraftData` (strict; fields in order,
/// then unexpected keys); `var` names it in errors (`drafts[0]`, `draft`).
pub fn parse_draft(var: &str, v: &Value) -> ApiResult<DraftData> {
    let bad = |m: String| ApiError::bad_request(m);
    let Value::Object(m) = v else {
        return Err(bad(format!("{var} is not a dict")));
    };
    let field = |k: &str| {
        m.get(k).ok_or_else(|| {
            ApiError::bad_request(format!("{var}[\"{k}\"] field is missing: Field required"))
        })
    };
    let kind = match field("type")?.as_str() {
        Some("") => DraftKind::Nobody,
        Some("stream") => DraftKind::Channel,
        Some("private") => DraftKind::Direct,
        _ => return Err(bad(format!("Invalid {var}[\"type\"]"))),
    };
    let Value::Array(items) = field("to")? else {
        return Err(bad(format!("{var}[\"to\"] is not a list")));
    };
    let to = items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_i64()
                .ok_or_else(|| bad(format!("{var}[\"to\"][{i}] is not an integer")))
        })
        .collect::<ApiResult<Vec<i64>>>()?;
    let topic = field("topic")?
        .as_str()
        .ok_or_else(|| bad(format!("{var}[\"topic\"] is not a string")))?
        .to_owned();
    let content = field("content")?
        .as_str()
        .ok_or_else(|| bad(format!("{var}[\"content\"] is not a string")))?
        .trim()
        .to_owned();
    if content.is_empty() {
        return Err(bad(format!("{var}[\"content\"] cannot be blank")));
    }
    let timestamp = match m.get("timestamp") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(_) => {
            return Err(bad(format!(
                "{var}[\"timestamp\"][\"int\"] is not an integer"
            )))
        }
    };
    const FIELDS: [&str; 5] = ["type", "to", "topic", "content", "timestamp"];
    if let Some(extra) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(format!(
            "Argument \"{extra}\" at {var}[\"{extra}\"] is unexpected"
        )));
    }
    Ok(DraftData {
        kind,
        to,
        topic,
        content,
        timestamp,
    })
}

/// `POST /drafts`: the drafts as sent.
#[derive(Debug, Clone)]
pub struct CreateDrafts {
    pub drafts: Vec<DraftData>,
}

/// `PATCH /drafts/{draft_id}`.
#[derive(Debug, Clone)]
pub struct EditDraft {
    pub id: i64,
    pub draft: DraftData,
}

/// `DELETE /drafts/{draft_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeleteDraft {
    pub id: i64,
}

/// Zulip's `ResourceNotFoundError` for drafts (HTTP 404, code `BAD_REQUEST`).
pub fn draft_missing() -> ApiError {
    ApiError::new(404, ErrorCode::BadRequest, "Draft does not exist")
}

/// Zulip's `draft_endpoint`: drafts are served only to users who synchronize them.
pub fn check_synced(realm: &Realm, me: &User) -> ApiResult<()> {
    if drafts_synced(realm, me.id) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "User has disabled synchronizing drafts.",
        ))
    }
}

impl Realm {
    /// `me`'s drafts by id.
    pub fn drafts_of(&self, user: UserId) -> Option<&OrdMap<DraftId, Draft>> {
        self.drafts.by_user.get(&user)
    }

    fn draft_of(&self, me: &User, id: i64) -> ApiResult<&Draft> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.drafts_of(me.id)?.get(&id))
            .ok_or_else(draft_missing)
    }

    /// `me`'s drafts by last edit, oldest first (`GET /drafts`), or newest first and at
    /// most `MAX_DRAFTS_IN_REGISTER` (`/register`).
    pub fn view_drafts(&self, me: &User, newest_first: bool) -> Vec<Value> {
        let Some(mine) = self.drafts_of(me.id) else {
            return Vec::new();
        };
        let mut list: Vec<&Draft> = mine.values().collect();
        list.sort_by(|a, b| a.last_edit.total_cmp(&b.last_edit).then(a.id.cmp(&b.id)));
        if newest_first {
            list.reverse();
            list.truncate(MAX_DRAFTS_IN_REGISTER);
        }
        list.into_iter().map(|d| d.json(me.id)).collect()
    }

    /// Zulip's `further_validated_draft_dict`: the draft `d` becomes, as draft `id`.
    fn validated_draft(&self, me: &User, id: DraftId, d: &DraftData, cx: &Cx) -> ApiResult<Draft> {
        let content = normalize_body(&d.content)?;
        let timestamp = d.timestamp.unwrap_or(cx.now_ms as f64 / 1000.0);
        let timestamp = (timestamp * 1e6).round() / 1e6;
        if timestamp < 0.0 {
            return Err(ApiError::bad_request("Timestamp must not be negative."));
        }
        let to = match d.kind {
            DraftKind::Channel => {
                let topic = truncate(&d.topic, MAX_TOPIC_LENGTH, "...");
                if topic.contains('\0') {
                    return Err(ApiError::bad_request("Topic must not contain null bytes"));
                }
                let [channel] = d.to[..] else {
                    return Err(ApiError::bad_request(
                        "Must specify exactly 1 channel ID for channel messages",
                    ));
                };
                let ch = self.access_channel(me, channel)?;
                DraftTo::Channel {
                    channel_id: ch.id,
                    topic,
                }
            }
            DraftKind::Direct if !d.to.is_empty() => {
                self.lookup_direct_recipients(&d.to, &[])?;
                let mut users: Vec<UserId> = d.to.iter().map(|u| *u as UserId).collect();
                users.push(me.id);
                users.sort_unstable();
                users.dedup();
                DraftTo::Direct { users }
            }
            DraftKind::Direct | DraftKind::Nobody => DraftTo::Nobody,
        };
        Ok(Draft {
            id,
            to,
            content,
            last_edit: timestamp,
        })
    }

    /// `POST /drafts`: answers the new drafts' ids, in the order sent.
    pub fn decide_create_drafts(
        &self,
        me: &User,
        q: CreateDrafts,
        cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<DraftId>>> {
        check_synced(self, me)?;
        let first = self.drafts.next_id.max(1);
        let drafts = q
            .drafts
            .iter()
            .zip(first..)
            .map(|(d, id)| self.validated_draft(me, id, d, cx))
            .collect::<ApiResult<Vec<Draft>>>()?;
        let ids = drafts.iter().map(|d| d.id).collect();
        Ok(Decided::new(
            vec![Change::Personal(PersonalChange::DraftsAdded {
                user_id: me.id,
                drafts,
            })],
            ids,
        ))
    }

    /// `PATCH /drafts/{draft_id}`: the lookup comes before the draft's checks.
    pub fn decide_edit_draft(
        &self,
        me: &User,
        q: EditDraft,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        check_synced(self, me)?;
        let old = self.draft_of(me, q.id)?;
        let draft = self.validated_draft(me, old.id, &q.draft, cx)?;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::DraftUpdated {
                user_id: me.id,
                draft,
            },
        )]))
    }

    /// `DELETE /drafts/{draft_id}`.
    pub fn decide_delete_draft(
        &self,
        me: &User,
        q: DeleteDraft,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        check_synced(self, me)?;
        let draft_id = self.draft_of(me, q.id)?.id;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::DraftRemoved {
                user_id: me.id,
                draft_id,
            },
        )]))
    }

    pub(in crate::realm) fn apply_draft_change(&mut self, change: &PersonalChange) {
        let state = &mut self.drafts;
        match change {
            PersonalChange::DraftsAdded { user_id, drafts } => {
                let mine = state.by_user.entry(*user_id).or_default();
                for d in drafts {
                    state.next_id = state.next_id.max(d.id + 1);
                    mine.insert(d.id, d.clone());
                }
            }
            PersonalChange::DraftUpdated { user_id, draft } => {
                state.next_id = state.next_id.max(draft.id + 1);
                state
                    .by_user
                    .entry(*user_id)
                    .or_default()
                    .insert(draft.id, draft.clone());
            }
            PersonalChange::DraftRemoved { user_id, draft_id } => {
                if let Some(mine) = state.by_user.get_mut(user_id) {
                    mine.remove(draft_id);
                    if mine.is_empty() {
                        state.by_user.remove(user_id);
                    }
                }
            }
            _ => {}
        }
    }

    /// `drafts` events, to the user only.
    pub(in crate::realm) fn draft_events(&self, change: &PersonalChange) -> Vec<Event> {
        let (user, body) = match change {
            PersonalChange::DraftsAdded { user_id, drafts } => {
                let list: Vec<Value> = drafts.iter().map(|d| d.json(*user_id)).collect();
                (
                    *user_id,
                    json!({"type": "drafts", "op": "add", "drafts": list}),
                )
            }
            PersonalChange::DraftUpdated { user_id, draft } => (
                *user_id,
                json!({"type": "drafts", "op": "update", "draft": draft.json(*user_id)}),
            ),
            PersonalChange::DraftRemoved { user_id, draft_id } => (
                *user_id,
                json!({"type": "drafts", "op": "remove", "draft_id": draft_id}),
            ),
            _ => return Vec::new(),
        };
        vec![Event::new(body, Audience::users(vec![user]))]
    }
}

/// The `drafts` key of `/register` (empty when the user does not synchronize drafts).
pub fn register_drafts(realm: &Realm, me: &User) -> Value {
    if drafts_synced(realm, me.id) {
        realm.view_drafts(me, true).into()
    } else {
        Value::Array(Vec::new())
    }
}

/// `GET /drafts`'s body.
pub fn drafts_body(realm: &Realm, me: &User) -> Map<String, Value> {
    let list = realm.view_drafts(me, false);
    let mut body = Map::new();
    body.insert("count".into(), list.len().into());
    body.insert("drafts".into(), list.into());
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_in_pydantic_order() {
        let err = |v: Value| parse_draft("drafts[0]", &v).map_err(|e| e.msg).unwrap_err();
        assert_eq!(
            err(json!({"to": [], "topic": "", "content": "x"})),
            "drafts[0][\"type\"] field is missing: Field required"
        );
        assert_eq!(
            err(json!({"type": "x", "to": [], "topic": "", "content": "x"})),
            "Invalid drafts[0][\"type\"]"
        );
        assert_eq!(
            err(json!({"type": "", "to": ["a"], "topic": "", "content": "x"})),
            "drafts[0][\"to\"][0] is not an integer"
        );
        assert_eq!(
            err(json!({"type": "", "to": [], "topic": "", "content": "  "})),
            "drafts[0][\"content\"] cannot be blank"
        );
        assert_eq!(
            err(json!({"type": "", "to": [], "topic": "", "content": "x", "id": 3})),
            "Argument \"id\" at drafts[0][\"id\"] is unexpected"
        );
        let ok = parse_draft(
            "draft",
            &json!({"type": "", "to": [], "topic": "", "content": " x ", "timestamp": 1.5}),
        )
        .unwrap();
        assert_eq!((ok.content.as_str(), ok.timestamp), ("x", Some(1.5)));
    }

    #[test]
    fn direct_drafts_list_the_others() {
        let d = Draft {
            id: 1,
            to: DraftTo::Direct { users: vec![3, 5] },
            content: "x".into(),
            last_edit: 2.9,
        };
        assert_eq!(d.json(3)["to"], json!([5]));
        assert_eq!(d.json(3)["timestamp"], json!(2));
        let own = Draft {
            to: DraftTo::Direct { users: vec![3] },
            ..d
        };
        assert_eq!(own.json(3)["to"], json!([3]));
    }
}

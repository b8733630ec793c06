//! User status (seed 2.4 and 4.4): `POST /users/me/status`, `GET /users/{user_id}/status`,
//! `user_status` in `/register` and its events, after Zulip's `zerver/views/presence.py`,
//! `zerver/lib/user_status.py` and `zerver/actions/user_status.py`.
//!
//! `away` is not stored as such: it is the inverse of the user's `presence_enabled`
//! setting (feature level 148), kept here as the set of users who disabled presence.
//! Status changes are durable WAL changes; the presence update that goes with a change
//! of `presence_enabled` is soft state (the hub's presence), made by the hub's renderer
//! when it renders the change (`Realm::presence_refresh`), in the realm's order.

use imbl::{OrdMap, OrdSet};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::change::PersonalChange;
use super::emoji::ReactionType;
use super::events::{Audience, Event};
use super::user_settings::SettingValue;
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// Zulip's `UserStatus.MAX_STATUS_TEXT_LENGTH`, counted in characters after stripping.
pub const MAX_STATUS_TEXT_LENGTH: usize = 60;

/// A user's status, once they set one (Zulip's `UserStatus` row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserStatus {
    /// "" when none.
    pub status_text: String,
    /// "" when none (then `emoji_code` is "" and the type `unicode_emoji`).
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: ReactionType,
}

impl Default for UserStatus {
    fn default() -> Self {
        UserStatus {
            status_text: String::new(),
            emoji_name: String::new(),
            emoji_code: String::new(),
            reaction_type: ReactionType::UnicodeEmoji,
        }
    }
}

impl Realm {
    /// The presence refresh a change asks for, as Zulip's `do_change_user_setting` makes
    /// one when `presence_enabled` is set: the user and the setting's value. A status
    /// with `away` always asks (Zulip sets the setting whatever it was); the setting
    /// itself, when it changed from `before`. The hub's renderer makes it, in the
    /// realm's order, right after the change's own events.
    pub fn presence_refresh(&self, before: &Realm, change: &Change) -> Option<(UserId, bool)> {
        match change {
            Change::Status(StatusChange::Updated {
                user_id,
                away: Some(away),
                ..
            }) => Some((*user_id, !away)),
            Change::Personal(PersonalChange::SettingSet {
                user_id,
                name,
                value: SettingValue::Bool(on),
            }) if name == "presence_enabled" && before.presence_enabled(*user_id) != *on => {
                Some((*user_id, *on))
            }
            _ => None,
        }
    }
}

/// Statuses and the `presence_enabled` setting of the realm's users.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StatusState {
    /// Users who ever set a status, with it.
    pub by_user: OrdMap<UserId, UserStatus>,
    /// Users whose `presence_enabled` setting is off (`away`); everyone else's is on.
    pub presence_disabled: OrdSet<UserId>,
}

/// A status emoji, already checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusEmoji {
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: ReactionType,
}

/// Facts about user statuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StatusChange {
    /// A user changed what they passed; `None` fields stay as they were.
    Updated {
        user_id: UserId,
        /// `Some(away)` sets `presence_enabled` to `!away`.
        away: Option<bool>,
        status_text: Option<String>,
        emoji: Option<StatusEmoji>,
    },
}

/// The parameters of `POST /users/me/status`, as sent (`status_text` stripped and
/// within its limit).
#[derive(Debug, Clone, Default)]
pub struct StatusRequest {
    pub away: Option<bool>,
    pub status_text: Option<String>,
    pub emoji_name: Option<String>,
    pub emoji_code: Option<String>,
    pub reaction_type: Option<String>,
}

/// `POST /users/{user_id}/status`: the target as given and the status fields.
#[derive(Debug, Clone)]
pub struct AdminStatusRequest {
    pub user_id: i64,
    pub req: StatusRequest,
}

/// Python's `str.strip()`: Unicode whitespace, and the separators \x1c-\x1f.
pub fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// `status_text` as Zulip's parameter parser takes it: stripped, then at most 60
/// characters.
pub fn parse_status_text(raw: &str) -> ApiResult<String> {
    let text = python_strip(raw);
    if text.chars().count() > MAX_STATUS_TEXT_LENGTH {
        return Err(ApiError::bad_request(format!(
            "status_text is too long (limit: {MAX_STATUS_TEXT_LENGTH} characters)"
        )));
    }
    Ok(text.to_owned())
}

/// Zulip's `human_users_only`.
pub fn require_human(me: &User) -> ApiResult<()> {
    if me.is_bot() {
        return Err(ApiError::bad_request(
            "This endpoint does not accept bot requests.",
        ));
    }
    Ok(())
}

impl Realm {
    /// The user's `presence_enabled` setting.
    pub fn presence_enabled(&self, user_id: UserId) -> bool {
        !self.status.presence_disabled.contains(&user_id)
    }

    /// `POST /users/me/status` (Zulip's `check_update_user_status`, then
    /// `do_update_user_status`). Only the values passed change.
    pub fn decide_update_status(
        &self,
        me: &User,
        req: StatusRequest,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        require_human(me)?;
        Ok(Decided::changes(vec![self.status_change(me.id, req)?]))
    }

    /// `POST /users/{user_id}/status` (feature level 407): Zulip's
    /// `update_user_status_admin`. The target is looked up as `access_user_by_id(...,
    /// allow_bots=False, for_admin=True)` (administrators, and not oneself), then the
    /// status is checked as for one's own, `away` aside.
    pub fn decide_update_status_admin(
        &self,
        me: &User,
        q: AdminStatusRequest,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let target = self.access_user_for_admin(me, q.user_id, false, false)?;
        let req = StatusRequest {
            away: None,
            ..q.req
        };
        Ok(Decided::changes(vec![self.status_change(target.id, req)?]))
    }

    /// Zulip's `check_update_user_status`: the change of `user_id`'s status that `req`
    /// asks for.
    fn status_change(&self, user_id: UserId, req: StatusRequest) -> ApiResult<Change> {
        if req.away.is_none() && req.status_text.is_none() && req.emoji_name.is_none() {
            return Err(ApiError::bad_request("Client did not pass any new values."));
        }
        let emoji = match req.emoji_name {
            // An empty name clears the emoji.
            Some(name) if name.is_empty() => Some(StatusEmoji {
                emoji_name: name,
                emoji_code: String::new(),
                reaction_type: ReactionType::UnicodeEmoji,
            }),
            Some(name) => {
                let (code, reaction_type) = match (req.emoji_code, req.reaction_type) {
                    (Some(code), Some(t)) => (code, t),
                    (code, t) => {
                        let data = self.emoji_data(&name)?;
                        (
                            code.unwrap_or(data.code),
                            t.unwrap_or_else(|| data.reaction_type.as_str().to_owned()),
                        )
                    }
                };
                let reaction_type = self.check_emoji_request(&name, &code, &reaction_type)?;
                Some(StatusEmoji {
                    emoji_name: name,
                    emoji_code: code,
                    reaction_type,
                })
            }
            None => {
                let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
                if given(&req.emoji_code) || given(&req.reaction_type) {
                    return Err(ApiError::bad_request(
                        "Client must pass emoji_name if they pass either emoji_code or reaction_type.",
                    ));
                }
                None
            }
        };
        Ok(Change::Status(StatusChange::Updated {
            user_id,
            away: req.away,
            status_text: req.status_text,
            emoji,
        }))
    }

    /// Zulip's `format_user_status`: only what is set (`away` when presence is off).
    fn format_user_status(&self, user_id: UserId, s: &UserStatus) -> Map<String, Value> {
        let mut m = Map::new();
        if !self.presence_enabled(user_id) {
            m.insert("away".into(), true.into());
        }
        if !s.status_text.is_empty() {
            m.insert("status_text".into(), s.status_text.clone().into());
        }
        if !s.emoji_name.is_empty() {
            m.insert("emoji_name".into(), s.emoji_name.clone().into());
            m.insert("emoji_code".into(), s.emoji_code.clone().into());
            m.insert("reaction_type".into(), s.reaction_type.as_str().into());
        }
        m
    }

    /// `GET /users/{user_id}/status`: `{status}` of a human user (Zulip's
    /// `access_user_by_id`, bots not allowed); `{}` for one who never set a status.
    pub fn view_user_status(&self, user_id: i64) -> ApiResult<Map<String, Value>> {
        let target = u64::try_from(user_id)
            .ok()
            .and_then(|id| self.user(id))
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if target.is_bot() {
            return Err(ApiError::bad_request("No such user"));
        }
        if !target.is_active {
            return Err(ApiError::bad_request("User is deactivated"));
        }
        let status = match self.status.by_user.get(&target.id) {
            Some(s) => self.format_user_status(target.id, s),
            None => Map::new(),
        };
        let mut body = Map::new();
        body.insert("status".into(), Value::Object(status));
        Ok(body)
    }

    /// `user_status` of `/register`: active users whose status has anything set
    /// (Zulip's `get_all_users_status_dict`).
    pub fn user_status_state(&self) -> Map<String, Value> {
        self.status
            .by_user
            .iter()
            .filter(|(id, _)| self.user(**id).is_some_and(|u| u.is_active))
            .filter_map(|(id, s)| {
                let m = self.format_user_status(*id, s);
                (!m.is_empty()).then(|| (id.to_string(), Value::Object(m)))
            })
            .collect()
    }

    pub(super) fn apply_status_change(&mut self, change: &StatusChange) {
        match change {
            StatusChange::Updated {
                user_id,
                away,
                status_text,
                emoji,
            } => {
                match away {
                    Some(true) => {
                        self.status.presence_disabled.insert(*user_id);
                    }
                    Some(false) => {
                        self.status.presence_disabled.remove(user_id);
                    }
                    None => {}
                }
                let mut s = self
                    .status
                    .by_user
                    .get(user_id)
                    .cloned()
                    .unwrap_or_default();
                if let Some(t) = status_text {
                    s.status_text = t.clone();
                }
                if let Some(e) = emoji {
                    s.emoji_name = e.emoji_name.clone();
                    s.emoji_code = e.emoji_code.clone();
                    s.reaction_type = e.reaction_type;
                }
                self.status.by_user.insert(*user_id, s);
            }
        }
    }

    /// `user_settings` (and its legacy `update_global_notifications`) when `away`
    /// changed `presence_enabled`, to the user; then `user_status` with the fields
    /// passed, to everyone who can see the user.
    pub(super) fn status_events(&self, change: &StatusChange) -> Vec<Event> {
        let StatusChange::Updated {
            user_id,
            away,
            status_text,
            emoji,
        } = change;
        let Some(user) = self.user(*user_id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(away) = away {
            let me = Audience::users(vec![*user_id]);
            out.push(Event::new(
                json!({"type": "user_settings", "op": "update", "property": "presence_enabled", "value": !away}),
                me.clone(),
            ));
            out.push(
                Event::new(
                    json!({"type": "update_global_notifications", "user": self.api_email(user), "notification_name": "presence_enabled", "setting": !away}),
                    me,
                )
                .for_capability("user_settings_object", false),
            );
        }
        let mut event = Map::new();
        event.insert("type".into(), "user_status".into());
        event.insert("user_id".into(), (*user_id).into());
        // The fields the update passed, and only those (Zulip's `do_update_user_status`):
        // a client applies each field present as a change (zulip-flutter's
        // `UserStatusChange` too), so one left out is one left as it was.
        if let Some(away) = away {
            event.insert("away".into(), (*away).into());
        }
        if let Some(t) = status_text {
            event.insert("status_text".into(), t.clone().into());
        }
        if let Some(e) = emoji {
            event.insert("emoji_name".into(), e.emoji_name.clone().into());
            event.insert("emoji_code".into(), e.emoji_code.clone().into());
            event.insert("reaction_type".into(), e.reaction_type.as_str().into());
        }
        out.push(Event::new(
            Value::Object(event),
            Audience::users(self.active_users(false)),
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_is_stripped_then_counted() {
        assert_eq!(parse_status_text("  hi \u{1f} ").as_deref(), Ok("hi"));
        let sixty = "é".repeat(60);
        assert_eq!(
            parse_status_text(&format!("  {sixty}  ")).as_deref(),
            Ok(sixty.as_str())
        );
        assert_eq!(
            parse_status_text(&"x".repeat(61)).map_err(|e| e.msg),
            Err("status_text is too long (limit: 60 characters)".into())
        );
    }
}

//! Account lifecycle: deactivation, reactivation, role and name changes
//! (`DELETE /users/{user_id}`, `DELETE /users/me`, `DELETE /bots/{bot_id}`,
//! `POST /users/{user_id}/reactivate`, `PATCH /users/{user_id}`).
//!
//! Zulip's rules (`zerver/views/users.py`, `zerver/lib/users.py` `access_user_by_id`,
//! `access_bot_by_id`) and events (`zerver/actions/users.py` `do_deactivate_user`,
//! `do_change_user_role`; `zerver/actions/create_user.py` `do_reactivate_user`;
//! `zerver/actions/user_settings.py` `do_change_full_name`):
//!
//! | Change            | Events                                                   | Recipients |
//! |-------------------|----------------------------------------------------------|------------|
//! | `Deactivated`     | `subscription` `peer_remove` for the user's channels; `realm_user` `update` `{person: {user_id, is_active: false}}`; bots: `realm_bot` `update` `{bot: {user_id, is_active: false}}` | those who see the subscribers; active users; active human administrators and the owner |
//! | `Reactivated`     | `realm_user` `update` `{person: {user_id, is_active: true}}`; humans: `realm_export_consent`; bots: `realm_bot` `update`; `subscription` `peer_add`; `user_group` `add_members` per group the user is a direct member of | active users; active human administrators; administrators and the owner; those who see the subscribers; active users |
//! | `RoleChanged`     | `realm_user` `update` `{person: {user_id, role}}`; `user_group` `remove_members` (old role's group), `add_members` (new one), full members group; `stream` `create` + `peer_add` / `delete` for channels whose metadata the user gains or loses | active users; active users; the user |
//! | `FullNameChanged` | `realm_user` `update` `{person: {user_id, full_name}}`; bots: `realm_bot` `update` `{bot: {user_id, full_name}}` | active users; administrators and the owner |
//!
//! Membership of system groups is derived from `role` and `is_active`, so deactivation
//! and role changes need no group records.

use std::collections::BTreeMap;

use serde_json::json;

use super::events::{Audience, Event};
use super::groups::SystemGroup;
use super::profile_fields::UserProfileDataUpdate;
use super::users::check_full_name;
use super::{Change, Cx, Decided, Realm, Role, User, UserChange, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Zulip's limit on `deactivation_notification_comment` (`check_capped_string`).
pub const MAX_DEACTIVATION_COMMENT_LENGTH: usize = 2000;

/// `CannotDeactivateLastUserError`: 400 `CANNOT_DEACTIVATE_LAST_USER` with
/// `is_last_owner` and `entity`.
pub fn cannot_deactivate_last_user(is_last_owner: bool) -> ApiError {
    let entity = if is_last_owner {
        "organization owner"
    } else {
        "user"
    };
    ApiError::new(
        400,
        ErrorCode::CannotDeactivateLastUser,
        format!("Cannot deactivate the only {entity}."),
    )
    .with("is_last_owner", is_last_owner)
    .with("entity", entity)
}

/// `DELETE /users/{user_id}`: the user, and the notification comment (checked for
/// length on the worker; hearth sends no email, so it is not used).
#[derive(Debug, Clone)]
pub struct DeactivateUser {
    /// As sent: the lookup (and its error) belongs to the rule.
    pub id: i64,
    pub comment: Option<String>,
}

/// `DELETE /users/me`.
#[derive(Debug, Clone, Copy)]
pub struct DeactivateOwnUser;

/// `DELETE /bots/{bot_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeactivateBot {
    pub id: i64,
}

/// `POST /users/{user_id}/reactivate`.
#[derive(Debug, Clone, Copy)]
pub struct ReactivateUser {
    pub id: i64,
}

/// `PATCH /users/{user_id}`: the user, and the fields to change (absent: unchanged).
#[derive(Debug, Clone, Default)]
pub struct UpdateUser {
    pub id: i64,
    pub full_name: Option<String>,
    pub role: Option<Role>,
    /// `profile_data`, parsed (`parse_user_profile_data`).
    pub profile_data: Option<UserProfileDataUpdate>,
}

/// Zulip's `get_system_user_group_for_user`: the one system group a role puts a user in
/// (members are also in `role:fullmembers`, handled apart as Zulip does).
fn role_group(role: Role) -> SystemGroup {
    match role {
        Role::Owner => SystemGroup::Owners,
        Role::Administrator => SystemGroup::Administrators,
        Role::Moderator => SystemGroup::Moderators,
        Role::Member => SystemGroup::Members,
        Role::Guest => SystemGroup::Everyone,
    }
}

impl Realm {
    /// Zulip's `UserProfile.can_admin_user`: the bot's owner, or an administrator.
    fn can_admin_user(me: &User, target: &User) -> bool {
        target.bot_owner_id == Some(me.id) || me.is_admin()
    }

    /// Zulip's `access_user_by_id(..., for_admin=True)`, its checks in its order.
    pub(crate) fn access_user_for_admin(
        &self,
        me: &User,
        id: i64,
        allow_deactivated: bool,
        allow_bots: bool,
    ) -> ApiResult<&User> {
        let target = u64::try_from(id)
            .ok()
            .and_then(|id| self.user(id))
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if target.is_bot() && !allow_bots {
            return Err(ApiError::bad_request("No such user"));
        }
        if !target.is_active && !allow_deactivated {
            return Err(ApiError::bad_request("User is deactivated"));
        }
        if !Self::can_admin_user(me, target) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        Ok(target)
    }

    /// `GET /bots/{bot_id}/api_key` (feature level 463): the bot's key, for its owner
    /// and administrators (Zulip's `access_bot_by_id`).
    pub fn view_bot_api_key(&self, me: &User, bot_id: i64) -> ApiResult<String> {
        Ok(self.access_bot_for_admin(me, bot_id)?.api_key.clone())
    }

    /// Zulip's `access_bot_by_id`.
    pub(crate) fn access_bot_for_admin(&self, me: &User, id: i64) -> ApiResult<&User> {
        let target = u64::try_from(id)
            .ok()
            .and_then(|id| self.user(id))
            .filter(|u| u.is_bot())
            .ok_or_else(|| ApiError::bad_request("No such bot"))?;
        if !Self::can_admin_user(me, target) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        if target.can_create_users && !me.is_owner() {
            return Err(ApiError::must_be_owner());
        }
        Ok(target)
    }

    /// Zulip's `check_last_owner`: the target is the only active human owner. Stops at
    /// the second owner found.
    fn is_last_owner(&self, target: &User) -> bool {
        target.is_owner()
            && !target.is_bot()
            && self
                .users
                .values()
                .filter(|u| u.is_active && !u.is_bot() && u.is_owner())
                .take(2)
                .count()
                == 1
    }

    /// `do_deactivate_user`: the user's active bots first (cascade), then the user.
    fn deactivation_changes(&self, target: &User) -> Vec<Change> {
        let mut changes = Vec::new();
        if !target.is_bot() {
            changes.extend(
                self.users
                    .values()
                    .filter(|b| b.is_bot() && b.is_active && b.bot_owner_id == Some(target.id))
                    .map(|b| Change::User(UserChange::Deactivated { user_id: b.id })),
            );
        }
        changes.push(Change::User(UserChange::Deactivated { user_id: target.id }));
        changes
    }

    /// `DELETE /users/{user_id}` (`deactivate_user_backend`); the comment's length was
    /// checked with the parameters, and hearth sends no email.
    pub fn decide_deactivate_user(
        &self,
        me: &User,
        q: DeactivateUser,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let target = self.access_user_for_admin(me, q.id, false, false)?;
        if target.is_owner() && !me.is_owner() {
            return Err(ApiError::must_be_owner());
        }
        if self.is_last_owner(target) {
            return Err(ApiError::bad_request(
                "Cannot deactivate the only organization owner",
            ));
        }
        Ok(Decided::changes(self.deactivation_changes(target)))
    }

    /// `DELETE /bots/{bot_id}` (`deactivate_bot_backend`). An already deactivated bot
    /// stays as it is (Zulip's `do_deactivate_user` returns early).
    pub fn decide_deactivate_bot(
        &self,
        me: &User,
        q: DeactivateBot,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let target = self.access_bot_for_admin(me, q.id)?;
        if !target.is_active {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(self.deactivation_changes(target)))
    }

    /// `DELETE /users/me` (`deactivate_user_own_backend`).
    pub fn decide_deactivate_own_user(
        &self,
        me: &User,
        _q: DeactivateOwnUser,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let active = self.users.values().filter(|u| u.is_active).take(2).count();
        if active == 1 {
            return Err(cannot_deactivate_last_user(false));
        }
        if self.is_last_owner(me) {
            return Err(cannot_deactivate_last_user(true));
        }
        Ok(Decided::changes(self.deactivation_changes(me)))
    }

    /// `POST /users/{user_id}/reactivate` (`reactivate_user_backend`).
    pub fn decide_reactivate_user(
        &self,
        me: &User,
        q: ReactivateUser,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let target = self.access_user_for_admin(me, q.id, true, true)?;
        if target.is_bot() {
            // `check_bot_creation_policy`: guests may not have bots.
            if me.is_guest() {
                return Err(ApiError::must_be_admin());
            }
            // `check_bot_name_available(is_activation=True)`.
            let name = target.full_name.trim();
            if self
                .users
                .values()
                .any(|u| u.is_active && u.full_name == name)
            {
                return Err(ApiError::bad_request(format!(
                    "There is already an active bot named \"{}\" in this organization. To reactivate this bot, you must rename or deactivate the other one first.",
                    target.full_name
                )));
            }
        }
        Ok(Decided::changes(vec![Change::User(
            UserChange::Reactivated { user_id: target.id },
        )]))
    }

    /// `PATCH /users/{user_id}` (`update_user_backend`): the role, then the full name,
    /// then `profile_data`.
    /// Everything is checked before anything changes.
    pub fn decide_update_user(
        &self,
        me: &User,
        update: UpdateUser,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let target = self.access_user_for_admin(me, update.id, true, true)?;
        let mut changes = Vec::new();
        if let Some(role) = update.role.filter(|r| *r != target.role) {
            if (role == Role::Owner || target.role == Role::Owner) && !me.is_owner() {
                return Err(ApiError::must_be_owner());
            } else if !me.is_admin() {
                return Err(ApiError::must_be_admin());
            }
            if target.role == Role::Owner && self.is_last_owner(target) {
                return Err(ApiError::bad_request(
                    "The owner permission cannot be removed from the only organization owner.",
                ));
            }
            changes.push(Change::User(UserChange::RoleChanged {
                user_id: target.id,
                role,
            }));
        }
        if let Some(raw) = &update.full_name {
            if target.full_name != *raw && !raw.trim().is_empty() {
                let full_name = check_full_name(raw)?;
                changes.push(Change::User(UserChange::FullNameChanged {
                    user_id: target.id,
                    full_name,
                }));
            }
        }
        if let Some(data) = &update.profile_data {
            changes.extend(self.user_profile_data_changes(me, target.id, data)?);
        }
        Ok(Decided::changes(changes))
    }

    /// Applies a lifecycle change (the other `UserChange`s are applied in `mod.rs`).
    pub(super) fn apply_lifecycle_change(&mut self, change: &UserChange) {
        let id = match change {
            UserChange::Deactivated { user_id }
            | UserChange::Reactivated { user_id }
            | UserChange::RoleChanged { user_id, .. }
            | UserChange::FullNameChanged { user_id, .. } => *user_id,
            UserChange::UserCreated(_)
            | UserChange::CanCreateUsersSet { .. }
            | UserChange::PasswordChanged { .. } => return,
        };
        let Some(u) = self.users.get_mut(&id) else {
            return;
        };
        let u = std::sync::Arc::make_mut(u);
        match change {
            UserChange::Deactivated { .. } => u.is_active = false,
            UserChange::Reactivated { .. } => u.is_active = true,
            UserChange::RoleChanged { role, .. } => u.role = *role,
            UserChange::FullNameChanged { full_name, .. } => u.full_name = full_name.clone(),
            UserChange::UserCreated(_)
            | UserChange::CanCreateUsersSet { .. }
            | UserChange::PasswordChanged { .. } => {}
        }
        if let UserChange::Deactivated { user_id } = change {
            self.end_user_sessions(*user_id);
        }
    }

    /// Zulip's `bot_owner_user_ids`: active human administrators and the bot's owner.
    fn bot_owner_audience(&self, bot: &User) -> Audience {
        Audience::users(
            self.users
                .values()
                .filter(|u| {
                    u.is_active && ((u.is_admin() && !u.is_bot()) || Some(u.id) == bot.bot_owner_id)
                })
                .map(|u| u.id)
                .collect(),
        )
    }

    fn realm_user_update(&self, person: serde_json::Value) -> Event {
        Event::new(
            json!({"type": "realm_user", "op": "update", "person": person}),
            Audience::users(self.active_users(false)),
        )
    }

    fn group_members_event(&self, op: &str, group: SystemGroup, user: UserId) -> Event {
        Event::new(
            json!({"type": "user_group", "op": op, "group_id": self.system_group_id(group), "user_ids": [user]}),
            Audience::users(self.active_users(false)),
        )
    }

    /// The channels (not archived) `user` is subscribed to, as the peer events want them.
    fn subscribed_channels(
        &self,
        user: UserId,
    ) -> BTreeMap<super::channels::ChannelId, Vec<UserId>> {
        self.channels
            .values()
            .filter(|ch| !ch.is_archived && ch.is_subscribed(user))
            .map(|ch| (ch.id, vec![user]))
            .collect()
    }

    /// The events of a lifecycle change; `self` is the version after it.
    pub(super) fn lifecycle_events(&self, before: &Realm, change: &UserChange) -> Vec<Event> {
        let mut out = Vec::new();
        match change {
            UserChange::Deactivated { user_id } => {
                let Some(user) = self.user(*user_id) else {
                    return out;
                };
                out.extend(self.peer_events("peer_remove", &self.subscribed_channels(user.id)));
                out.push(self.realm_user_update(json!({"user_id": user.id, "is_active": false})));
                if user.is_bot() {
                    out.push(Event::new(
                        json!({"type": "realm_bot", "op": "update", "bot": {"user_id": user.id, "is_active": false}}),
                        self.bot_owner_audience(user),
                    ));
                }
            }
            UserChange::Reactivated { user_id } => {
                let Some(user) = self.user(*user_id) else {
                    return out;
                };
                out.push(self.realm_user_update(json!({"user_id": user.id, "is_active": true})));
                if user.is_bot() {
                    out.push(Event::new(
                        json!({"type": "realm_bot", "op": "update", "bot": {"user_id": user.id, "is_active": true}}),
                        self.bot_owner_audience(user),
                    ));
                } else {
                    let admins: Vec<UserId> = self
                        .users
                        .values()
                        .filter(|u| u.is_active && u.is_admin() && !u.is_bot())
                        .map(|u| u.id)
                        .collect();
                    let consented = self.consents_to_export(user);
                    out.push(Event::new(
                        json!({"type": "realm_export_consent", "user_id": user.id, "consented": consented}),
                        Audience::users(admins),
                    ));
                }
                out.extend(self.peer_events("peer_add", &self.subscribed_channels(user.id)));
                let all = Audience::users(self.active_users(false));
                for g in self.groups.values() {
                    if self.is_direct_group_member(user, g.id) {
                        out.push(Event::new(
                            json!({"type": "user_group", "op": "add_members", "group_id": g.id, "user_ids": [user.id]}),
                            all.clone(),
                        ));
                    }
                }
            }
            UserChange::RoleChanged { user_id, role } => {
                let (Some(user), Some(old)) = (self.user(*user_id), before.user(*user_id)) else {
                    return out;
                };
                out.push(self.realm_user_update(json!({"user_id": user.id, "role": role.value()})));
                out.push(self.group_members_event("remove_members", role_group(old.role), user.id));
                out.push(self.group_members_event("add_members", role_group(*role), user.id));
                if *role == Role::Member {
                    out.push(self.group_members_event(
                        "add_members",
                        SystemGroup::FullMembers,
                        user.id,
                    ));
                } else if old.role == Role::Member {
                    out.push(self.group_members_event(
                        "remove_members",
                        SystemGroup::FullMembers,
                        user.id,
                    ));
                }
                out.extend(self.role_access_events(before, old, user));
            }
            UserChange::FullNameChanged { user_id, full_name } => {
                let Some(user) = self.user(*user_id) else {
                    return out;
                };
                out.push(
                    self.realm_user_update(json!({"user_id": user.id, "full_name": full_name})),
                );
                if user.is_bot() {
                    out.push(Event::new(
                        json!({"type": "realm_bot", "op": "update", "bot": {"user_id": user.id, "full_name": full_name}}),
                        self.bot_owner_audience(user),
                    ));
                }
            }
            UserChange::UserCreated(_)
            | UserChange::CanCreateUsersSet { .. }
            | UserChange::PasswordChanged { .. } => {}
        }
        out
    }

    /// Zulip's `send_stream_events_for_role_update`: channels whose metadata the user
    /// gains (`stream` `create`, then a `peer_add` per channel) or loses (`stream`
    /// `delete`), to the user.
    fn role_access_events(&self, before: &Realm, old: &User, user: &User) -> Vec<Event> {
        let mut gained = Vec::new();
        let mut lost = Vec::new();
        for ch in self.channels.values().filter(|ch| !ch.is_archived) {
            let was = before
                .channel(ch.id)
                .is_some_and(|c| before.can_see_channel(old, c));
            let now = self.can_see_channel(user, ch);
            if now && !was {
                gained.push(ch);
            } else if was && !now {
                lost.push(ch.id);
            }
        }
        let to_user = || Audience::users(vec![user.id]);
        let mut out = Vec::new();
        if !gained.is_empty() {
            let streams: Vec<_> = gained.iter().map(|ch| self.stream_json(ch)).collect();
            out.push(Event::new(
                json!({"type": "stream", "op": "create", "streams": streams}),
                to_user(),
            ));
            for ch in &gained {
                out.push(Event::new(
                    json!({"type": "subscription", "op": "peer_add", "stream_ids": [ch.id], "user_ids": ch.subscriber_ids()}),
                    to_user(),
                ));
            }
        }
        if !lost.is_empty() {
            let streams: Vec<_> = lost.iter().map(|id| json!({"stream_id": id})).collect();
            out.push(Event::new(
                json!({"type": "stream", "op": "delete", "streams": streams, "stream_ids": lost}),
                to_user(),
            ));
        }
        out
    }
}

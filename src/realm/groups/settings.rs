//! Group-setting values: parsing what a client sends (a group id, or
//! `{direct_members, direct_subgroups}`, wrapped in `{new, old}` on updates), Zulip's
//! normalisation (`parse_group_setting_value`) and checks (`access_user_group_for_setting`
//! with each setting's `GroupPermissionSetting`), and the realm's own group settings
//! (`Realm.REALM_PERMISSION_GROUP_SETTINGS`) with `PATCH /realm`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::*;
use crate::error::{ApiResult, ErrorCode};
use crate::realm::{Change, Decided, RealmChange};

/// A group-setting value as a client sent it, before normalisation and checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    Group(i64),
    Members {
        members: Vec<i64>,
        subgroups: Vec<i64>,
    },
}

impl SettingValue {
    /// Parses a value: a group id, or `{direct_members, direct_subgroups}`; `name` is
    /// the parameter, for Zulip's texts.
    pub fn parse(name: &str, v: &Value) -> ApiResult<SettingValue> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .map(SettingValue::Group)
                .ok_or_else(invalid_group),
            Value::Object(m) => {
                let ids = |key: &str| -> ApiResult<Vec<i64>> {
                    match m.get(key) {
                        None => Err(ApiError::bad_request(format!(
                            "{name}[\"{key}\"] field is missing: Field required"
                        ))),
                        Some(Value::Array(a)) => a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| {
                                x.as_i64().ok_or_else(|| {
                                    ApiError::bad_request(format!(
                                        "{name}[\"{key}\"][{i}] is not an integer"
                                    ))
                                })
                            })
                            .collect(),
                        Some(_) => Err(ApiError::bad_request(format!(
                            "{name}[\"{key}\"] is not a list"
                        ))),
                    }
                };
                Ok(SettingValue::Members {
                    members: ids("direct_members")?,
                    subgroups: ids("direct_subgroups")?,
                })
            }
            _ => Err(ApiError::bad_request(format!("{name} is not valid"))),
        }
    }

    /// Parses an update, `{"new": value, "old": value}` (`old` optional); a bare value
    /// is taken as the new one. Returns `(new, old)`.
    pub fn parse_change(name: &str, v: &Value) -> ApiResult<(SettingValue, Option<SettingValue>)> {
        match v {
            Value::Object(m) if m.contains_key("new") => {
                let new = SettingValue::parse(name, &m["new"])?;
                let old = m
                    .get("old")
                    .map(|o| SettingValue::parse(name, o))
                    .transpose()?;
                Ok((new, old))
            }
            Value::Object(_) => Err(ApiError::bad_request(format!(
                "{name}[\"new\"] field is missing: Field required"
            ))),
            other => Ok((SettingValue::parse(name, other)?, None)),
        }
    }

    /// Zulip's `parse_group_setting_value`: no members and one subgroup is that group;
    /// nothing at all is `role:nobody`.
    pub fn normalize(self, nobody: GroupId) -> SettingValue {
        match self {
            SettingValue::Members { members, subgroups } if members.is_empty() => {
                match subgroups.as_slice() {
                    [] => SettingValue::Group(nobody as i64),
                    [one] => SettingValue::Group(*one),
                    _ => SettingValue::Members { members, subgroups },
                }
            }
            other => other,
        }
    }

    /// Zulip's `are_both_group_setting_values_equal` against a stored value (whose
    /// anonymous members count only while active).
    fn same_as(&self, realm: &Realm, current: &GroupSetting) -> bool {
        match (self, current) {
            (SettingValue::Group(a), GroupSetting::Named(b)) => *a == *b as i64,
            (
                SettingValue::Members { members, subgroups },
                GroupSetting::Anonymous {
                    members: cm,
                    subgroups: cs,
                },
            ) => {
                let set = |v: &[i64]| v.iter().copied().collect::<BTreeSet<i64>>();
                let active: Vec<i64> = cm
                    .iter()
                    .filter(|id| realm.user(**id).is_some_and(|u| u.is_active))
                    .map(|id| *id as i64)
                    .collect();
                let subs: Vec<i64> = cs.iter().map(|id| *id as i64).collect();
                set(members) == set(&active) && set(subgroups) == set(&subs)
            }
            _ => false,
        }
    }

    /// The value as the API echoes it (`PATCH /realm` answers it).
    pub fn json(&self) -> Value {
        match self {
            SettingValue::Group(id) => json!(id),
            SettingValue::Members { members, subgroups } => {
                json!({"direct_members": members, "direct_subgroups": subgroups})
            }
        }
    }
}

/// What values a group setting accepts (Zulip's `GroupPermissionSetting`).
#[derive(Debug, Clone, Copy)]
pub struct SettingRules {
    pub require_system_group: bool,
    pub allow_internet_group: bool,
    pub allow_nobody_group: bool,
    pub allow_everyone_group: bool,
    /// When not empty, the only system groups allowed.
    pub allowed_system_groups: &'static [SystemGroup],
}

impl SettingRules {
    /// The rules of a named group's permission.
    pub fn for_group(p: GroupPermission) -> SettingRules {
        SettingRules {
            require_system_group: false,
            allow_internet_group: false,
            allow_nobody_group: true,
            allow_everyone_group: p.allows_everyone(),
            allowed_system_groups: &[],
        }
    }
}

/// The realm's group-valued settings, in Zulip's order
/// (`Realm.REALM_PERMISSION_GROUP_SETTINGS`); the variant order is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RealmSetting {
    CreateMultiuseInvite,
    CanAccessAllUsers,
    CanAddSubscribers,
    CanAddCustomEmoji,
    CanCreateBots,
    CanCreateGroups,
    CanCreatePublicChannel,
    CanCreatePrivateChannel,
    CanCreateWebPublicChannel,
    CanCreateWriteOnlyBots,
    CanDeleteAnyMessage,
    CanDeleteOwnMessage,
    CanInviteUsers,
    CanManageAllGroups,
    CanManageBilling,
    CanMentionManyUsers,
    CanMoveMessagesBetweenChannels,
    CanMoveMessagesBetweenTopics,
    CanResolveTopics,
    CanSetDeleteMessagePolicy,
    CanSetTopicsPolicy,
    CanSummarizeTopics,
    DirectMessageInitiator,
    DirectMessagePermission,
}

impl RealmSetting {
    pub const ALL: [RealmSetting; 24] = [
        RealmSetting::CreateMultiuseInvite,
        RealmSetting::CanAccessAllUsers,
        RealmSetting::CanAddSubscribers,
        RealmSetting::CanAddCustomEmoji,
        RealmSetting::CanCreateBots,
        RealmSetting::CanCreateGroups,
        RealmSetting::CanCreatePublicChannel,
        RealmSetting::CanCreatePrivateChannel,
        RealmSetting::CanCreateWebPublicChannel,
        RealmSetting::CanCreateWriteOnlyBots,
        RealmSetting::CanDeleteAnyMessage,
        RealmSetting::CanDeleteOwnMessage,
        RealmSetting::CanInviteUsers,
        RealmSetting::CanManageAllGroups,
        RealmSetting::CanManageBilling,
        RealmSetting::CanMentionManyUsers,
        RealmSetting::CanMoveMessagesBetweenChannels,
        RealmSetting::CanMoveMessagesBetweenTopics,
        RealmSetting::CanResolveTopics,
        RealmSetting::CanSetDeleteMessagePolicy,
        RealmSetting::CanSetTopicsPolicy,
        RealmSetting::CanSummarizeTopics,
        RealmSetting::DirectMessageInitiator,
        RealmSetting::DirectMessagePermission,
    ];

    /// The settings `PATCH /realm` changes, in Zulip's order: those that hearth's
    /// operations consult (the invitation settings have no operation in hearth; their
    /// values are still kept and reported). Left out: `can_access_all_users_group`
    /// (hearth does not restrict which users a guest can see), and the billing,
    /// delete-policy and summary settings (no hearth operation reads them).
    pub const EDITABLE: [RealmSetting; 20] = [
        RealmSetting::CreateMultiuseInvite,
        RealmSetting::CanAddSubscribers,
        RealmSetting::CanAddCustomEmoji,
        RealmSetting::CanCreateBots,
        RealmSetting::CanCreateGroups,
        RealmSetting::CanCreatePublicChannel,
        RealmSetting::CanCreatePrivateChannel,
        RealmSetting::CanCreateWebPublicChannel,
        RealmSetting::CanCreateWriteOnlyBots,
        RealmSetting::CanDeleteAnyMessage,
        RealmSetting::CanDeleteOwnMessage,
        RealmSetting::CanInviteUsers,
        RealmSetting::CanManageAllGroups,
        RealmSetting::CanMentionManyUsers,
        RealmSetting::CanMoveMessagesBetweenChannels,
        RealmSetting::CanMoveMessagesBetweenTopics,
        RealmSetting::CanResolveTopics,
        RealmSetting::CanSetTopicsPolicy,
        RealmSetting::DirectMessageInitiator,
        RealmSetting::DirectMessagePermission,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RealmSetting::CreateMultiuseInvite => "create_multiuse_invite_group",
            RealmSetting::CanAccessAllUsers => "can_access_all_users_group",
            RealmSetting::CanAddSubscribers => "can_add_subscribers_group",
            RealmSetting::CanAddCustomEmoji => "can_add_custom_emoji_group",
            RealmSetting::CanCreateBots => "can_create_bots_group",
            RealmSetting::CanCreateGroups => "can_create_groups",
            RealmSetting::CanCreatePublicChannel => "can_create_public_channel_group",
            RealmSetting::CanCreatePrivateChannel => "can_create_private_channel_group",
            RealmSetting::CanCreateWebPublicChannel => "can_create_web_public_channel_group",
            RealmSetting::CanCreateWriteOnlyBots => "can_create_write_only_bots_group",
            RealmSetting::CanDeleteAnyMessage => "can_delete_any_message_group",
            RealmSetting::CanDeleteOwnMessage => "can_delete_own_message_group",
            RealmSetting::CanInviteUsers => "can_invite_users_group",
            RealmSetting::CanManageAllGroups => "can_manage_all_groups",
            RealmSetting::CanManageBilling => "can_manage_billing_group",
            RealmSetting::CanMentionManyUsers => "can_mention_many_users_group",
            RealmSetting::CanMoveMessagesBetweenChannels => {
                "can_move_messages_between_channels_group"
            }
            RealmSetting::CanMoveMessagesBetweenTopics => "can_move_messages_between_topics_group",
            RealmSetting::CanResolveTopics => "can_resolve_topics_group",
            RealmSetting::CanSetDeleteMessagePolicy => "can_set_delete_message_policy_group",
            RealmSetting::CanSetTopicsPolicy => "can_set_topics_policy_group",
            RealmSetting::CanSummarizeTopics => "can_summarize_topics_group",
            RealmSetting::DirectMessageInitiator => "direct_message_initiator_group",
            RealmSetting::DirectMessagePermission => "direct_message_permission_group",
        }
    }

    /// Zulip's default (the development realm's value of every one of them).
    pub fn default_group(self) -> SystemGroup {
        use RealmSetting::*;
        match self {
            CreateMultiuseInvite | CanDeleteAnyMessage | CanManageBilling | CanMentionManyUsers => {
                SystemGroup::Administrators
            }
            CanAccessAllUsers
            | CanDeleteOwnMessage
            | CanMoveMessagesBetweenTopics
            | CanResolveTopics
            | CanSummarizeTopics
            | DirectMessageInitiator
            | DirectMessagePermission => SystemGroup::Everyone,
            CanCreateWebPublicChannel | CanManageAllGroups => SystemGroup::Owners,
            CanSetDeleteMessagePolicy => SystemGroup::Moderators,
            CanAddSubscribers
            | CanAddCustomEmoji
            | CanCreateBots
            | CanCreateGroups
            | CanCreatePublicChannel
            | CanCreatePrivateChannel
            | CanCreateWriteOnlyBots
            | CanInviteUsers
            | CanMoveMessagesBetweenChannels
            | CanSetTopicsPolicy => SystemGroup::Members,
        }
    }

    pub fn rules(self) -> SettingRules {
        use RealmSetting::*;
        let allow_everyone_group = matches!(
            self,
            CanAccessAllUsers
                | CanDeleteOwnMessage
                | CanMentionManyUsers
                | CanMoveMessagesBetweenTopics
                | CanResolveTopics
                | CanSetTopicsPolicy
                | CanSummarizeTopics
                | DirectMessageInitiator
                | DirectMessagePermission
        );
        SettingRules {
            require_system_group: matches!(self, CanAccessAllUsers | CanCreateWebPublicChannel),
            allow_internet_group: false,
            allow_nobody_group: !matches!(
                self,
                CanAccessAllUsers | CanManageAllGroups | CanManageBilling
            ),
            allow_everyone_group,
            allowed_system_groups: match self {
                CanAccessAllUsers => &[SystemGroup::Everyone, SystemGroup::Members],
                CanCreateWebPublicChannel => &[
                    SystemGroup::Moderators,
                    SystemGroup::Administrators,
                    SystemGroup::Owners,
                    SystemGroup::Nobody,
                ],
                _ => &[],
            },
        }
    }

    /// Settings only owners may change (`update_realm`).
    pub fn owner_only(self) -> bool {
        matches!(
            self,
            RealmSetting::CreateMultiuseInvite
                | RealmSetting::CanCreateGroups
                | RealmSetting::CanInviteUsers
                | RealmSetting::CanManageAllGroups
                | RealmSetting::CanManageBilling
        )
    }
}

/// `'old' value does not match the expected value.` (Zulip's
/// `PreviousSettingValueMismatchedError`).
fn old_value_mismatch() -> ApiError {
    ApiError::new(
        400,
        ErrorCode::ExpectationMismatch,
        "'old' value does not match the expected value.",
    )
}

impl Realm {
    /// Zulip's `parse_group_setting_value` then `access_user_group_for_setting`:
    /// a named group must exist and be active, and satisfy `rules`; an anonymous value's
    /// members must be active users and its subgroups active groups.
    pub fn check_setting_value(
        &self,
        name: &str,
        value: SettingValue,
        rules: Option<SettingRules>,
    ) -> ApiResult<GroupSetting> {
        match value.normalize(self.system_group_id(SystemGroup::Nobody)) {
            SettingValue::Group(id) => {
                let g = u64::try_from(id)
                    .ok()
                    .and_then(|id| self.groups.get(&id))
                    .ok_or_else(invalid_group)?;
                if self.is_group_deactivated(g.id) {
                    return Err(group_deactivated());
                }
                if let Some(rules) = rules {
                    Self::check_rules(name, g, rules)?;
                }
                Ok(GroupSetting::Named(g.id))
            }
            SettingValue::Members { members, subgroups } => {
                if rules.is_some_and(|r| r.require_system_group) {
                    return Err(system_group_required(name));
                }
                let mut member_ids = Vec::with_capacity(members.len());
                for id in &members {
                    let user = u64::try_from(*id)
                        .ok()
                        .and_then(|id| self.user(id))
                        .filter(|u| u.is_active)
                        .ok_or_else(|| invalid_user_id(id))?;
                    member_ids.push(user.id);
                }
                let mut subgroup_ids = Vec::with_capacity(subgroups.len());
                for id in &subgroups {
                    let g = u64::try_from(*id)
                        .ok()
                        .and_then(|id| self.groups.get(&id))
                        .ok_or_else(|| invalid_group_id(id))?;
                    subgroup_ids.push(g.id);
                }
                if subgroup_ids.iter().any(|id| self.is_group_deactivated(*id)) {
                    return Err(group_deactivated());
                }
                member_ids.sort_unstable();
                member_ids.dedup();
                subgroup_ids.sort_unstable();
                subgroup_ids.dedup();
                Ok(GroupSetting::Anonymous {
                    members: member_ids,
                    subgroups: subgroup_ids,
                })
            }
        }
    }

    /// Zulip's `check_setting_configuration_for_system_groups`.
    fn check_rules(name: &str, g: &UserGroup, rules: SettingRules) -> ApiResult<()> {
        if rules.require_system_group && g.system.is_none() {
            return Err(system_group_required(name));
        }
        let refused = |group: &str| {
            Err(ApiError::bad_request(format!(
                "'{name}' setting cannot be set to '{group}' group."
            )))
        };
        match g.system {
            Some(SystemGroup::Internet) if !rules.allow_internet_group => {
                return refused(SystemGroup::Internet.name())
            }
            Some(SystemGroup::Nobody) if !rules.allow_nobody_group => {
                return refused(SystemGroup::Nobody.name())
            }
            Some(SystemGroup::Everyone) if !rules.allow_everyone_group => {
                return refused(SystemGroup::Everyone.name())
            }
            _ => {}
        }
        if !rules.allowed_system_groups.is_empty()
            && !rules
                .allowed_system_groups
                .iter()
                .any(|s| s.name() == g.name)
        {
            return refused(&g.name);
        }
        Ok(())
    }

    /// Zulip's `validate_group_setting_value_change`: whether `new` differs from
    /// `current`, after checking the client's expected `old` value.
    pub(super) fn setting_changes(
        &self,
        current: &GroupSetting,
        new: &SettingValue,
        old: Option<SettingValue>,
    ) -> ApiResult<bool> {
        let nobody = self.system_group_id(SystemGroup::Nobody);
        if let Some(old) = old {
            if !old.normalize(nobody).same_as(self, current) {
                return Err(old_value_mismatch());
            }
        }
        Ok(!new.same_as(self, current))
    }

    /// A realm group setting's value: set, or Zulip's default.
    pub fn realm_setting(&self, s: RealmSetting) -> GroupSetting {
        self.realm_group_settings
            .get(&s)
            .cloned()
            .unwrap_or_else(|| self.system_setting(s.default_group()))
    }

    /// Zulip's `UserProfile.has_permission` for a realm group setting.
    pub fn has_realm_permission(&self, user: &User, s: RealmSetting) -> bool {
        self.has_group_permission(user, &self.realm_setting(s), s.rules().allow_everyone_group)
    }

    /// The API value of a setting: an anonymous value lists its active members only.
    pub fn setting_json(&self, s: &GroupSetting) -> Value {
        match s {
            GroupSetting::Named(id) => json!(id),
            GroupSetting::Anonymous { members, subgroups } => {
                let active: Vec<UserId> = members
                    .iter()
                    .copied()
                    .filter(|id| self.user(*id).is_some_and(|u| u.is_active))
                    .collect();
                json!({"direct_members": active, "direct_subgroups": subgroups})
            }
        }
    }

    /// `PATCH /realm`'s group settings (`decide_update_realm` checks the rest first):
    /// owners only for `owner_only` settings, then each in turn, as `update_realm`'s
    /// loop. Returns the changes and the answer's data (each changed setting with its
    /// new value, normalised).
    pub fn decide_update_realm_settings(
        &self,
        me: &User,
        updates: Vec<(RealmSetting, SettingValue, Option<SettingValue>)>,
    ) -> ApiResult<Decided<Vec<(RealmSetting, SettingValue)>>> {
        if updates.iter().any(|(s, _, _)| s.owner_only()) && !me.is_owner() {
            return Err(ApiError::must_be_owner());
        }
        let nobody = self.system_group_id(SystemGroup::Nobody);
        let mut changes = Vec::new();
        let mut data = Vec::new();
        for (s, new, old) in updates {
            let new = new.normalize(nobody);
            if !self.setting_changes(&self.realm_setting(s), &new, old)? {
                continue;
            }
            let value = self.check_setting_value(s.name(), new.clone(), Some(s.rules()))?;
            data.push((s, new.clone()));
            changes.push(Change::Realm(RealmChange::GroupSettingSet {
                setting: s,
                value,
            }));
        }
        Ok(Decided::new(changes, data))
    }
}

/// `'x' must be a system user group.`
fn system_group_required(name: &str) -> ApiError {
    ApiError::bad_request(format!("'{name}' must be a system user group."))
}

/// `Invalid user group ID: N`.
pub fn invalid_group_id(id: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("Invalid user group ID: {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_parse_and_normalize() {
        let p = |v: Value| SettingValue::parse("s", &v);
        assert_eq!(p(json!(5)).ok(), Some(SettingValue::Group(5)));
        assert_eq!(
            p(json!({"direct_members": [1]})).map_err(|e| e.msg),
            Err("s[\"direct_subgroups\"] field is missing: Field required".into())
        );
        assert_eq!(
            p(json!({"direct_members": ["a"], "direct_subgroups": []})).map_err(|e| e.msg),
            Err("s[\"direct_members\"][0] is not an integer".into())
        );
        let empty = SettingValue::Members {
            members: vec![],
            subgroups: vec![],
        };
        assert_eq!(empty.normalize(1), SettingValue::Group(1));
        let one = SettingValue::Members {
            members: vec![],
            subgroups: vec![7],
        };
        assert_eq!(one.normalize(1), SettingValue::Group(7));
        assert_eq!(
            SettingValue::parse_change("s", &json!({"old": 1})).map_err(|e| e.msg),
            Err("s[\"new\"] field is missing: Field required".into())
        );
        assert_eq!(
            SettingValue::parse_change("s", &json!({"new": 2, "old": 1})).ok(),
            Some((SettingValue::Group(2), Some(SettingValue::Group(1))))
        );
    }

    #[test]
    fn realm_settings_follow_zulip() {
        assert_eq!(RealmSetting::ALL.len(), 24);
        assert_eq!(RealmSetting::ALL[0].name(), "create_multiuse_invite_group");
        assert_eq!(
            RealmSetting::CanManageAllGroups.default_group(),
            SystemGroup::Owners
        );
        assert!(!RealmSetting::CanManageAllGroups.rules().allow_nobody_group);
        assert!(RealmSetting::CanCreateGroups.owner_only());
        assert!(!RealmSetting::CanAddCustomEmoji.owner_only());
    }
}

//! User groups (seed 2.10, 4.9, 4.16): Zulip's system groups, whose membership follows
//! roles, and named groups that users create, with their members, subgroups and
//! group-valued permissions; group-setting values (a named group, or an anonymous set of
//! members and subgroups) as channels, groups and the realm hold them.
//!
//! This file holds the types and the membership rules; each concern has its file:
//! `settings` (parsing and checking group-setting values, the realm's own group
//! settings), `decide` (the rules of the group endpoints), `uses` (where each group is
//! used, for deactivation objections), `render` (JSON shapes and reads), `events`
//! (the client events of group changes) and `apply`.

mod apply;
mod decide;
mod events;
mod render;
mod settings;
pub mod uses;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::channels::{ChannelId, ChannelSetting};
use super::{Realm, Role, User, UserId};
use crate::error::ApiError;
use crate::realm::GroupChange;

pub use decide::{
    DeactivateGroup, GroupPatch, MembersEndpoint, MembersUpdate, NewGroup, UpdateGroup,
    UpdateGroupMembers,
};
pub use settings::{RealmSetting, SettingValue};
pub use uses::SettingUse;

/// A user group id, unique within a realm.
pub type GroupId = u64;

/// Zulip's `NamedUserGroup.MAX_NAME_LENGTH`.
pub const MAX_GROUP_NAME_LENGTH: usize = 100;
/// Zulip's `NamedUserGroup.INVALID_NAME_PREFIXES`.
pub const INVALID_GROUP_NAME_PREFIXES: [&str; 5] = ["@", "role:", "user:", "stream:", "channel:"];

/// Zulip's system groups, whose members are derived from roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SystemGroup {
    Nobody,
    Owners,
    Administrators,
    Moderators,
    FullMembers,
    Members,
    Everyone,
    Internet,
}

impl SystemGroup {
    /// Every system group, in the order a realm creates them.
    pub const ALL: [SystemGroup; 8] = [
        SystemGroup::Nobody,
        SystemGroup::Owners,
        SystemGroup::Administrators,
        SystemGroup::Moderators,
        SystemGroup::FullMembers,
        SystemGroup::Members,
        SystemGroup::Everyone,
        SystemGroup::Internet,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SystemGroup::Nobody => "role:nobody",
            SystemGroup::Owners => "role:owners",
            SystemGroup::Administrators => "role:administrators",
            SystemGroup::Moderators => "role:moderators",
            SystemGroup::FullMembers => "role:fullmembers",
            SystemGroup::Members => "role:members",
            SystemGroup::Everyone => "role:everyone",
            SystemGroup::Internet => "role:internet",
        }
    }

    /// Zulip's description, as the API shows it.
    pub fn description(self) -> &'static str {
        match self {
            SystemGroup::FullMembers => {
                "Members of this organization, not including new accounts and guests"
            }
            SystemGroup::Internet => "Everyone on the Internet",
            other => other.stored_description(),
        }
    }

    /// The description the `UserGroupCreated` records of system groups hold. Fixed:
    /// records already written carry it, and the API shows `description` instead.
    fn stored_description(self) -> &'static str {
        match self {
            SystemGroup::Nobody => "Nobody",
            SystemGroup::Owners => "Owners of this organization",
            SystemGroup::Administrators => "Administrators of this organization, including owners",
            SystemGroup::Moderators => "Moderators of this organization, including administrators",
            SystemGroup::FullMembers => "Members of this organization, not including new accounts",
            SystemGroup::Members => "Members of this organization, not including guests",
            SystemGroup::Everyone => "Everyone in this organization, including guests",
            SystemGroup::Internet => "Everyone on the internet",
        }
    }

    pub fn from_name(name: &str) -> Option<SystemGroup> {
        SystemGroup::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Whether a user with `role` is a *direct* member (Zulip puts members both in
    /// `role:members` and, the realm having no waiting period, in `role:fullmembers`).
    fn has_direct_role(self, role: Role) -> bool {
        match self {
            SystemGroup::Owners => role == Role::Owner,
            SystemGroup::Administrators => role == Role::Administrator,
            SystemGroup::Moderators => role == Role::Moderator,
            SystemGroup::FullMembers | SystemGroup::Members => role == Role::Member,
            SystemGroup::Everyone => role == Role::Guest,
            SystemGroup::Nobody | SystemGroup::Internet => false,
        }
    }

    /// The one subgroup of a system group (Zulip nests them by role).
    fn subgroup(self) -> Option<SystemGroup> {
        match self {
            SystemGroup::Administrators => Some(SystemGroup::Owners),
            SystemGroup::Moderators => Some(SystemGroup::Administrators),
            SystemGroup::FullMembers => Some(SystemGroup::Moderators),
            SystemGroup::Members => Some(SystemGroup::FullMembers),
            SystemGroup::Everyone => Some(SystemGroup::Members),
            SystemGroup::Internet => Some(SystemGroup::Everyone),
            _ => None,
        }
    }

    /// Whether a user with `role` is a (recursive) member. The realm has no waiting
    /// period, so every member is a full member.
    pub fn includes_role(self, role: Role) -> bool {
        match self {
            SystemGroup::Nobody => false,
            SystemGroup::Owners => role == Role::Owner,
            SystemGroup::Administrators => role <= Role::Administrator,
            SystemGroup::Moderators => role <= Role::Moderator,
            SystemGroup::FullMembers | SystemGroup::Members => role <= Role::Member,
            SystemGroup::Everyone | SystemGroup::Internet => true,
        }
    }
}

/// A user group: a system group, or a named group a user created. Its stored shape is
/// that of the `UserGroupCreated` WAL records, so it never changes; what else a named
/// group holds (its permissions, whether it is deactivated) is its `GroupConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserGroup {
    pub id: GroupId,
    pub name: String,
    pub description: String,
    /// `Some` for system groups: membership is derived from roles, never stored.
    pub system: Option<SystemGroup>,
    /// Direct members of a non-system group, in the order they were added.
    pub members: Vec<UserId>,
    /// Direct subgroups of a non-system group, in the order they were added.
    pub subgroups: Vec<GroupId>,
    pub date_created: i64,
    pub creator_id: Option<UserId>,
}

/// The value of a group setting: a named group, or an anonymous combination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupSetting {
    Named(GroupId),
    Anonymous {
        members: Vec<UserId>,
        subgroups: Vec<GroupId>,
    },
}

impl GroupSetting {
    /// The API value: the group id, or `{direct_members, direct_subgroups}`.
    pub fn json(&self) -> Value {
        match self {
            GroupSetting::Named(id) => json!(id),
            GroupSetting::Anonymous { members, subgroups } => {
                json!({"direct_members": members, "direct_subgroups": subgroups})
            }
        }
    }

    /// The named groups the value refers to (itself, or its subgroups).
    pub fn groups(&self) -> &[GroupId] {
        match self {
            GroupSetting::Named(id) => std::slice::from_ref(id),
            GroupSetting::Anonymous { subgroups, .. } => subgroups,
        }
    }

    /// The anonymous value of just this user (Zulip's `group_creator` default).
    pub fn just(user: UserId) -> GroupSetting {
        GroupSetting::Anonymous {
            members: vec![user],
            subgroups: Vec::new(),
        }
    }
}

/// The group-valued settings of a named user group, in Zulip's order
/// (`NamedUserGroup.GROUP_PERMISSION_SETTINGS`). The variant order is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum GroupPermission {
    CanAddMembers,
    CanJoin,
    CanLeave,
    CanManage,
    CanMention,
    CanRemoveMembers,
}

impl GroupPermission {
    pub const ALL: [GroupPermission; 6] = [
        GroupPermission::CanAddMembers,
        GroupPermission::CanJoin,
        GroupPermission::CanLeave,
        GroupPermission::CanManage,
        GroupPermission::CanMention,
        GroupPermission::CanRemoveMembers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GroupPermission::CanAddMembers => "can_add_members_group",
            GroupPermission::CanJoin => "can_join_group",
            GroupPermission::CanLeave => "can_leave_group",
            GroupPermission::CanManage => "can_manage_group",
            GroupPermission::CanMention => "can_mention_group",
            GroupPermission::CanRemoveMembers => "can_remove_members_group",
        }
    }

    /// Whether guests may hold the permission (`allow_everyone_group`): where not, a
    /// guest never has it, whatever the value, and `role:everyone` is refused.
    pub fn allows_everyone(self) -> bool {
        matches!(
            self,
            GroupPermission::CanLeave | GroupPermission::CanMention
        )
    }

    /// Zulip's default for a new group: `group_creator`, `role:nobody` or
    /// `role:everyone`.
    fn default_for(self, realm: &Realm, creator: UserId) -> GroupSetting {
        match self {
            GroupPermission::CanAddMembers | GroupPermission::CanManage => {
                GroupSetting::just(creator)
            }
            GroupPermission::CanLeave | GroupPermission::CanMention => {
                realm.system_setting(SystemGroup::Everyone)
            }
            GroupPermission::CanJoin | GroupPermission::CanRemoveMembers => {
                realm.system_setting(SystemGroup::Nobody)
            }
        }
    }
}

/// What a named group holds besides its `UserGroup`: every permission, and whether it
/// is deactivated. System groups have none (every permission is `role:nobody`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupConfig {
    /// Every permission of `GroupPermission::ALL`.
    pub settings: BTreeMap<GroupPermission, GroupSetting>,
    pub deactivated: bool,
}

/// One change to a named group's properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum GroupUpdate {
    Name(String),
    Description(String),
    Setting(GroupPermission, GroupSetting),
    /// Deactivated (true) or reactivated (false).
    Deactivated(bool),
}

/// The changes creating the system groups of a new realm, ids from `first`.
pub fn system_group_changes(first: GroupId, now: i64) -> Vec<super::Change> {
    SystemGroup::ALL
        .iter()
        .enumerate()
        .map(|(i, g)| {
            super::Change::Group(GroupChange::UserGroupCreated(UserGroup {
                id: first + i as u64,
                name: g.name().to_owned(),
                description: g.stored_description().to_owned(),
                system: Some(*g),
                members: Vec::new(),
                subgroups: Vec::new(),
                date_created: now,
                creator_id: None,
            }))
        })
        .collect()
}

/// `"Invalid user group"`.
pub fn invalid_group() -> ApiError {
    ApiError::bad_request("Invalid user group")
}

/// `"User group is deactivated."`.
pub fn group_deactivated() -> ApiError {
    ApiError::bad_request("User group is deactivated.")
}

/// `"Insufficient permission"`.
pub fn insufficient_permission() -> ApiError {
    ApiError::bad_request("Insufficient permission")
}

/// `"Invalid user ID: N"`.
pub fn invalid_user_id(id: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("Invalid user ID: {id}"))
}

impl Realm {
    /// The id of a system group (every realm has all of them; they are created first,
    /// so the lookup is by position unless the realm was built otherwise).
    pub fn system_group_id(&self, g: SystemGroup) -> GroupId {
        let position = SystemGroup::ALL.iter().position(|x| *x == g).unwrap_or(0) as u64;
        match self.groups.get(&(1 + position)) {
            Some(x) if x.system == Some(g) => x.id,
            _ => self
                .groups
                .values()
                .find(|x| x.system == Some(g))
                .map_or(0, |x| x.id),
        }
    }

    /// A setting naming a system group.
    pub fn system_setting(&self, g: SystemGroup) -> GroupSetting {
        GroupSetting::Named(self.system_group_id(g))
    }

    /// A group by id.
    pub fn group(&self, id: GroupId) -> Option<&UserGroup> {
        self.groups.get(&id)
    }

    /// A group by its (case-sensitive) name, as Zulip's unique `(realm, name)`.
    pub fn group_by_name(&self, name: &str) -> Option<&UserGroup> {
        self.group_by_name
            .get(name)
            .and_then(|id| self.groups.get(id))
    }

    /// Whether a group is deactivated (system groups never are).
    pub fn is_group_deactivated(&self, id: GroupId) -> bool {
        self.group_configs.get(&id).is_some_and(|c| c.deactivated)
    }

    /// A named group's permission (`role:nobody` for system groups).
    pub fn group_permission(&self, g: &UserGroup, p: GroupPermission) -> GroupSetting {
        self.group_configs
            .get(&g.id)
            .and_then(|c| c.settings.get(&p))
            .cloned()
            .unwrap_or_else(|| self.system_setting(SystemGroup::Nobody))
    }

    /// Whether `user` is a member of group `id`, directly or through subgroups.
    pub fn is_group_member(&self, user: &User, id: GroupId) -> bool {
        self.is_group_member_depth(user, id, 0)
    }

    fn is_group_member_depth(&self, user: &User, id: GroupId, depth: u32) -> bool {
        if depth > 32 || !user.is_active {
            return false;
        }
        let Some(g) = self.groups.get(&id) else {
            return false;
        };
        if let Some(sys) = g.system {
            return sys.includes_role(user.role);
        }
        g.members.contains(&user.id)
            || g.subgroups
                .iter()
                .any(|s| self.is_group_member_depth(user, *s, depth + 1))
    }

    /// Whether `user` is a direct member of group `id` (active users only, as Zulip).
    pub fn is_direct_group_member(&self, user: &User, id: GroupId) -> bool {
        let Some(g) = self.groups.get(&id) else {
            return false;
        };
        user.is_active
            && match g.system {
                Some(sys) => sys.has_direct_role(user.role),
                None => g.members.contains(&user.id),
            }
    }

    /// Whether `user` belongs to the group a setting names.
    pub fn in_setting(&self, user: &User, s: &GroupSetting) -> bool {
        match s {
            GroupSetting::Named(id) => self.is_group_member(user, *id),
            GroupSetting::Anonymous { members, subgroups } => {
                user.is_active
                    && (members.contains(&user.id)
                        || subgroups.iter().any(|g| self.is_group_member(user, *g)))
            }
        }
    }

    /// Zulip's `user_has_permission_for_group_setting`: guests never hold a permission
    /// whose setting may not be `role:everyone`.
    pub fn has_group_permission(
        &self,
        user: &User,
        value: &GroupSetting,
        allows_everyone: bool,
    ) -> bool {
        (allows_everyone || !user.is_guest()) && self.in_setting(user, value)
    }

    /// Direct members of a group, active ones only (derived from roles for system
    /// groups), in id order.
    pub fn group_direct_members(&self, g: &UserGroup) -> Vec<UserId> {
        let mut ids: Vec<UserId> = match g.system {
            Some(sys) => self
                .users
                .values()
                .filter(|u| u.is_active && sys.has_direct_role(u.role))
                .map(|u| u.id)
                .collect(),
            None => g
                .members
                .iter()
                .copied()
                .filter(|id| self.user(*id).is_some_and(|u| u.is_active))
                .collect(),
        };
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Direct subgroups of a group, in id order.
    pub fn group_direct_subgroups(&self, g: &UserGroup) -> Vec<GroupId> {
        let mut ids = match g.system {
            Some(sys) => sys
                .subgroup()
                .map(|s| vec![self.system_group_id(s)])
                .unwrap_or_default(),
            None => g.subgroups.clone(),
        };
        ids.sort_unstable();
        ids
    }

    /// The groups `ids` and all their subgroups, recursively (Zulip's
    /// `get_recursive_subgroups_for_groups`); unknown ids are left out.
    pub fn recursive_subgroups(&self, ids: &[GroupId]) -> BTreeSet<GroupId> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<GroupId> = ids.to_vec();
        while let Some(id) = todo.pop() {
            let Some(g) = self.groups.get(&id) else {
                continue;
            };
            if seen.insert(id) {
                todo.extend(self.group_direct_subgroups(g));
            }
        }
        seen
    }

    /// Every member of a group, through its subgroups too, active ones only, in id
    /// order.
    pub fn group_members_recursive(&self, g: &UserGroup) -> Vec<UserId> {
        if let Some(sys) = g.system {
            return self
                .users
                .values()
                .filter(|u| u.is_active && sys.includes_role(u.role))
                .map(|u| u.id)
                .collect();
        }
        let mut out = BTreeSet::new();
        for id in self.recursive_subgroups(&[g.id]) {
            if let Some(sub) = self.groups.get(&id) {
                out.extend(self.group_direct_members(sub));
            }
        }
        out.into_iter().collect()
    }

    /// Zulip's `check_user_group_name`: the name as given, or Zulip's error.
    pub fn check_group_name(name: &str) -> Result<String, ApiError> {
        if name.trim().is_empty() {
            return Err(ApiError::bad_request("User group name can't be empty!"));
        }
        if name.chars().count() > MAX_GROUP_NAME_LENGTH {
            return Err(ApiError::bad_request(format!(
                "User group name cannot exceed {MAX_GROUP_NAME_LENGTH} characters."
            )));
        }
        if let Some(prefix) = INVALID_GROUP_NAME_PREFIXES
            .iter()
            .find(|p| name.starts_with(**p))
        {
            return Err(ApiError::bad_request(format!(
                "User group name cannot start with '{prefix}'."
            )));
        }
        Ok(name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_roles() {
        assert!(SystemGroup::Administrators.includes_role(Role::Owner));
        assert!(!SystemGroup::Administrators.includes_role(Role::Moderator));
        assert!(SystemGroup::Members.includes_role(Role::Moderator));
        assert!(!SystemGroup::Members.includes_role(Role::Guest));
        assert!(SystemGroup::Everyone.includes_role(Role::Guest));
        assert!(!SystemGroup::Nobody.includes_role(Role::Owner));
        assert!(SystemGroup::Members.has_direct_role(Role::Member));
        assert!(SystemGroup::FullMembers.has_direct_role(Role::Member));
        assert!(!SystemGroup::Members.has_direct_role(Role::Moderator));
        assert_eq!(
            SystemGroup::from_name("role:moderators"),
            Some(SystemGroup::Moderators)
        );
    }

    #[test]
    fn group_names() {
        assert_eq!(Realm::check_group_name("ok").ok().as_deref(), Some("ok"));
        assert_eq!(
            Realm::check_group_name("  ").map_err(|e| e.msg),
            Err("User group name can't be empty!".into())
        );
        assert_eq!(
            Realm::check_group_name(&"x".repeat(101)).map_err(|e| e.msg),
            Err("User group name cannot exceed 100 characters.".into())
        );
        assert_eq!(
            Realm::check_group_name("role:x").map_err(|e| e.msg),
            Err("User group name cannot start with 'role:'.".into())
        );
        assert_eq!(
            Realm::check_group_name("@x").map_err(|e| e.msg),
            Err("User group name cannot start with '@'.".into())
        );
    }
}

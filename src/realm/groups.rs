//! User groups, as far as channel permissions need them: Zulip's system groups (whose
//! membership follows roles) and group-setting values (a named group, or an anonymous
//! set of members and subgroups).
//!
//! Full user-group endpoints are a later feature; only the state and the membership
//! rule live here.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Realm, Role, User, UserId};
use crate::error::{ApiError, ApiResult};
use crate::realm::GroupChange;

/// A user group id, unique within a realm.
pub type GroupId = u64;

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

    pub fn description(self) -> &'static str {
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

    /// The roles whose holders are *direct* members.
    fn direct_role(self) -> Option<Role> {
        match self {
            SystemGroup::Owners => Some(Role::Owner),
            SystemGroup::Administrators => Some(Role::Administrator),
            SystemGroup::Moderators => Some(Role::Moderator),
            SystemGroup::FullMembers => Some(Role::Member),
            SystemGroup::Everyone => Some(Role::Guest),
            _ => None,
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

/// A user group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserGroup {
    pub id: GroupId,
    pub name: String,
    pub description: String,
    /// `Some` for system groups: membership is derived from roles, never stored.
    pub system: Option<SystemGroup>,
    /// Direct members of a non-system group.
    pub members: Vec<UserId>,
    /// Direct subgroups of a non-system group.
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
                description: g.description().to_owned(),
                system: Some(*g),
                members: Vec::new(),
                subgroups: Vec::new(),
                date_created: now,
                creator_id: None,
            }))
        })
        .collect()
}

impl Realm {
    /// The id of a system group (every realm has all of them).
    pub fn system_group_id(&self, g: SystemGroup) -> GroupId {
        self.groups
            .values()
            .find(|x| x.system == Some(g))
            .map_or(0, |x| x.id)
    }

    /// A setting naming a system group.
    pub fn system_setting(&self, g: SystemGroup) -> GroupSetting {
        GroupSetting::Named(self.system_group_id(g))
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

    /// Direct members of a group (derived from roles for system groups).
    pub fn group_direct_members(&self, g: &UserGroup) -> Vec<UserId> {
        match g.system {
            Some(sys) => match sys.direct_role() {
                Some(role) => self
                    .users
                    .values()
                    .filter(|u| u.is_active && u.role == role)
                    .map(|u| u.id)
                    .collect(),
                None => Vec::new(),
            },
            None => g.members.clone(),
        }
    }

    /// Direct subgroups of a group.
    pub fn group_direct_subgroups(&self, g: &UserGroup) -> Vec<GroupId> {
        match g.system {
            Some(sys) => sys
                .subgroup()
                .map(|s| vec![self.system_group_id(s)])
                .unwrap_or_default(),
            None => g.subgroups.clone(),
        }
    }

    /// A group object of `realm_user_groups`.
    pub fn group_json(&self, g: &UserGroup) -> Value {
        let nobody = self.system_group_id(SystemGroup::Nobody);
        json!({
            "id": g.id,
            "name": g.name,
            "description": g.description,
            "members": self.group_direct_members(g),
            "direct_subgroup_ids": self.group_direct_subgroups(g),
            "is_system_group": g.system.is_some(),
            "date_created": g.date_created,
            "creator_id": g.creator_id,
            "deactivated": false,
            "can_add_members_group": nobody,
            "can_join_group": nobody,
            "can_leave_group": nobody,
            "can_manage_group": nobody,
            "can_mention_group": nobody,
            "can_remove_members_group": nobody,
        })
    }

    /// Parses a group-setting value sent by a client: a group id, or
    /// `{direct_members, direct_subgroups}`. `name` is the parameter, for errors.
    pub fn parse_group_setting(&self, name: &str, v: &Value) -> ApiResult<GroupSetting> {
        let bad_group = || ApiError::bad_request("Invalid user group");
        match v {
            Value::Number(n) => {
                let id = n.as_u64().ok_or_else(bad_group)?;
                if !self.groups.contains_key(&id) {
                    return Err(bad_group());
                }
                Ok(GroupSetting::Named(id))
            }
            Value::Object(m) => {
                let ids = |key: &str| -> ApiResult<Vec<u64>> {
                    match m.get(key) {
                        None => Err(ApiError::bad_request(format!(
                            "{name}[\"{key}\"] field is missing: Field required"
                        ))),
                        Some(Value::Array(a)) => a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| {
                                x.as_u64().ok_or_else(|| {
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
                let mut members = ids("direct_members")?;
                let mut subgroups = ids("direct_subgroups")?;
                for id in &members {
                    if !self.users.get(id).is_some_and(|u| u.is_active) {
                        return Err(ApiError::bad_request(format!("Invalid user ID: {id}")));
                    }
                }
                for id in &subgroups {
                    if !self.groups.contains_key(id) {
                        return Err(ApiError::bad_request(format!(
                            "Invalid user group ID: {id}"
                        )));
                    }
                }
                members.sort_unstable();
                members.dedup();
                subgroups.sort_unstable();
                subgroups.dedup();
                // Zulip stores a lone subgroup without members as the named group.
                if members.is_empty() && subgroups.len() == 1 {
                    return Ok(GroupSetting::Named(subgroups[0]));
                }
                Ok(GroupSetting::Anonymous { members, subgroups })
            }
            _ => Err(ApiError::bad_request(format!("{name} is not valid"))),
        }
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
        assert_eq!(
            SystemGroup::from_name("role:moderators"),
            Some(SystemGroup::Moderators)
        );
    }
}

//! The rules of the group endpoints, as Zulip's `zerver/views/user_groups.py` and
//! `zerver/lib/user_groups.py` check them, in their order: create, update (and
//! reactivate), members and subgroups (seed 4.9), deactivate (seed 4.16).

use super::settings::invalid_group_id;
use super::*;
use crate::error::ApiResult;
use crate::realm::{Change, Cx, Decided};

/// `POST /user_groups/create` after parameter parsing.
#[derive(Debug, Clone)]
pub struct NewGroup {
    pub name: String,
    pub description: String,
    pub members: Vec<i64>,
    pub subgroups: Vec<i64>,
    /// Permissions given by the client, in `GroupPermission::ALL` order.
    pub settings: Vec<(GroupPermission, SettingValue)>,
}

/// `PATCH /user_groups/{id}` after parameter parsing.
#[derive(Debug, Clone, Default)]
pub struct GroupPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub deactivated: Option<bool>,
    /// `(permission, new, expected old)`, in `GroupPermission::ALL` order.
    pub settings: Vec<(GroupPermission, SettingValue, Option<SettingValue>)>,
}

impl GroupPatch {
    fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.description.is_none()
            && self.deactivated.is_none()
            && self.settings.is_empty()
    }
}

/// `PATCH /user_groups/{user_group_id}`.
#[derive(Debug, Clone)]
pub struct UpdateGroup {
    /// As sent: the lookup (and its error) belongs to the rule.
    pub id: i64,
    pub patch: GroupPatch,
}

/// `POST /user_groups/{user_group_id}/deactivate`.
#[derive(Debug, Clone, Copy)]
pub struct DeactivateGroup {
    pub id: i64,
}

/// `POST /user_groups/{id}/members` (and `/subgroups`) after parameter parsing.
#[derive(Debug, Clone, Default)]
pub struct MembersUpdate {
    pub add: Vec<i64>,
    pub delete: Vec<i64>,
    pub add_subgroups: Vec<i64>,
    pub delete_subgroups: Vec<i64>,
}

/// Which endpoint changes a group's members: they differ in their "nothing to do" text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MembersEndpoint {
    /// `POST /user_groups/{id}/members`: users and subgroups.
    Members,
    /// `POST /user_groups/{id}/subgroups`: subgroups only.
    Subgroups,
}

impl MembersEndpoint {
    fn nothing_to_do(self) -> &'static str {
        match self {
            MembersEndpoint::Members => "Nothing to do. Specify at least one of \"add\", \"delete\", \"add_subgroups\" or \"delete_subgroups\".",
            MembersEndpoint::Subgroups => {
                "Nothing to do. Specify at least one of \"add\" or \"delete\"."
            }
        }
    }
}

/// `POST /user_groups/{id}/members` and `POST /user_groups/{id}/subgroups`.
#[derive(Debug, Clone)]
pub struct UpdateGroupMembers {
    pub id: i64,
    pub update: MembersUpdate,
    pub endpoint: MembersEndpoint,
}

impl Realm {
    /// Zulip's `can_create_user_groups`, after `require_member_or_admin`.
    pub fn check_can_create_groups(&self, me: &User) -> ApiResult<()> {
        if self.has_realm_permission(me, RealmSetting::CanCreateGroups) {
            Ok(())
        } else {
            Err(insufficient_permission())
        }
    }

    /// Zulip's `access_user_group_for_update`: the group, if `me` may change it through
    /// `permission` (or manages it, or manages all groups).
    pub fn access_group_for_update(
        &self,
        me: &User,
        id: i64,
        permission: GroupPermission,
        allow_deactivated: bool,
    ) -> ApiResult<&UserGroup> {
        let g = u64::try_from(id)
            .ok()
            .and_then(|id| self.groups.get(&id))
            .ok_or_else(invalid_group)?;
        if !allow_deactivated && self.is_group_deactivated(g.id) {
            return Err(group_deactivated());
        }
        if g.system.is_some() {
            return Err(insufficient_permission());
        }
        if self.has_realm_permission(me, RealmSetting::CanManageAllGroups) {
            return Ok(g);
        }
        let holds = |p: GroupPermission| {
            self.has_group_permission(me, &self.group_permission(g, p), p.allows_everyone())
        };
        if holds(GroupPermission::CanManage)
            || (permission != GroupPermission::CanManage && holds(permission))
        {
            return Ok(g);
        }
        Err(insufficient_permission())
    }

    /// Zulip's `user_ids_to_users(..., allow_deactivated=False)`: every id an active
    /// user; the ids, without repeats, in id order.
    fn active_users_named(&self, ids: &[i64]) -> ApiResult<Vec<UserId>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let user = u64::try_from(*id)
                .ok()
                .and_then(|id| self.user(id))
                .filter(|u| u.is_active)
                .ok_or_else(|| invalid_user_id(id))?;
            out.push(user.id);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The groups of a subgroup list: every id a group (`Invalid user group ID`), none
    /// deactivated; without repeats, in id order.
    fn potential_subgroups(&self, ids: &[i64]) -> ApiResult<Vec<GroupId>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let g = u64::try_from(*id)
                .ok()
                .and_then(|id| self.groups.get(&id))
                .ok_or_else(|| invalid_group_id(id))?;
            out.push(g.id);
        }
        if out.iter().any(|id| self.is_group_deactivated(*id)) {
            return Err(group_deactivated());
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn group_exists(name: &str) -> ApiError {
        ApiError::bad_request(format!("User group '{name}' already exists."))
    }

    /// `POST /user_groups/create`: `require_member_or_admin`, `check_can_create_groups`,
    /// then the values; answers the new group's id.
    pub fn decide_create_group(
        &self,
        me: &User,
        p: NewGroup,
        cx: &mut Cx,
    ) -> ApiResult<Decided<GroupId>> {
        self.require_member_or_admin(me)?;
        self.check_can_create_groups(me)?;
        let members = self.active_users_named(&p.members)?;
        let name = Self::check_group_name(&p.name)?;
        let mut settings: BTreeMap<GroupPermission, GroupSetting> = BTreeMap::new();
        for (perm, value) in p.settings {
            let v = self.check_setting_value(
                perm.name(),
                value,
                Some(settings::SettingRules::for_group(perm)),
            )?;
            settings.insert(perm, v);
        }
        for perm in GroupPermission::ALL {
            settings
                .entry(perm)
                .or_insert_with(|| perm.default_for(self, me.id));
        }
        if self.group_by_name(&name).is_some() {
            return Err(Self::group_exists(&name));
        }
        let id = self.next_group_id;
        let subgroups = if p.subgroups.is_empty() {
            Vec::new()
        } else {
            self.potential_subgroups(&p.subgroups)?
        };
        let mut changes = vec![Change::Group(GroupChange::GroupCreated {
            group: UserGroup {
                id,
                name,
                description: p.description,
                system: None,
                members,
                subgroups: Vec::new(),
                date_created: cx.now_secs(),
                creator_id: Some(me.id),
            },
            config: GroupConfig {
                settings,
                deactivated: false,
            },
        })];
        if !subgroups.is_empty() {
            changes.push(Change::Group(GroupChange::SubgroupsAdded {
                group_id: id,
                subgroup_ids: subgroups,
            }));
        }
        Ok(Decided::new(changes, id))
    }

    /// `PATCH /user_groups/{id}`: `require_member_or_admin`, then the patch.
    pub fn decide_update_group(
        &self,
        me: &User,
        q: UpdateGroup,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_member_or_admin(me)?;
        let (id, p) = (q.id, q.patch);
        if p.is_empty() {
            return Err(ApiError::bad_request("No new data supplied"));
        }
        let g = self.access_group_for_update(me, id, GroupPermission::CanManage, true)?;
        let gid = g.id;
        let upd = |update| {
            Change::Group(GroupChange::GroupUpdated {
                group_id: gid,
                update,
            })
        };
        let mut changes = Vec::new();
        if let Some(name) = p.name.filter(|n| *n != g.name) {
            let name = Self::check_group_name(&name)?;
            if self.group_by_name(&name).is_some() {
                return Err(Self::group_exists(&name));
            }
            changes.push(upd(GroupUpdate::Name(name)));
        }
        if let Some(description) = p.description.filter(|d| *d != g.description) {
            changes.push(upd(GroupUpdate::Description(description)));
        }
        if p.deactivated == Some(false) && self.is_group_deactivated(gid) {
            changes.push(upd(GroupUpdate::Deactivated(false)));
        }
        let nobody = self.system_group_id(SystemGroup::Nobody);
        for (perm, new, old) in p.settings {
            let new = new.normalize(nobody);
            if !self.setting_changes(&self.group_permission(g, perm), &new, old)? {
                continue;
            }
            let value = self.check_setting_value(
                perm.name(),
                new,
                Some(settings::SettingRules::for_group(perm)),
            )?;
            changes.push(upd(GroupUpdate::Setting(perm, value)));
        }
        Ok(Decided::changes(changes))
    }

    /// `POST /user_groups/{id}/deactivate`.
    pub fn decide_deactivate_group(
        &self,
        me: &User,
        q: DeactivateGroup,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let g = self.access_group_for_update(me, q.id, GroupPermission::CanManage, false)?;
        self.check_not_in_use(g.id)?;
        Ok(Decided::changes(vec![Change::Group(
            GroupChange::GroupUpdated {
                group_id: g.id,
                update: GroupUpdate::Deactivated(true),
            },
        )]))
    }

    /// `POST /user_groups/{id}/members` and `POST /user_groups/{id}/subgroups`:
    /// `require_member_or_admin`, then each list in Zulip's order (add, delete,
    /// add_subgroups, delete_subgroups), each checked against the state the previous
    /// ones leave; all or nothing.
    pub fn decide_update_members(
        &self,
        me: &User,
        q: UpdateGroupMembers,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_member_or_admin(me)?;
        self.decide_members_steps(me, q.id, q.update, q.endpoint.nothing_to_do())
            .map(Decided::changes)
    }

    fn decide_members_steps(
        &self,
        me: &User,
        id: i64,
        u: MembersUpdate,
        nothing_to_do: &str,
    ) -> ApiResult<Vec<Change>> {
        type Step = fn(&Realm, &User, i64, &[i64]) -> ApiResult<Vec<Change>>;
        let steps: Vec<(Step, &[i64])> = [
            (Realm::decide_add_members as Step, u.add.as_slice()),
            (Realm::decide_remove_members, u.delete.as_slice()),
            (Realm::decide_add_subgroups, u.add_subgroups.as_slice()),
            (
                Realm::decide_remove_subgroups,
                u.delete_subgroups.as_slice(),
            ),
        ]
        .into_iter()
        .filter(|(_, ids)| !ids.is_empty())
        .collect();
        match steps.as_slice() {
            [] => Err(ApiError::bad_request(nothing_to_do)),
            [(step, ids)] => step(self, me, id, ids),
            _ => {
                // Later steps see what earlier ones decided: they are decided against a
                // copy (cheap: the collections are shared) with those applied.
                let mut scratch = self.clone();
                let mut changes = Vec::new();
                for (step, ids) in steps {
                    let me = scratch.user(me.id).cloned().unwrap_or_else(|| me.clone());
                    let decided = step(&scratch, &me, id, ids)?;
                    decided.iter().for_each(|c| scratch.apply(c));
                    changes.extend(decided);
                }
                Ok(changes)
            }
        }
    }

    /// Zulip's `add_members_to_group_backend`.
    fn decide_add_members(&self, me: &User, id: i64, ids: &[i64]) -> ApiResult<Vec<Change>> {
        let g = if ids == [me.id as i64] {
            self.access_group_for_update(me, id, GroupPermission::CanJoin, true)
                .or_else(|_| {
                    self.access_group_for_update(me, id, GroupPermission::CanAddMembers, true)
                })?
        } else {
            self.access_group_for_update(me, id, GroupPermission::CanAddMembers, true)?
        };
        let users = self.active_users_named(ids)?;
        if let Some(already) = users.iter().find(|u| g.members.contains(u)) {
            return Err(ApiError::bad_request(format!(
                "User {already} is already a member of this group"
            )));
        }
        Ok(vec![Change::Group(GroupChange::MembersAdded {
            group_id: g.id,
            user_ids: users,
        })])
    }

    /// Zulip's `remove_members_from_group_backend` (user ids are checked before the
    /// group).
    fn decide_remove_members(&self, me: &User, id: i64, ids: &[i64]) -> ApiResult<Vec<Change>> {
        let users = self.active_users_named(ids)?;
        let g = if ids == [me.id as i64] {
            self.access_group_for_update(me, id, GroupPermission::CanLeave, true)
                .or_else(|_| {
                    self.access_group_for_update(me, id, GroupPermission::CanRemoveMembers, true)
                })?
        } else {
            self.access_group_for_update(me, id, GroupPermission::CanRemoveMembers, true)?
        };
        let direct = self.group_direct_members(g);
        if let Some(missing) = ids
            .iter()
            .find(|id| u64::try_from(**id).map_or(true, |id| !direct.contains(&id)))
        {
            return Err(ApiError::bad_request(format!(
                "There is no member '{missing}' in this user group"
            )));
        }
        Ok(vec![Change::Group(GroupChange::MembersRemoved {
            group_id: g.id,
            user_ids: users,
        })])
    }

    /// Zulip's `add_subgroups_to_group_backend`: no cycles.
    fn decide_add_subgroups(&self, me: &User, id: i64, ids: &[i64]) -> ApiResult<Vec<Change>> {
        let g = self.access_group_for_update(me, id, GroupPermission::CanAddMembers, true)?;
        let subgroups = self.potential_subgroups(ids)?;
        if let Some(already) = subgroups.iter().find(|s| g.subgroups.contains(s)) {
            return Err(ApiError::bad_request(format!(
                "User group {already} is already a subgroup of this group."
            )));
        }
        if self.recursive_subgroups(&subgroups).contains(&g.id) {
            return Err(ApiError::bad_request(format!(
                "User group {} is already a subgroup of one of the passed subgroups.",
                g.id
            )));
        }
        Ok(vec![Change::Group(GroupChange::SubgroupsAdded {
            group_id: g.id,
            subgroup_ids: subgroups,
        })])
    }

    /// Zulip's `remove_subgroups_from_group_backend`.
    fn decide_remove_subgroups(&self, me: &User, id: i64, ids: &[i64]) -> ApiResult<Vec<Change>> {
        let g = self.access_group_for_update(me, id, GroupPermission::CanManage, true)?;
        let subgroups = self.potential_subgroups(ids)?;
        if let Some(missing) = subgroups.iter().find(|s| !g.subgroups.contains(s)) {
            return Err(ApiError::bad_request(format!(
                "User group {missing} is not a subgroup of this group."
            )));
        }
        Ok(vec![Change::Group(GroupChange::SubgroupsRemoved {
            group_id: g.id,
            subgroup_ids: subgroups,
        })])
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const HAMLET: UserId = 10;
    const OTHELLO: UserId = 12;

    fn dev_realm() -> (Realm, Cx) {
        let mut cx = Cx::seeded(1_700_000_000_000, 7);
        (crate::realm::dev::testing::dev_realm(&mut cx), cx)
    }

    fn decide(realm: &mut Realm, decided: ApiResult<Decided<()>>) {
        decided
            .expect("decided")
            .changes
            .iter()
            .for_each(|c| realm.apply(c));
    }

    fn members_of(id: UserId, update: MembersUpdate) -> UpdateGroupMembers {
        UpdateGroupMembers {
            id: id as i64,
            update,
            endpoint: MembersEndpoint::Members,
        }
    }

    fn msg<T: std::fmt::Debug>(r: ApiResult<T>) -> String {
        r.expect_err("an error").msg
    }

    fn new_group(name: &str, members: Vec<i64>) -> NewGroup {
        NewGroup {
            name: name.into(),
            description: String::new(),
            members,
            subgroups: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// Deactivated users (hearth has no endpoint deactivating one yet) are refused
    /// everywhere a user id is given, and left out of every member list.
    #[test]
    fn deactivated_users_are_invalid_user_ids() {
        let (mut realm, mut cx) = dev_realm();
        let hamlet = realm.user(HAMLET).cloned().expect("hamlet");
        let Decided {
            changes,
            answer: crew,
        } = realm
            .decide_create_group(&hamlet, new_group("crew", vec![10, 12]), &mut cx)
            .expect("created");
        changes.iter().for_each(|c| realm.apply(c));
        let users = realm.users.get_mut(&OTHELLO).expect("othello");
        Arc::make_mut(users).is_active = false;
        let othello = OTHELLO as i64;

        assert_eq!(
            msg(realm.decide_create_group(&hamlet, new_group("x", vec![othello]), &mut cx)),
            "Invalid user ID: 12"
        );
        let update = |add: Vec<i64>, delete: Vec<i64>| MembersUpdate {
            add,
            delete,
            ..MembersUpdate::default()
        };
        for u in [update(vec![othello], vec![]), update(vec![], vec![othello])] {
            assert_eq!(
                msg(realm.decide_update_members(&hamlet, members_of(crew, u), &mut cx)),
                "Invalid user ID: 12"
            );
        }
        let anonymous = SettingValue::Members {
            members: vec![othello],
            subgroups: vec![],
        };
        let patch = GroupPatch {
            settings: vec![(GroupPermission::CanMention, anonymous, None)],
            ..GroupPatch::default()
        };
        assert_eq!(
            msg(realm.decide_update_group(
                &hamlet,
                UpdateGroup {
                    id: crew as i64,
                    patch
                },
                &mut cx
            )),
            "Invalid user ID: 12"
        );
        let g = realm.group(crew).expect("crew").clone();
        assert_eq!(realm.group_direct_members(&g), vec![HAMLET]);
        assert_eq!(realm.group_members_recursive(&g), vec![HAMLET]);
        let members = realm
            .group(realm.system_group_id(SystemGroup::Members))
            .expect("members")
            .clone();
        assert!(!realm.group_direct_members(&members).contains(&OTHELLO));
        assert_eq!(
            msg(realm.view_is_group_member(crew as i64, othello, false)),
            "User is deactivated"
        );
        // An anonymous setting lists its active members only.
        let setting = GroupSetting::Anonymous {
            members: vec![HAMLET, OTHELLO],
            subgroups: vec![],
        };
        assert_eq!(
            realm.setting_json(&setting),
            serde_json::json!({"direct_members": [HAMLET], "direct_subgroups": []})
        );
        // Re-adding him once reactivated is refused: he is still a member.
        Arc::make_mut(realm.users.get_mut(&OTHELLO).expect("othello")).is_active = true;
        assert_eq!(
            msg(realm.decide_update_members(
                &hamlet,
                members_of(crew, update(vec![othello], vec![])),
                &mut cx
            )),
            "User 12 is already a member of this group"
        );
        let removed = realm.decide_update_members(
            &hamlet,
            members_of(crew, update(vec![], vec![othello])),
            &mut cx,
        );
        decide(&mut realm, removed);
        assert!(!realm.group(crew).expect("crew").members.contains(&OTHELLO));
    }

    /// The use indexes rebuilt from state equal the ones `apply` kept.
    #[test]
    fn rebuilt_indexes_equal_kept_ones() {
        let (mut realm, mut cx) = dev_realm();
        let hamlet = realm.user(HAMLET).cloned().expect("hamlet");
        let Decided { changes, answer: a } = realm
            .decide_create_group(&hamlet, new_group("a", vec![10]), &mut cx)
            .expect("a");
        changes.iter().for_each(|c| realm.apply(c));
        let mut b = new_group("b", vec![]);
        b.subgroups = vec![a as i64];
        b.settings = vec![(GroupPermission::CanMention, SettingValue::Group(a as i64))];
        let changes = realm
            .decide_create_group(&hamlet, b, &mut cx)
            .expect("b")
            .changes;
        changes.iter().for_each(|c| realm.apply(c));
        let mut rebuilt = realm.clone();
        rebuilt.rebuild_indexes();
        assert_eq!(rebuilt, realm);
        assert_eq!(realm.deactivation_objections(a).len(), 2);
    }
}

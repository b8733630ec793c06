//! Where each group is used: as a setting's value (named, or as a subgroup of an
//! anonymous value) of a channel, a named group or the realm, and as a subgroup of named
//! groups. Kept by `apply` as derived indexes, so deactivation finds its objections in
//! time proportional to the group's uses, not to the realm.

use imbl::{HashMap, OrdSet};
use serde_json::Value;

use super::*;
use crate::error::{ApiResult, ErrorCode};
use crate::realm::channels::ChannelUpdate;
use crate::realm::ChannelChange;

/// One use of a group by a setting. The derived order is Zulip's order of objections:
/// channels (by id, settings in their order), then groups, then the realm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SettingUse {
    Channel(ChannelId, ChannelSetting),
    Group(GroupId, GroupPermission),
    Realm(RealmSetting),
}

/// The derived indexes of group uses (rebuilt after loading a snapshot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupUses {
    /// Group -> the settings whose value names it or holds it as a subgroup.
    by_setting: HashMap<GroupId, OrdSet<SettingUse>>,
    /// Group -> the named (non-system) groups that hold it as a direct subgroup.
    supergroups: HashMap<GroupId, OrdSet<GroupId>>,
}

impl GroupUses {
    pub(super) fn add_setting(&mut self, value: &GroupSetting, using: SettingUse) {
        for g in value.groups() {
            self.by_setting.entry(*g).or_default().insert(using);
        }
    }

    pub(super) fn remove_setting(&mut self, value: &GroupSetting, using: SettingUse) {
        for g in value.groups() {
            if let Some(set) = self.by_setting.get_mut(g) {
                set.remove(&using);
            }
        }
    }

    pub(super) fn add_subgroup(&mut self, supergroup: GroupId, subgroup: GroupId) {
        self.supergroups
            .entry(subgroup)
            .or_default()
            .insert(supergroup);
    }

    pub(super) fn remove_subgroup(&mut self, supergroup: GroupId, subgroup: GroupId) {
        if let Some(set) = self.supergroups.get_mut(&subgroup) {
            set.remove(&supergroup);
        }
    }

    /// The named groups that hold `id` as a direct subgroup.
    pub fn supergroups_of(&self, id: GroupId) -> impl Iterator<Item = GroupId> + '_ {
        self.supergroups.get(&id).into_iter().flatten().copied()
    }

    /// The settings that use `id`.
    pub fn settings_using(&self, id: GroupId) -> impl Iterator<Item = SettingUse> + '_ {
        self.by_setting.get(&id).into_iter().flatten().copied()
    }
}

impl Realm {
    /// Rebuilds the group-use indexes from state (after loading a snapshot).
    pub(in crate::realm) fn rebuild_group_uses(&mut self) {
        let mut uses = GroupUses::default();
        for ch in self.channels.values() {
            for (s, v) in &ch.settings {
                uses.add_setting(v, SettingUse::Channel(ch.id, *s));
            }
        }
        for (id, config) in self.group_configs.iter() {
            for (p, v) in &config.settings {
                uses.add_setting(v, SettingUse::Group(*id, *p));
            }
        }
        for g in self.groups.values().filter(|g| g.system.is_none()) {
            for sub in &g.subgroups {
                uses.add_subgroup(g.id, *sub);
            }
        }
        for (s, v) in &self.realm_group_settings {
            uses.add_setting(v, SettingUse::Realm(*s));
        }
        self.group_uses = uses;
        self.group_by_name = self
            .groups
            .values()
            .map(|g| (g.name.clone(), g.id))
            .collect();
    }

    /// Keeps the indexes up to date with a channel change; called before the change is
    /// applied (an updated setting's old value is still in place).
    pub(in crate::realm) fn index_channel_change(&mut self, change: &ChannelChange) {
        match change {
            ChannelChange::ChannelCreated(ch) => {
                for (s, v) in &ch.settings {
                    self.group_uses
                        .add_setting(v, SettingUse::Channel(ch.id, *s));
                }
            }
            ChannelChange::ChannelUpdated {
                channel_id,
                update: ChannelUpdate::Setting(s, v),
            } => {
                let using = SettingUse::Channel(*channel_id, *s);
                if let Some(old) = self.channel(*channel_id).and_then(|c| c.settings.get(s)) {
                    let old = old.clone();
                    self.group_uses.remove_setting(&old, using);
                }
                self.group_uses.add_setting(v, using);
            }
            _ => {}
        }
    }

    /// Zulip's objections to deactivating a group (`access_user_group_for_deactivation`):
    /// active named supergroups; then settings of active channels, active groups and the
    /// realm whose value is the group or holds it as a subgroup.
    pub fn deactivation_objections(&self, id: GroupId) -> Vec<Value> {
        let mut out = Vec::new();
        let mut supergroups: Vec<GroupId> = self
            .group_uses
            .supergroups_of(id)
            .filter(|g| self.groups.contains_key(g) && !self.is_group_deactivated(*g))
            .collect();
        supergroups.sort_unstable();
        if !supergroups.is_empty() {
            out.push(json!({"type": "subgroup", "supergroup_ids": supergroups}));
        }
        let mut channels: BTreeMap<ChannelId, Vec<&'static str>> = BTreeMap::new();
        let mut groups: BTreeMap<GroupId, Vec<&'static str>> = BTreeMap::new();
        let mut realm: Vec<&'static str> = Vec::new();
        // Ordered: channels, groups, realm; each by id, settings in Zulip's order.
        let uses: BTreeSet<SettingUse> = self.group_uses.settings_using(id).collect();
        for using in uses {
            match using {
                SettingUse::Channel(cid, s) => {
                    if self.channel(cid).is_some_and(|c| !c.is_archived) {
                        channels.entry(cid).or_default().push(s.name());
                    }
                }
                SettingUse::Group(gid, p) => {
                    if self.groups.contains_key(&gid) && !self.is_group_deactivated(gid) {
                        groups.entry(gid).or_default().push(p.name());
                    }
                }
                SettingUse::Realm(s) => realm.push(s.name()),
            }
        }
        for (cid, settings) in channels {
            out.push(json!({"type": "channel", "channel_id": cid, "settings": settings}));
        }
        for (gid, settings) in groups {
            out.push(json!({"type": "user_group", "group_id": gid, "settings": settings}));
        }
        if !realm.is_empty() {
            out.push(json!({"type": "realm", "settings": realm}));
        }
        out
    }

    /// `CANNOT_DEACTIVATE_GROUP_IN_USE` when the group has objections.
    pub(super) fn check_not_in_use(&self, id: GroupId) -> ApiResult<()> {
        let objections = self.deactivation_objections(id);
        if objections.is_empty() {
            return Ok(());
        }
        Err(ApiError::new(
            400,
            ErrorCode::CannotDeactivateGroupInUse,
            "Cannot deactivate user group in use.",
        )
        .with("objections", Value::Array(objections)))
    }
}

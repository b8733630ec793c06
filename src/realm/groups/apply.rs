//! Group changes (and the realm's group settings) turned into state, with the derived
//! indexes (`group_by_name`, `group_uses`) kept up to date.

use super::*;

impl Realm {
    /// Applies a group change (called by `Realm::apply`).
    pub(in crate::realm) fn apply_group_change(&mut self, change: &GroupChange) {
        match change {
            GroupChange::UserGroupCreated(g) => self.insert_group(g),
            GroupChange::GroupCreated { group, config } => {
                self.insert_group(group);
                for (p, v) in &config.settings {
                    self.group_uses
                        .add_setting(v, SettingUse::Group(group.id, *p));
                }
                self.group_configs.insert(group.id, config.clone());
            }
            GroupChange::GroupUpdated { group_id, update } => {
                self.apply_group_update(*group_id, update)
            }
            GroupChange::MembersAdded { group_id, user_ids } => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    for id in user_ids {
                        if !g.members.contains(id) {
                            g.members.push(*id);
                        }
                    }
                }
            }
            GroupChange::MembersRemoved { group_id, user_ids } => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.members.retain(|id| !user_ids.contains(id));
                }
            }
            GroupChange::SubgroupsAdded {
                group_id,
                subgroup_ids,
            } => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    for id in subgroup_ids {
                        if !g.subgroups.contains(id) {
                            g.subgroups.push(*id);
                            self.group_uses.add_subgroup(*group_id, *id);
                        }
                    }
                }
            }
            GroupChange::SubgroupsRemoved {
                group_id,
                subgroup_ids,
            } => {
                if let Some(g) = self.groups.get_mut(group_id) {
                    g.subgroups.retain(|id| !subgroup_ids.contains(id));
                    for id in subgroup_ids {
                        self.group_uses.remove_subgroup(*group_id, *id);
                    }
                }
            }
        }
    }

    fn insert_group(&mut self, g: &UserGroup) {
        self.next_group_id = self.next_group_id.max(g.id + 1);
        self.group_by_name.insert(g.name.clone(), g.id);
        for sub in &g.subgroups {
            if g.system.is_none() {
                self.group_uses.add_subgroup(g.id, *sub);
            }
        }
        self.groups.insert(g.id, g.clone());
    }

    fn apply_group_update(&mut self, id: GroupId, update: &GroupUpdate) {
        match update {
            GroupUpdate::Name(name) => {
                if let Some(g) = self.groups.get_mut(&id) {
                    let old = std::mem::replace(&mut g.name, name.clone());
                    if self.group_by_name.get(&old) == Some(&id) {
                        self.group_by_name.remove(&old);
                    }
                    self.group_by_name.insert(name.clone(), id);
                }
            }
            GroupUpdate::Description(d) => {
                if let Some(g) = self.groups.get_mut(&id) {
                    g.description = d.clone();
                }
            }
            GroupUpdate::Setting(p, v) => {
                let using = SettingUse::Group(id, *p);
                let config = self
                    .group_configs
                    .entry(id)
                    .or_insert_with(GroupConfig::empty);
                if let Some(old) = config.settings.insert(*p, v.clone()) {
                    self.group_uses.remove_setting(&old, using);
                }
                self.group_uses.add_setting(v, using);
            }
            GroupUpdate::Deactivated(d) => {
                self.group_configs
                    .entry(id)
                    .or_insert_with(GroupConfig::empty)
                    .deactivated = *d;
            }
        }
    }

    /// Applies a change of one of the realm's group settings.
    pub(in crate::realm) fn apply_realm_group_setting(
        &mut self,
        setting: RealmSetting,
        value: &GroupSetting,
    ) {
        let using = SettingUse::Realm(setting);
        if let Some(old) = self.realm_group_settings.insert(setting, value.clone()) {
            self.group_uses.remove_setting(&old, using);
        }
        self.group_uses.add_setting(value, using);
    }
}

impl GroupConfig {
    /// A configuration without settings (only reached for a group created without one,
    /// which `decide_*` never does; reads then see `role:nobody`).
    fn empty() -> GroupConfig {
        GroupConfig {
            settings: BTreeMap::new(),
            deactivated: false,
        }
    }
}

//! The client events of group changes (rendered by `Realm::events_for`), as Zulip's
//! `zerver/actions/user_groups.py` sends them, to every active user:
//!
//! | Change | Events |
//! |---|---|
//! | `GroupCreated` | `user_group` `add` `{group}` |
//! | `GroupUpdated` name, description, setting | `user_group` `update` `{group_id, data}` (a deactivated group's rename only to `include_deactivated_groups` queues) |
//! | `GroupUpdated` deactivated | `update` `{deactivated: true}` to `include_deactivated_groups` queues, `remove` `{group_id}` to the others |
//! | `GroupUpdated` reactivated | `update` `{deactivated: false}` to `include_deactivated_groups` queues, `add` `{group}` to the others |
//! | `MembersAdded` / `SubgroupsAdded` | `add_members` `{group_id, user_ids}` / `add_subgroups` `{group_id, direct_subgroup_ids}`; then, per channel whose metadata users gain through the group, `stream` `create` and `subscription` `peer_add` to them |
//! | `MembersRemoved` / `SubgroupsRemoved` | `remove_members` / `remove_subgroups`; then `stream` `delete` to users losing a channel's metadata |
//! | realm `GroupSettingSet` | `realm` `update_dict` `{property: "default", data}` |

use serde_json::Map;

use super::*;
use crate::realm::events::{Audience, Event};

/// The capability that shows deactivated groups.
const CAPABILITY: &str = "include_deactivated_groups";

/// Channel settings that let their holders see a channel (metadata access).
const METADATA_SETTINGS: [ChannelSetting; 3] = [
    ChannelSetting::CanAddSubscribers,
    ChannelSetting::CanAdministerChannel,
    ChannelSetting::CanSubscribe,
];

impl Realm {
    fn everyone_active(&self) -> Audience {
        Audience::users(
            self.users
                .values()
                .filter(|u| u.is_active)
                .map(|u| u.id)
                .collect(),
        )
    }

    /// The `group` of a `user_group` `add` event, keys in Zulip's order.
    fn group_add_json(&self, g: &UserGroup) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), g.name.clone().into());
        m.insert("creator_id".into(), json!(g.creator_id));
        m.insert("date_created".into(), g.date_created.into());
        m.insert("members".into(), json!(self.group_direct_members(g)));
        m.insert("description".into(), g.description.clone().into());
        m.insert("id".into(), g.id.into());
        m.insert("is_system_group".into(), g.system.is_some().into());
        m.insert(
            "direct_subgroup_ids".into(),
            json!(self.group_direct_subgroups(g)),
        );
        for p in GroupPermission::ALL {
            m.insert(
                p.name().into(),
                self.setting_json(&self.group_permission(g, p)),
            );
        }
        m.insert("deactivated".into(), false.into());
        json!({"type": "user_group", "op": "add", "group": m})
    }

    /// The events of a group change.
    pub(in crate::realm) fn group_events(
        &self,
        before: &Realm,
        change: &GroupChange,
    ) -> Vec<Event> {
        let all = self.everyone_active();
        let update = |group_id: GroupId, data: Value| json!({"type": "user_group", "op": "update", "group_id": group_id, "data": data});
        match change {
            GroupChange::UserGroupCreated(_) => Vec::new(),
            GroupChange::GroupCreated { group, .. } => self
                .group(group.id)
                .map(|g| vec![Event::new(self.group_add_json(g), all)])
                .unwrap_or_default(),
            GroupChange::GroupUpdated {
                group_id,
                update: u,
            } => {
                let id = *group_id;
                match u {
                    GroupUpdate::Name(name) => {
                        let event = Event::new(update(id, json!({"name": name})), all);
                        if self.is_group_deactivated(id) {
                            vec![event.for_capability(CAPABILITY, true)]
                        } else {
                            vec![event]
                        }
                    }
                    GroupUpdate::Description(d) => {
                        vec![Event::new(update(id, json!({"description": d})), all)]
                    }
                    GroupUpdate::Setting(p, v) => {
                        let mut data = Map::new();
                        data.insert(p.name().into(), self.setting_json(v));
                        vec![Event::new(update(id, Value::Object(data)), all)]
                    }
                    GroupUpdate::Deactivated(true) => vec![
                        Event::new(update(id, json!({"deactivated": true})), all.clone())
                            .for_capability(CAPABILITY, true),
                        Event::new(
                            json!({"type": "user_group", "op": "remove", "group_id": id}),
                            all,
                        )
                        .for_capability(CAPABILITY, false),
                    ],
                    GroupUpdate::Deactivated(false) => {
                        let mut out = vec![Event::new(
                            update(id, json!({"deactivated": false})),
                            all.clone(),
                        )
                        .for_capability(CAPABILITY, true)];
                        if let Some(g) = self.group(id) {
                            out.push(
                                Event::new(self.group_add_json(g), all)
                                    .for_capability(CAPABILITY, false),
                            );
                        }
                        out
                    }
                }
            }
            GroupChange::MembersAdded { group_id, user_ids } => {
                let mut out = vec![Event::new(
                    json!({"type": "user_group", "op": "add_members", "group_id": group_id, "user_ids": user_ids}),
                    all,
                )];
                out.extend(self.metadata_access_events(before, *group_id));
                out
            }
            GroupChange::MembersRemoved { group_id, user_ids } => {
                let mut out = vec![Event::new(
                    json!({"type": "user_group", "op": "remove_members", "group_id": group_id, "user_ids": user_ids}),
                    all,
                )];
                out.extend(self.metadata_access_events(before, *group_id));
                out
            }
            GroupChange::SubgroupsAdded {
                group_id,
                subgroup_ids,
            } => {
                let mut out = vec![Event::new(
                    json!({"type": "user_group", "op": "add_subgroups", "group_id": group_id, "direct_subgroup_ids": subgroup_ids}),
                    all,
                )];
                out.extend(self.metadata_access_events(before, *group_id));
                out
            }
            GroupChange::SubgroupsRemoved {
                group_id,
                subgroup_ids,
            } => {
                let mut out = vec![Event::new(
                    json!({"type": "user_group", "op": "remove_subgroups", "group_id": group_id, "direct_subgroup_ids": subgroup_ids}),
                    all,
                )];
                out.extend(self.metadata_access_events(before, *group_id));
                out
            }
        }
    }

    /// The event of a change of one of the realm's group settings.
    pub(in crate::realm) fn realm_setting_events(
        &self,
        setting: RealmSetting,
        value: &GroupSetting,
    ) -> Vec<Event> {
        let mut data = Map::new();
        data.insert(setting.name().into(), self.setting_json(value));
        vec![Event::new(
            json!({"type": "realm", "op": "update_dict", "property": "default", "data": data}),
            self.everyone_active(),
        )]
    }

    /// Zulip's stream events after a membership change of `group_id`: for each active
    /// channel whose metadata access goes through the group (or a group holding it),
    /// users who gain access get the channel (`stream` `create`) and its subscribers
    /// (`subscription` `peer_add`); users who lose it get `stream` `delete`.
    fn metadata_access_events(&self, before: &Realm, group_id: GroupId) -> Vec<Event> {
        let mut groups = BTreeSet::new();
        let mut todo = vec![group_id];
        while let Some(g) = todo.pop() {
            if groups.insert(g) {
                todo.extend(self.group_uses.supergroups_of(g));
                todo.extend(before.group_uses.supergroups_of(g));
            }
        }
        let mut channels = BTreeSet::new();
        for g in &groups {
            for using in self.group_uses.settings_using(*g) {
                if let SettingUse::Channel(cid, s) = using {
                    if METADATA_SETTINGS.contains(&s) {
                        channels.insert(cid);
                    }
                }
            }
        }
        let mut out = Vec::new();
        for cid in channels {
            let (Some(ch), Some(old)) = (self.channel(cid), before.channel(cid)) else {
                continue;
            };
            if ch.is_archived {
                continue;
            }
            let was: BTreeSet<UserId> = before.channel_viewers(old).into_iter().collect();
            let now: BTreeSet<UserId> = self.channel_viewers(ch).into_iter().collect();
            let gained: Vec<UserId> = now.difference(&was).copied().collect();
            let lost: Vec<UserId> = was.difference(&now).copied().collect();
            if !gained.is_empty() {
                out.push(Event::new(
                    json!({"type": "stream", "op": "create", "streams": [self.stream_json(ch)]}),
                    Audience::users(gained.clone()),
                ));
                out.push(Event::new(
                    json!({"type": "subscription", "op": "peer_add", "stream_ids": [cid], "user_ids": ch.subscriber_ids()}),
                    Audience::users(gained),
                ));
            }
            if !lost.is_empty() {
                out.push(Event::new(
                    json!({"type": "stream", "op": "delete", "streams": [{"stream_id": cid}], "stream_ids": [cid]}),
                    Audience::users(lost),
                ));
            }
        }
        out
    }
}

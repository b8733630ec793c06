//! Channel changes turned into state.

use super::*;
use crate::realm::ChannelChange;

impl Realm {
    // ---- apply -----------------------------------------------------------------

    /// Applies a channel change (called by `Realm::apply`).
    pub(in crate::realm) fn apply_channel_change(&mut self, change: &ChannelChange) {
        match change {
            ChannelChange::ChannelCreated(ch) => {
                self.next_channel_id = self.next_channel_id.max(ch.id + 1);
                self.channel_by_name.insert(ch.name.to_lowercase(), ch.id);
                self.channels.insert(ch.id, Arc::new((**ch).clone()));
            }
            ChannelChange::Subscribed { subs } => {
                for s in subs {
                    if let Some(ch) = self.channels.get_mut(&s.channel_id).map(Arc::make_mut) {
                        let colors = self.color_use.entry(s.user_id).or_default();
                        match ch.subs.get_mut(&s.user_id) {
                            Some(existing) => {
                                colors.recolor(&existing.color, &s.color);
                                existing.active = true;
                                existing.color = s.color.clone();
                            }
                            None => {
                                colors.add(&s.color);
                                ch.subs
                                    .insert(s.user_id, Subscription::new(s.color.clone()));
                            }
                        }
                    }
                }
            }
            ChannelChange::Unsubscribed { subs } => {
                for (cid, uid) in subs {
                    if let Some(sub) = self
                        .channels
                        .get_mut(cid)
                        .map(Arc::make_mut)
                        .and_then(|ch| ch.subs.get_mut(uid))
                    {
                        sub.active = false;
                    }
                }
            }
            ChannelChange::SubscriptionPropertySet {
                user_id,
                channel_id,
                property,
            } => {
                if let Some(sub) = self
                    .channels
                    .get_mut(channel_id)
                    .map(Arc::make_mut)
                    .and_then(|ch| ch.subs.get_mut(user_id))
                {
                    match property {
                        SubProperty::Color(c) => {
                            self.color_use
                                .entry(*user_id)
                                .or_default()
                                .recolor(&sub.color, c);
                            sub.color = c.clone();
                        }
                        SubProperty::IsMuted(v) => sub.is_muted = *v,
                        SubProperty::PinToTop(v) => sub.pin_to_top = *v,
                        SubProperty::DesktopNotifications(v) => {
                            sub.desktop_notifications = Some(*v)
                        }
                        SubProperty::AudibleNotifications(v) => {
                            sub.audible_notifications = Some(*v)
                        }
                        SubProperty::PushNotifications(v) => sub.push_notifications = Some(*v),
                        SubProperty::EmailNotifications(v) => {
                            sub.email_notifications = Some(*v);
                            self.mail_index
                                .set_sub_email(*channel_id, *user_id, Some(*v));
                        }
                        SubProperty::WildcardMentionsNotify(v) => {
                            sub.wildcard_mentions_notify = Some(*v)
                        }
                    }
                }
            }
            ChannelChange::ChannelUpdated { channel_id, update } => {
                let Some(ch) = self.channels.get_mut(channel_id).map(Arc::make_mut) else {
                    return;
                };
                match update {
                    ChannelUpdate::Name { new: n, .. } => {
                        let old = std::mem::replace(&mut ch.name, n.clone());
                        if self.channel_by_name.get(&old.to_lowercase()) == Some(channel_id) {
                            self.channel_by_name.remove(&old.to_lowercase());
                        }
                        self.channel_by_name.insert(n.to_lowercase(), *channel_id);
                    }
                    ChannelUpdate::Description {
                        description,
                        rendered,
                    } => {
                        ch.description = description.clone();
                        ch.rendered_description = rendered.clone();
                    }
                    ChannelUpdate::Privacy {
                        invite_only,
                        history_public_to_subscribers,
                        is_web_public,
                    } => {
                        ch.invite_only = *invite_only;
                        ch.history_public_to_subscribers = *history_public_to_subscribers;
                        ch.is_web_public = *is_web_public;
                    }
                    ChannelUpdate::Folder(f) => ch.folder_id = *f,
                    ChannelUpdate::Setting(s, v) => {
                        ch.settings.insert(*s, v.clone());
                    }
                    ChannelUpdate::MessageRetentionDays(d) => ch.message_retention_days = *d,
                    ChannelUpdate::TopicsPolicy(p) => ch.topics_policy = *p,
                    ChannelUpdate::Archived(a) => {
                        ch.is_archived = *a;
                        if *a {
                            self.default_channels.remove(channel_id);
                        }
                    }
                }
            }
            ChannelChange::DefaultChannelSet {
                channel_id,
                is_default,
            } => {
                if *is_default {
                    self.default_channels.insert(*channel_id);
                } else {
                    self.default_channels.remove(channel_id);
                }
            }
            ChannelChange::ChannelFolderCreated(f) => {
                self.next_folder_id = self.next_folder_id.max(f.id + 1);
                self.folders.insert(f.id, f.clone());
            }
            ChannelChange::ChannelFolderUpdated { folder_id, update } => {
                if let Some(f) = self.folders.get_mut(folder_id) {
                    match update {
                        FolderUpdate::Name(n) => f.name = n.clone(),
                        FolderUpdate::Description {
                            description,
                            rendered,
                        } => {
                            f.description = description.clone();
                            f.rendered_description = rendered.clone();
                        }
                        FolderUpdate::Archived(a) => f.is_archived = *a,
                    }
                }
            }
            ChannelChange::ChannelFoldersReordered { order } => {
                // Zulip enumerates the list: a duplicated id keeps its last position.
                for (i, id) in order.iter().enumerate() {
                    if let Some(f) = u64::try_from(*id)
                        .ok()
                        .and_then(|id| self.folders.get_mut(&id))
                    {
                        f.order = i as i64;
                    }
                }
            }
            ChannelChange::EmailTokenCreated { key, token } => {
                self.channel_email_tokens.insert(*key, token.clone());
            }
        }
    }
}

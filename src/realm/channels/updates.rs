//! Channel updates and archiving, and default channels (seed 4.20).

use super::*;
use crate::realm::ChannelChange;

impl Realm {
    // ---- update / archive ----------------------------------------------------

    /// Zulip's access for updating or deleting a channel.
    pub(super) fn access_channel_for_admin(&self, me: &User, id: i64) -> ApiResult<&Channel> {
        let ch = u64::try_from(id)
            .ok()
            .and_then(|id| self.channels.get(&id))
            .ok_or_else(invalid_channel_id)?;
        if self.can_administer_channel(me, ch) {
            return Ok(ch);
        }
        if !self.can_see_channel(me, ch) {
            return Err(invalid_channel_id());
        }
        Err(ApiError::bad_request(
            "You do not have permission to administer this channel.",
        ))
    }

    /// `PATCH /streams/{stream_id}`: the group settings are looked up first, as Zulip
    /// reads them, then the channel.
    pub fn decide_update_channel(
        &self,
        me: &User,
        q: UpdateChannel,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let p = q.patch;
        let settings = self.resolve_channel_settings(&p.settings)?;
        let ch = self.access_channel_for_admin(me, q.id)?;
        let cid = ch.id;
        let mut changes = Vec::new();
        let upd = |update| {
            Change::Channel(ChannelChange::ChannelUpdated {
                channel_id: cid,
                update,
            })
        };
        if p.is_archived == Some(true) {
            return Err(ApiError::bad_request("Invalid parameters"));
        }
        if p.is_archived == Some(false) && ch.is_archived {
            if let Some(other) = self.channel_by_name(&ch.name).filter(|o| o.id != cid) {
                return Err(channel_exists(&other.name));
            }
            changes.push(upd(ChannelUpdate::Archived(false)));
        }
        if let Some(raw) = &p.description {
            let description = check_channel_description(raw)?;
            if description != ch.description {
                changes.push(upd(ChannelUpdate::Description {
                    rendered: render_description(&description),
                    description,
                }));
            }
        }
        if let Some(raw) = &p.new_name {
            let name = check_channel_name(raw)?;
            if name == ch.name {
                return Err(ApiError::bad_request("Channel already has that name."));
            }
            if let Some(other) = self.channel_by_name(&name).filter(|o| o.id != cid) {
                return Err(channel_exists(&other.name));
            }
            changes.push(upd(ChannelUpdate::Name {
                old: ch.name.clone(),
                new: name,
            }));
        }
        let is_default = self.default_channels.contains(&cid);
        let privacy_given = p.is_private.is_some()
            || p.is_web_public.is_some()
            || p.history_public_to_subscribers.is_some();
        if privacy_given {
            let invite_only = p.is_private.unwrap_or(ch.invite_only);
            let is_web_public = p.is_web_public.unwrap_or(if p.is_private == Some(true) {
                false
            } else {
                ch.is_web_public
            });
            if invite_only && is_web_public {
                return Err(ApiError::bad_request("Invalid parameters"));
            }
            if (invite_only && !ch.invite_only || is_web_public != ch.is_web_public)
                && !me.is_admin()
                && !self.in_setting(me, &ch.setting(ChannelSetting::CanAdministerChannel))
            {
                return Err(insufficient_permission());
            }
            let making_default = p.is_default_stream.unwrap_or(is_default);
            if invite_only && making_default {
                return Err(ApiError::bad_request(
                    "A default channel cannot be made private.",
                ));
            }
            // The realm's moderation request channel stays private.
            if !invite_only && self.properties.moderation_request_channel == Some(cid) {
                return Err(ApiError::bad_request(
                    "Moderation request channel must be private.",
                ));
            }
            // Zulip's `update_stream_backend`: the realm's creation settings for the
            // privacy asked for.
            if let Some(private) = p.is_private {
                let needed = if private {
                    RealmSetting::CanCreatePrivateChannel
                } else {
                    RealmSetting::CanCreatePublicChannel
                };
                if !self.has_realm_permission(me, needed) {
                    return Err(insufficient_permission());
                }
            }
            if p.is_web_public == Some(true)
                && !self.has_realm_permission(me, RealmSetting::CanCreateWebPublicChannel)
            {
                return Err(insufficient_permission());
            }
            let history = if invite_only {
                p.history_public_to_subscribers
                    .unwrap_or(ch.history_public_to_subscribers)
            } else {
                true
            };
            if invite_only != ch.invite_only
                || is_web_public != ch.is_web_public
                || history != ch.history_public_to_subscribers
            {
                changes.push(upd(ChannelUpdate::Privacy {
                    invite_only,
                    history_public_to_subscribers: history,
                    is_web_public,
                }));
            }
        }
        if let Some(d) = p.is_default_stream {
            if d != is_default {
                if !me.is_admin() {
                    return Err(ApiError::must_be_admin());
                }
                let private = p.is_private.unwrap_or(ch.invite_only);
                if d && private {
                    return Err(ApiError::bad_request(
                        "A default channel cannot be private.",
                    ));
                }
                changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
                    channel_id: cid,
                    is_default: d,
                }));
            }
        }
        if let Some(folder) = p.folder_id {
            let folder = self.check_folder(folder)?;
            if folder != ch.folder_id {
                changes.push(upd(ChannelUpdate::Folder(folder)));
            }
        }
        if let Some(raw) = &p.message_retention_days {
            if !me.is_owner() {
                return Err(ApiError::must_be_owner());
            }
            let days = parse_message_retention_days(raw)?;
            if days != ch.message_retention_days {
                changes.push(upd(ChannelUpdate::MessageRetentionDays(days)));
            }
        }
        if let Some(policy) = p.topics_policy {
            self.check_set_topics_policy(me, policy, Some(ch))?;
            if policy != ch.topics_policy {
                changes.push(upd(ChannelUpdate::TopicsPolicy(policy)));
                changes.push(self.topics_policy_notice(me, ch, ch.topics_policy, policy, cx));
            }
        }
        for (s, v) in settings {
            if ch.setting(s) != v {
                changes.push(upd(ChannelUpdate::Setting(s, v)));
            }
        }
        Ok(Decided::changes(changes))
    }

    /// `DELETE /streams/{stream_id}`: archives the channel.
    pub fn decide_archive_channel(
        &self,
        me: &User,
        q: ArchiveChannel,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let ch = self.access_channel_for_admin(me, q.id)?;
        if ch.is_archived {
            return Err(ApiError::bad_request("Channel is already deactivated"));
        }
        let mut changes = Vec::new();
        if self.default_channels.contains(&ch.id) {
            changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
                channel_id: ch.id,
                is_default: false,
            }));
        }
        changes.push(Change::Channel(ChannelChange::ChannelUpdated {
            channel_id: ch.id,
            update: ChannelUpdate::Archived(true),
        }));
        Ok(Decided::changes(changes))
    }

    // ---- default channels (seed 4.20) ---------------------------------------

    /// `POST /default_streams`: administrators only.
    /// An archived channel answers "Invalid channel ID", as Zulip's
    /// `access_stream_by_id` does for inactive channels.
    pub fn decide_add_default_channel(
        &self,
        me: &User,
        q: DefaultChannel,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let ch = self.access_channel(me, q.stream_id)?;
        if ch.is_archived {
            return Err(invalid_channel_id());
        }
        if ch.invite_only {
            return Err(ApiError::bad_request(
                "Private channels cannot be made default.",
            ));
        }
        if self.default_channels.contains(&ch.id) {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Channel(
            ChannelChange::DefaultChannelSet {
                channel_id: ch.id,
                is_default: true,
            },
        )]))
    }

    /// `DELETE /default_streams`: administrators only.
    pub fn decide_remove_default_channel(
        &self,
        me: &User,
        q: DefaultChannel,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let ch = u64::try_from(q.stream_id)
            .ok()
            .and_then(|id| self.channels.get(&id))
            .filter(|ch| me.is_admin() || self.can_access_channel(me, ch))
            .ok_or_else(invalid_channel_id)?;
        if !self.default_channels.contains(&ch.id) {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Channel(
            ChannelChange::DefaultChannelSet {
                channel_id: ch.id,
                is_default: false,
            },
        )]))
    }
}

//! Who may see a channel, its content and its subscribers; channel lookups.

use super::*;

impl Realm {
    pub fn channel(&self, id: ChannelId) -> Option<&Channel> {
        self.channels.get(&id).map(Arc::as_ref)
    }

    /// A channel by name, case-insensitively.
    pub fn channel_by_name(&self, name: &str) -> Option<&Channel> {
        self.channel_by_name
            .get(&name.to_lowercase())
            .and_then(|id| self.channel(*id))
    }

    /// Zulip's metadata access: whether `user` may know the channel exists and read
    /// its settings.
    pub fn can_see_channel(&self, user: &User, ch: &Channel) -> bool {
        if ch.is_subscribed(user.id) || (ch.is_web_public && !ch.invite_only) {
            return true;
        }
        if user.is_guest() {
            return false;
        }
        user.is_admin()
            || ch.is_public()
            || [
                ChannelSetting::CanAdministerChannel,
                ChannelSetting::CanAddSubscribers,
                ChannelSetting::CanSubscribe,
            ]
            .iter()
            .any(|s| self.in_setting(user, &ch.setting(*s)))
    }

    /// Zulip's content access (`access_stream_by_id`): subscribers, everyone but guests
    /// for public channels, guests for web-public ones, and the groups allowed to join.
    pub fn can_access_channel(&self, user: &User, ch: &Channel) -> bool {
        if ch.is_subscribed(user.id) || (ch.is_web_public && !ch.invite_only) {
            return true;
        }
        if user.is_guest() {
            return false;
        }
        ch.is_public()
            || [
                ChannelSetting::CanAddSubscribers,
                ChannelSetting::CanSubscribe,
            ]
            .iter()
            .any(|s| self.in_setting(user, &ch.setting(*s)))
    }

    /// Whether `user` may see who is subscribed (and so receives peer events).
    pub fn can_see_subscribers(&self, user: &User, ch: &Channel) -> bool {
        if !user.is_active {
            return false;
        }
        if ch.is_subscribed(user.id) {
            return true;
        }
        if user.is_guest() {
            return ch.is_web_public && !ch.invite_only;
        }
        user.is_admin() || ch.is_public() || self.can_see_channel(user, ch)
    }

    /// Whether `user` administers the channel (administrators, or its
    /// `can_administer_channel_group`).
    pub fn can_administer_channel(&self, user: &User, ch: &Channel) -> bool {
        user.is_admin()
            || (!user.is_guest()
                && self.in_setting(user, &ch.setting(ChannelSetting::CanAdministerChannel)))
    }

    /// `access_stream_by_id` with content access: "Invalid channel ID" otherwise.
    pub fn access_channel(&self, user: &User, id: i64) -> ApiResult<&Channel> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.channel(id))
            .filter(|ch| self.can_access_channel(user, ch))
            .ok_or_else(invalid_channel_id)
    }

    /// `access_stream_by_id` with metadata access only.
    pub fn access_channel_metadata(&self, user: &User, id: i64) -> ApiResult<&Channel> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.channel(id))
            .filter(|ch| self.can_see_channel(user, ch))
            .ok_or_else(invalid_channel_id)
    }

    /// Active users who may see the channel exists.
    pub fn channel_viewers(&self, ch: &Channel) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| u.is_active && self.can_see_channel(u, ch))
            .map(|u| u.id)
            .collect()
    }

    /// Active users who may see the subscriber list.
    pub fn subscriber_viewers(&self, ch: &Channel) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| self.can_see_subscribers(u, ch))
            .map(|u| u.id)
            .collect()
    }
}

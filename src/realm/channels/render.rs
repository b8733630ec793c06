//! Zulip's JSON shapes of channels, subscriptions and folders, and the reads that
//! answer them (`view_*`).

use super::*;

impl Realm {
    /// Zulip's legacy `stream_post_policy`, derived from `can_send_message_group`.
    pub(super) fn stream_post_policy(&self, ch: &Channel) -> u8 {
        let sys = |g| self.system_setting(g);
        let s = ch.setting(ChannelSetting::CanSendMessage);
        if s == sys(SystemGroup::Administrators) {
            2
        } else if s == sys(SystemGroup::FullMembers) {
            3
        } else if s == sys(SystemGroup::Moderators) {
            4
        } else {
            1
        }
    }

    /// The channel object of `GET /streams` and `stream` events.
    pub fn stream_json(&self, ch: &Channel) -> Map<String, Value> {
        let policy = self.stream_post_policy(ch);
        let mut m = Map::new();
        m.insert("stream_id".into(), ch.id.into());
        m.insert("name".into(), ch.name.clone().into());
        m.insert("is_archived".into(), ch.is_archived.into());
        m.insert("description".into(), ch.description.clone().into());
        m.insert(
            "rendered_description".into(),
            ch.rendered_description.clone().into(),
        );
        m.insert("date_created".into(), ch.date_created.into());
        m.insert("creator_id".into(), ch.creator_id.into());
        m.insert("invite_only".into(), ch.invite_only.into());
        m.insert("is_web_public".into(), ch.is_web_public.into());
        m.insert("stream_post_policy".into(), policy.into());
        m.insert(
            "message_retention_days".into(),
            ch.message_retention_days.into(),
        );
        m.insert(
            "history_public_to_subscribers".into(),
            ch.history_public_to_subscribers.into(),
        );
        m.insert("topics_policy".into(), ch.topics_policy.name().into());
        m.insert("first_message_id".into(), Value::Null);
        m.insert("folder_id".into(), ch.folder_id.into());
        m.insert("is_recently_active".into(), true.into());
        m.insert("is_announcement_only".into(), (policy == 2).into());
        for s in ChannelSetting::ALL {
            m.insert(s.name().into(), ch.setting(s).json());
        }
        m.insert("subscriber_count".into(), ch.subscriber_ids().len().into());
        m.insert("stream_weekly_traffic".into(), Value::Null);
        m
    }

    /// A subscription object: the channel plus the user's personal settings.
    pub fn subscription_json(
        &self,
        ch: &Channel,
        sub: &Subscription,
        include_subscribers: bool,
    ) -> Map<String, Value> {
        let mut m = self.stream_json(ch);
        m.insert("color".into(), sub.color.clone().into());
        m.insert("is_muted".into(), sub.is_muted.into());
        m.insert("in_home_view".into(), (!sub.is_muted).into());
        m.insert("pin_to_top".into(), sub.pin_to_top.into());
        m.insert(
            "desktop_notifications".into(),
            sub.desktop_notifications.into(),
        );
        m.insert(
            "audible_notifications".into(),
            sub.audible_notifications.into(),
        );
        m.insert("push_notifications".into(), sub.push_notifications.into());
        m.insert("email_notifications".into(), sub.email_notifications.into());
        m.insert(
            "wildcard_mentions_notify".into(),
            sub.wildcard_mentions_notify.into(),
        );
        if include_subscribers {
            m.insert("subscribers".into(), ch.subscriber_ids().into());
        }
        m
    }

    pub fn folder_json(&self, f: &ChannelFolder) -> Value {
        json!({
            "id": f.id,
            "name": f.name,
            "description": f.description,
            "rendered_description": f.rendered_description,
            "order": f.order,
            "date_created": f.date_created,
            "creator_id": f.creator_id,
            "is_archived": f.is_archived,
        })
    }

    /// Channel folders sorted by `order`, then id.
    pub fn folders_sorted(&self, include_archived: bool) -> Vec<&ChannelFolder> {
        let mut v: Vec<&ChannelFolder> = self
            .folders
            .values()
            .filter(|f| include_archived || !f.is_archived)
            .collect();
        v.sort_by_key(|f| (f.order, f.id));
        v
    }

    // ---- reads ---------------------------------------------------------------

    /// `GET /users/me/subscriptions`.
    pub fn view_subscriptions(&self, me: &User, include_subscribers: bool) -> Vec<Value> {
        self.channels
            .values()
            .filter_map(|ch| {
                let sub = ch.subs.get(&me.id).filter(|s| s.active)?;
                let subscribers = include_subscribers && self.can_see_subscribers(me, ch);
                Some(Value::Object(self.subscription_json(ch, sub, subscribers)))
            })
            .collect()
    }

    /// `GET /streams`, with Zulip's filters.
    pub fn view_streams(&self, me: &User, f: &StreamFilter) -> ApiResult<Vec<Value>> {
        if f.include_all_active && !me.is_admin() {
            return Err(ApiError::bad_request("User not authorized for this query"));
        }
        Ok(self
            .channels
            .values()
            .filter(|ch| !(f.exclude_archived && ch.is_archived))
            .filter(|ch| {
                let public = f.include_public && ch.is_public() && !me.is_guest();
                let web_public = f.include_web_public && ch.is_web_public && !ch.invite_only;
                let subscribed = f.include_subscribed && ch.is_subscribed(me.id);
                let all = (f.include_all || f.include_all_active) && self.can_see_channel(me, ch);
                let default = f.include_default && self.default_channels.contains(&ch.id);
                let owner = f.include_owner_subscribed
                    && self.users.values().any(|b| {
                        b.is_active && b.bot_owner_id == Some(me.id) && ch.is_subscribed(b.id)
                    })
                    && self.can_see_channel(me, ch);
                let content = f.include_can_access_content && self.can_access_channel(me, ch);
                public || web_public || subscribed || all || default || owner || content
            })
            .map(|ch| {
                let mut m = self.stream_json(ch);
                // Only with `include_default` (Zulip's `get_streams_for_user`).
                if f.include_default {
                    m.insert(
                        "is_default".into(),
                        self.default_channels.contains(&ch.id).into(),
                    );
                }
                Value::Object(m)
            })
            .collect())
    }

    /// `GET /streams/{stream_id}`.
    pub fn view_stream(&self, me: &User, id: i64) -> ApiResult<Value> {
        let ch = self.access_channel_metadata(me, id)?;
        // A basic channel object: `is_default` belongs to `GET /streams` with
        // `include_default` only.
        Ok(Value::Object(self.stream_json(ch)))
    }

    /// `GET /get_stream_id`: Zulip's `access_stream_by_name` with content access, so an
    /// administrator outside a private channel does not find it either.
    pub fn view_stream_id(&self, me: &User, name: &str) -> ApiResult<ChannelId> {
        self.channel_by_name(name.trim())
            .filter(|ch| self.can_access_channel(me, ch))
            .map(|ch| ch.id)
            .ok_or_else(|| ApiError::bad_request(format!("Invalid channel name '{name}'")))
    }

    /// `GET /streams/{stream_id}/members`.
    pub fn view_stream_members(&self, me: &User, id: i64) -> ApiResult<Vec<UserId>> {
        let ch = self.access_channel_metadata(me, id)?;
        if !self.can_see_subscribers(me, ch) {
            return Err(ApiError::bad_request(
                "Unable to retrieve subscribers for private channel",
            ));
        }
        Ok(ch.subscriber_ids())
    }

    /// `GET /users/{user_id}/subscriptions/{stream_id}`.
    /// `GET /users/{user_id}/channels` (feature level 440; bots since 458): the
    /// channels the user is subscribed to (archived ones keep their subscriptions, as
    /// in Zulip) whose subscribers `me` may see, by id.
    pub fn view_user_channels(&self, me: &User, user_id: i64) -> ApiResult<Vec<ChannelId>> {
        let user = u64::try_from(user_id)
            .ok()
            .and_then(|id| self.users.get(&id))
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if !user.is_active {
            return Err(ApiError::bad_request("User is deactivated"));
        }
        Ok(self
            .channels
            .values()
            .filter(|ch| ch.is_subscribed(user.id))
            .filter(|ch| user.id == me.id || self.can_see_subscribers(me, ch))
            .map(|ch| ch.id)
            .collect())
    }

    pub fn view_is_subscribed(&self, me: &User, user_id: i64, stream_id: i64) -> ApiResult<bool> {
        let user = u64::try_from(user_id)
            .ok()
            .and_then(|id| self.users.get(&id))
            .filter(|u| u.is_active)
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        let ch = self.access_channel_metadata(me, stream_id)?;
        if user.id != me.id && !self.can_see_subscribers(me, ch) {
            return Err(invalid_channel_id());
        }
        Ok(ch.is_subscribed(user.id))
    }
}

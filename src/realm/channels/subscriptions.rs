//! Subscribing (creating missing channels), `POST /channels/create`, unsubscribing
//! (seed 4.5) and subscription properties (seed 4.1); subscription colours.

use super::*;
use crate::realm::ChannelChange;

impl Realm {
    // ---- subscribe / create --------------------------------------------------

    /// The color of a new subscription of `user`; `taken` holds the palette use of the
    /// users this decision already chose colors for, and records this choice.
    pub(super) fn next_color(&self, user: UserId, taken: &mut HashMap<UserId, ColorUse>) -> String {
        let used = taken
            .entry(user)
            .or_insert_with(|| self.color_use.get(&user).cloned().unwrap_or_default());
        let color = used.pick();
        used.add(&color);
        color
    }

    /// Records `color` as chosen for `user` in this decision (a color the client asked for).
    pub(super) fn take_color(
        &self,
        user: UserId,
        color: &str,
        taken: &mut HashMap<UserId, ColorUse>,
    ) {
        taken
            .entry(user)
            .or_insert_with(|| self.color_use.get(&user).cloned().unwrap_or_default())
            .add(color);
    }

    /// Zulip's `check_channel_creation_permissions`: the realm's channel-creation
    /// settings for this privacy, administrators only for default channels.
    pub(super) fn check_can_create(&self, me: &User, spec: &ChannelSpec) -> ApiResult<()> {
        let privacy = if spec.invite_only {
            RealmSetting::CanCreatePrivateChannel
        } else {
            RealmSetting::CanCreatePublicChannel
        };
        if !self.has_realm_permission(me, privacy) {
            return Err(insufficient_permission());
        }
        if spec.is_default_stream && !me.is_admin() {
            return Err(insufficient_permission());
        }
        if spec.invite_only && spec.is_default_stream {
            return Err(ApiError::bad_request(
                "A default channel cannot be private.",
            ));
        }
        if spec.is_web_public
            && !self.has_realm_permission(me, RealmSetting::CanCreateWebPublicChannel)
        {
            return Err(insufficient_permission());
        }
        Ok(())
    }

    pub(super) fn check_folder(&self, id: Option<i64>) -> ApiResult<Option<FolderId>> {
        match id {
            None => Ok(None),
            Some(id) => u64::try_from(id)
                .ok()
                .filter(|id| self.folders.get(id).is_some_and(|f| !f.is_archived))
                .map(Some)
                .ok_or_else(|| ApiError::bad_request("Invalid channel folder ID")),
        }
    }

    /// Builds a new channel (not yet subscribed) with Zulip's defaults.
    pub(super) fn new_channel(
        &self,
        id: ChannelId,
        name: String,
        description: String,
        spec: &ChannelSpec,
        creator: Option<UserId>,
        now: i64,
    ) -> Channel {
        // The settings given replace these (`resolve_channel_settings`).
        let settings: BTreeMap<ChannelSetting, GroupSetting> = ChannelSetting::ALL
            .into_iter()
            .map(|s| (s, s.default_for(self, creator)))
            .collect();
        Channel {
            id,
            rendered_description: render_description(&description),
            name,
            description,
            invite_only: spec.invite_only,
            is_web_public: spec.is_web_public,
            history_public_to_subscribers: spec
                .history_public_to_subscribers
                .unwrap_or(!spec.invite_only)
                || spec.is_web_public
                || !spec.invite_only,
            is_archived: false,
            folder_id: None,
            date_created: now,
            creator_id: creator,
            message_retention_days: spec.message_retention_days,
            topics_policy: spec.topics_policy.unwrap_or_default(),
            settings,
            subs: imbl::OrdMap::new(),
        }
    }

    /// Whether `me` may subscribe themself to an existing channel.
    pub(super) fn can_subscribe_self(&self, me: &User, ch: &Channel) -> bool {
        ch.is_subscribed(me.id)
            || self.can_access_channel(me, ch)
            || (me.is_admin() && ch.invite_only)
    }

    /// Whether `me` may subscribe other users to a channel they can access (Zulip's
    /// `get_streams_to_which_user_cannot_add_subscribers`): the realm's
    /// `can_add_subscribers_group`, administrators, and otherwise the channel's
    /// administrators and `can_add_subscribers_group` (never guests).
    pub(crate) fn can_subscribe_others(&self, me: &User, ch: &Channel) -> bool {
        if self.has_realm_permission(me, RealmSetting::CanAddSubscribers) || me.is_admin() {
            return true;
        }
        if me.is_guest() {
            return false;
        }
        self.in_setting(me, &ch.setting(ChannelSetting::CanAdministerChannel))
            || self.in_setting(me, &ch.setting(ChannelSetting::CanAddSubscribers))
    }

    /// The group settings of a channel as sent, looked up (Zulip's
    /// `parse_group_setting_value` then `access_user_group_for_setting`), in order.
    pub(super) fn resolve_channel_settings(
        &self,
        given: &[(ChannelSetting, SettingValue)],
    ) -> ApiResult<Vec<(ChannelSetting, GroupSetting)>> {
        given
            .iter()
            .map(|(s, v)| Ok((*s, self.check_setting_value(s.name(), v.clone(), None)?)))
            .collect()
    }

    /// `POST /users/me/subscriptions`: subscribes the caller or `principals`, creating
    /// missing channels. Guests are refused (`require_non_guest_user`); the targets and
    /// the group settings are looked up first, as Zulip reads them.
    pub fn decide_subscribe(
        &self,
        me: &User,
        req: SubscribeRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<SubscribeOutcome>> {
        require_non_guest(me)?;
        let principals = req
            .principals
            .as_deref()
            .map(|p| self.resolve_principals(p))
            .transpose()?;
        let settings = self.resolve_channel_settings(&req.spec.settings)?;
        // Checked for every item, created or not (`add_subscriptions_backend`).
        if let (Some(p), false) = (req.spec.topics_policy, req.items.is_empty()) {
            self.check_set_topics_policy(me, p, None)?;
        }
        let targets = principals.unwrap_or_else(|| vec![me.id]);
        let subscribing_others = targets.iter().any(|t| *t != me.id);
        let mut out = SubscribeOutcome::default();
        let mut changes = Vec::new();
        // Resolve names; channels to create get ids in request order.
        let mut next_id = self.next_channel_id;
        let mut existing: Vec<&Channel> = Vec::new();
        let mut to_create: Vec<Channel> = Vec::new();
        let mut seen = BTreeSet::new();
        for item in &req.items {
            let name = check_channel_name(&item.name)?;
            if !seen.insert(name.to_lowercase()) {
                continue;
            }
            match self.channel_by_name(&name) {
                Some(ch) => existing.push(ch),
                None => {
                    let description =
                        check_channel_description(item.description.as_deref().unwrap_or_default())?;
                    let mut ch = self.new_channel(
                        next_id,
                        name,
                        description,
                        &req.spec,
                        Some(me.id),
                        cx.now_secs(),
                    );
                    ch.settings.extend(settings.iter().cloned());
                    to_create.push(ch);
                    next_id += 1;
                }
            }
        }
        if !to_create.is_empty() {
            self.check_can_create(me, &req.spec)?;
            let folder = self.check_folder(req.spec.folder_id)?;
            for ch in &mut to_create {
                ch.folder_id = folder;
            }
        }
        // Authorization for existing channels.
        let mut authorized: Vec<&Channel> = Vec::new();
        for ch in existing {
            if self.can_subscribe_self(me, ch)
                && !(ch.invite_only && me.is_guest() && !ch.is_subscribed(me.id))
            {
                authorized.push(ch);
            } else {
                out.unauthorized.push(ch.name.clone());
            }
        }
        if !out.unauthorized.is_empty() && req.authorization_errors_fatal {
            return Err(ApiError::bad_request(format!(
                "Unable to access channel ({}).",
                out.unauthorized.join(", ")
            )));
        }
        if subscribing_others {
            // New channels are the creator's to fill (`add_subscriptions_backend`).
            for ch in &authorized {
                if !self.can_subscribe_others(me, ch) {
                    return Err(insufficient_permission());
                }
            }
        }
        // Decide.
        let mut taken = HashMap::new();
        let mut subs = Vec::new();
        // The first item of each name decides its requested color.
        let mut requested: HashMap<String, Option<String>> = HashMap::new();
        for i in &req.items {
            requested
                .entry(i.name.trim().to_lowercase())
                .or_insert_with(|| i.color.clone().filter(|c| is_hex_color(c)));
        }
        let color_of =
            |item_name: &str| requested.get(&item_name.to_lowercase()).cloned().flatten();
        let all: Vec<(ChannelId, String, bool)> = authorized
            .iter()
            .map(|c| (c.id, c.name.clone(), false))
            .chain(to_create.iter().map(|c| (c.id, c.name.clone(), true)))
            .collect();
        for &user in &targets {
            for (id, name, new) in &all {
                let already = !*new && self.channels.get(id).is_some_and(|c| c.is_subscribed(user));
                if already {
                    out.already_subscribed
                        .entry(user)
                        .or_default()
                        .push(name.clone());
                    continue;
                }
                let color = match color_of(name) {
                    Some(c) if user == me.id => {
                        self.take_color(user, &c, &mut taken);
                        c
                    }
                    _ => self.next_color(user, &mut taken),
                };
                subs.push(NewSubscription {
                    channel_id: *id,
                    user_id: user,
                    color,
                });
                out.subscribed.entry(user).or_default().push(name.clone());
            }
        }
        for ch in to_create {
            out.created.push(ch.id);
            let id = ch.id;
            changes.push(Change::Channel(ChannelChange::ChannelCreated(Box::new(ch))));
            if req.spec.is_default_stream {
                changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
                    channel_id: id,
                    is_default: true,
                }));
            }
        }
        if !subs.is_empty() {
            changes.push(Change::Channel(ChannelChange::Subscribed { subs }));
        }
        Ok(Decided::new(changes, out))
    }

    /// `POST /channels/create`: one new channel, 409 if the name is taken. Guests are
    /// refused; `subscribers` and the group settings are looked up first, as Zulip
    /// reads them. Answers the new channel's id.
    pub fn decide_create_channel(
        &self,
        me: &User,
        q: CreateChannel,
        cx: &mut Cx,
    ) -> ApiResult<Decided<ChannelId>> {
        require_non_guest(me)?;
        let subscribers = match &q.subscribers {
            None => vec![me.id],
            Some(p) => self.resolve_principals(p)?,
        };
        let spec = q.spec;
        let settings = self.resolve_channel_settings(&spec.settings)?;
        let name = check_channel_name(&q.name)?;
        if let Some(ch) = self.channel_by_name(&name) {
            return Err(channel_exists(&ch.name));
        }
        let description = check_channel_description(&q.description)?;
        self.check_can_create(me, &spec)?;
        if let Some(p) = spec.topics_policy {
            self.check_set_topics_policy(me, p, None)?;
        }
        if subscribers.iter().any(|s| *s != me.id) && !SystemGroup::Members.includes_role(me.role) {
            return Err(insufficient_permission());
        }
        let folder = self.check_folder(spec.folder_id)?;
        let id = self.next_channel_id;
        let mut ch = self.new_channel(id, name, description, &spec, Some(me.id), cx.now_secs());
        ch.settings.extend(settings);
        ch.folder_id = folder;
        let mut changes = vec![Change::Channel(ChannelChange::ChannelCreated(Box::new(ch)))];
        if spec.is_default_stream {
            changes.push(Change::Channel(ChannelChange::DefaultChannelSet {
                channel_id: id,
                is_default: true,
            }));
        }
        let mut taken = HashMap::new();
        let mut subs = Vec::new();
        let mut seen = BTreeSet::new();
        for user in subscribers {
            if !seen.insert(user) {
                continue;
            }
            let color = self.next_color(user, &mut taken);
            subs.push(NewSubscription {
                channel_id: id,
                user_id: user,
                color,
            });
        }
        if !subs.is_empty() {
            changes.push(Change::Channel(ChannelChange::Subscribed { subs }));
        }
        Ok(Decided::new(changes, id))
    }

    /// Subscriptions of a new user to the default channels (`POST /users`).
    pub fn default_channel_subscriptions(&self, user: UserId) -> Option<Change> {
        let ids: Vec<ChannelId> = self.default_channels.iter().copied().collect();
        self.new_user_subscriptions(user, &ids)
    }

    /// Subscriptions of a new user to these channels (archived ones skipped).
    pub fn new_user_subscriptions(&self, user: UserId, ids: &[ChannelId]) -> Option<Change> {
        let mut taken = HashMap::new();
        let subs: Vec<NewSubscription> = ids
            .iter()
            .filter_map(|id| self.channels.get(id))
            .filter(|ch| !ch.is_archived)
            .map(|ch| {
                let color = self.next_color(user, &mut taken);
                NewSubscription {
                    channel_id: ch.id,
                    user_id: user,
                    color,
                }
            })
            .collect();
        (!subs.is_empty()).then_some(Change::Channel(ChannelChange::Subscribed { subs }))
    }

    // ---- unsubscribe (seed 4.5) ---------------------------------------------

    /// Zulip's `principals: Json[list[str] | list[int]]` in pydantic's strict mode: a
    /// list of strings or a list of integers; otherwise the first error is the
    /// `list[str]` member's.
    pub fn check_principals_type(principals: &Value) -> ApiResult<()> {
        let Some(list) = principals.as_array() else {
            return Err(ApiError::bad_request(
                "principals[\"list[str]\"] is not a list",
            ));
        };
        if list.iter().all(Value::is_string) || list.iter().all(|v| v.is_i64() || v.is_u64()) {
            return Ok(());
        }
        match list.iter().position(|v| !v.is_string()) {
            Some(i) => Err(ApiError::bad_request(format!(
                "principals[\"list[str]\"][{i}] is not a string"
            ))),
            None => Ok(()),
        }
    }

    /// Resolves `principals` (API emails or user ids) to active users: "No such user".
    pub fn resolve_principals(&self, principals: &[Principal]) -> ApiResult<Vec<UserId>> {
        let no_such = || ApiError::bad_request("No such user");
        let users = principals
            .iter()
            .map(|p| {
                self.principal_user(p)
                    .filter(|u| u.is_active)
                    .ok_or_else(no_such)
            })
            .collect::<ApiResult<Vec<&User>>>()?;
        Ok(distinct_ids(users))
    }

    /// The user a principal names (an API email or an id), active or not.
    fn principal_user(&self, p: &Principal) -> Option<&User> {
        match p {
            Principal::Email(email) => self.user_by_api_email(email.trim()),
            Principal::Id(id) => id.and_then(|id| self.user(id)),
        }
    }

    /// Zulip's `bulk_principals_to_user_profiles` for unsubscribing: every principal
    /// must name a user ("No such user"), and only then is each checked by
    /// `access_user_common` with bots allowed and deactivated users refused ("User is
    /// deactivated").
    pub fn resolve_unsubscribe_principals(
        &self,
        principals: &[Principal],
    ) -> ApiResult<Vec<UserId>> {
        let users = principals
            .iter()
            .map(|p| {
                self.principal_user(p)
                    .ok_or_else(|| ApiError::bad_request("No such user"))
            })
            .collect::<ApiResult<Vec<&User>>>()?;
        if users.iter().any(|u| !u.is_active) {
            return Err(ApiError::bad_request("User is deactivated"));
        }
        Ok(distinct_ids(users))
    }

    /// `DELETE /users/me/subscriptions` (seed 4.5). Answers the `removed` /
    /// `not_removed` name lists.
    pub fn decide_unsubscribe(
        &self,
        me: &User,
        q: Unsubscribe,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<Unsubscribed>> {
        let principals = q
            .principals
            .as_deref()
            .map(|p| self.resolve_unsubscribe_principals(p))
            .transpose()?;
        let names = &q.names;
        // Zulip tests `if principals:`: an empty list means the caller too.
        let targets = match principals {
            Some(p) if !p.is_empty() => p,
            _ => vec![me.id],
        };
        // Zulip's list_to_streams checks every name before looking any up.
        for raw in names {
            check_channel_name(raw)?;
        }
        let mut channels: Vec<&Channel> = Vec::new();
        for raw in names {
            let name = raw.trim();
            let ch = self.channel_by_name(name).ok_or_else(|| {
                ApiError::new(
                    400,
                    ErrorCode::StreamDoesNotExist,
                    format!("Channel '{name}' does not exist"),
                )
                .with("stream", name)
            })?;
            if !channels.iter().any(|c| c.id == ch.id) {
                channels.push(ch);
            }
        }
        for &t in &targets {
            if t == me.id {
                continue;
            }
            let target = self.users.get(&t);
            for ch in &channels {
                let own_bot = target.is_some_and(|b| b.is_bot() && b.bot_owner_id == Some(me.id))
                    && self.can_access_channel(me, ch);
                let via_group = self.can_access_channel(me, ch)
                    && self.in_setting(me, &ch.setting(ChannelSetting::CanRemoveSubscribers));
                // Channel administrators (the creator, by default) may remove anyone.
                let administers = self.can_administer_channel(me, ch);
                if !(me.is_admin() || own_bot || via_group || administers) {
                    return Err(insufficient_permission());
                }
            }
        }
        let (mut removed, mut not_removed, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for &t in &targets {
            for ch in &channels {
                if ch.is_subscribed(t) {
                    removed.push(ch.name.clone());
                    pairs.push((ch.id, t));
                } else {
                    not_removed.push(ch.name.clone());
                }
            }
        }
        let changes = if pairs.is_empty() {
            Vec::new()
        } else {
            vec![Change::Channel(ChannelChange::Unsubscribed { subs: pairs })]
        };
        Ok(Decided::new(
            changes,
            Unsubscribed {
                removed,
                not_removed,
            },
        ))
    }

    // ---- both at once ----------------------------------------------------------

    /// `PATCH /users/me/subscriptions`: Zulip's `update_subscriptions_backend`, which
    /// runs `add_subscriptions_backend` (guests refused even with nothing to add) then
    /// `remove_subscriptions_backend` for the caller, in one transaction. The removal
    /// sees what the addition did: a channel it created or joined can be left again.
    pub fn decide_update_subscriptions(
        &self,
        me: &User,
        q: UpdateSubscriptions,
        cx: &mut Cx,
    ) -> ApiResult<Decided<UpdatedSubscriptions>> {
        if q.add.is_empty() && q.delete.is_empty() {
            return Err(ApiError::bad_request(
                "Nothing to do. Specify at least one of \"add\" or \"delete\".",
            ));
        }
        let add = SubscribeRequest {
            items: q.add,
            principals: None,
            spec: ChannelSpec::default(),
            authorization_errors_fatal: true,
        };
        let Decided {
            mut changes,
            answer: added,
        } = self.decide_subscribe(me, add, cx)?;
        // What the addition made: new channels, and the caller's new subscriptions.
        let mut created: Vec<&Channel> = Vec::new();
        let mut joined: BTreeSet<ChannelId> = BTreeSet::new();
        for c in &changes {
            match c {
                Change::Channel(ChannelChange::ChannelCreated(ch)) => created.push(ch),
                Change::Channel(ChannelChange::Subscribed { subs }) => joined.extend(
                    subs.iter()
                        .filter(|s| s.user_id == me.id)
                        .map(|s| s.channel_id),
                ),
                _ => {}
            }
        }
        for raw in &q.delete {
            check_channel_name(raw)?;
        }
        let mut leave: Vec<(ChannelId, String, bool)> = Vec::new();
        for raw in &q.delete {
            let name = raw.trim();
            let found = self
                .channel_by_name(name)
                .map(|ch| (ch.id, ch.name.clone(), ch.is_subscribed(me.id)))
                .or_else(|| {
                    created
                        .iter()
                        .find(|ch| ch.name.to_lowercase() == name.to_lowercase())
                        .map(|ch| (ch.id, ch.name.clone(), false))
                });
            let Some((id, name, subscribed)) = found else {
                return Err(ApiError::new(
                    400,
                    ErrorCode::StreamDoesNotExist,
                    format!("Channel '{name}' does not exist"),
                )
                .with("stream", name));
            };
            if !leave.iter().any(|(c, _, _)| *c == id) {
                leave.push((id, name, subscribed || joined.contains(&id)));
            }
        }
        let mut removed = Unsubscribed::default();
        let mut pairs = Vec::new();
        for (id, name, subscribed) in leave {
            if subscribed {
                removed.removed.push(name);
                pairs.push((id, me.id));
            } else {
                removed.not_removed.push(name);
            }
        }
        if !pairs.is_empty() {
            changes.push(Change::Channel(ChannelChange::Unsubscribed { subs: pairs }));
        }
        Ok(Decided::new(
            changes,
            UpdatedSubscriptions { added, removed },
        ))
    }

    // ---- subscription properties (seed 4.1) ---------------------------------

    /// `POST /users/me/subscriptions/properties` (the list validated on the worker):
    /// checks each item's channel in order.
    pub fn decide_subscription_properties(
        &self,
        me: &User,
        q: SubscriptionProperties,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let mut changes = Vec::new();
        for (stream_id, property) in q.items {
            let ch = self.access_channel(me, stream_id)?;
            if !ch.is_subscribed(me.id) {
                return Err(ApiError::bad_request(format!(
                    "Not subscribed to channel ID {stream_id}"
                )));
            }
            changes.push(Change::Channel(ChannelChange::SubscriptionPropertySet {
                user_id: me.id,
                channel_id: ch.id,
                property,
            }));
        }
        Ok(Decided::changes(changes))
    }
}

/// Zulip's `require_non_guest_user`: guests are refused before any parameter is read.
pub fn require_non_guest(me: &User) -> ApiResult<()> {
    if me.is_guest() {
        return Err(ApiError::bad_request("Not allowed for guest users"));
    }
    Ok(())
}

/// The users' ids in their order, each once.
fn distinct_ids(users: Vec<&User>) -> Vec<UserId> {
    let mut seen = std::collections::BTreeSet::new();
    users
        .into_iter()
        .map(|u| u.id)
        .filter(|id| seen.insert(*id))
        .collect()
}

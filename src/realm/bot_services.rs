//! Outgoing-webhook bots: their service (where a triggering message is POSTed), the
//! outbox of deliveries the server has promised, and the bots' key-value storage
//! (`/bot_storage`, which `zulip_bots`' `StateHandler` uses).
//!
//! A delivery is a promise made in the same decision as the message that triggers it
//! (`DeliveryQueued` beside `Sent`), so it is exactly as durable as the message. The
//! delivery worker (`outbox/`) reads the published outbox, POSTs off the realm actor,
//! and records the outcome as another decision (`decide_delivery_outcome`): the bot's
//! answer, a failure notice or the owner's notice, and `DeliveryDone`, together. A
//! `kill -9` before that decision leaves the delivery pending, and it is made again
//! after the restart: at least once.
//!
//! Zulip's rule (`get_service_bot_events`): a channel message that mentions an active
//! outgoing-webhook bot triggers it (`mention`), a direct message with the bot among
//! its recipients triggers it (`direct_message`); messages sent by bots trigger nothing.
//!
//! | Change | Events | To |
//! |--------|--------|----|
//! | `ServiceSet` of an existing bot | `realm_bot` `update` `{bot: {user_id, services}}` | administrators and the bot's owner |
//! | `ServiceSet` at creation, `Storage*`, `Delivery*` | none | - |

use std::collections::BTreeMap;

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::messages::send::{sent, SendRequest};
use super::messages::{Message, MessageId, Recipient};
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// Zulip's `bot_type` of outgoing-webhook bots.
pub const OUTGOING_WEBHOOK_BOT: u8 = 3;
/// Zulip's `bot_type` of embedded bots (not enabled on this server).
pub const EMBEDDED_BOT: u8 = 4;
/// Zulip's `Service.GENERIC`: Zulip's own payload.
pub const GENERIC_INTERFACE: u8 = 1;
/// Zulip's `Service.SLACK`: Slack's outgoing-webhook form body.
pub const SLACK_INTERFACE: u8 = 2;
/// Zulip's `USER_STATE_SIZE_LIMIT`: characters of keys and values one bot may store.
pub const STORAGE_LIMIT: usize = 10_000_000;
/// Zulip's `MAX_REQUEST_RETRIES`: failed attempts (timeouts, refused connections, 5xx)
/// retried before the delivery is given up.
pub const MAX_RETRIES: u32 = 3;

/// An outgoing-webhook bot's service (Zulip's `Service` row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutgoingService {
    /// Zulip's `Service.name` (the bot's short name unless given).
    pub name: String,
    /// The URL deliveries are POSTed to (`payload_url`).
    pub base_url: String,
    /// `GENERIC_INTERFACE` or `SLACK_INTERFACE`.
    pub interface: u8,
    /// Sent with every delivery so the receiver can tell it comes from this server.
    pub token: String,
}

impl OutgoingService {
    /// The service as `realm_bots` and `realm_bot` events show it.
    pub fn json(&self) -> Value {
        json!({"base_url": self.base_url, "interface": self.interface, "token": self.token})
    }
}

/// What made a message trigger a bot (the `trigger` of the payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Trigger {
    Mention,
    DirectMessage,
}

impl Trigger {
    /// Zulip's name of the trigger.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Mention => "mention",
            Trigger::DirectMessage => "direct_message",
        }
    }
}

/// One promised delivery of a message to a bot's service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: u64,
    pub bot_id: UserId,
    pub message_id: MessageId,
    pub trigger: Trigger,
    /// Failed attempts so far (each recorded by `DeliveryAttempted`).
    pub attempts: u32,
    /// When it was promised (UNIX seconds).
    pub queued_at: i64,
}

/// The deliveries promised and not yet done.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Outbox {
    pub next_id: u64,
    pub pending: OrdMap<u64, Delivery>,
}

/// The realm's outgoing-webhook state: services, storage, outbox. Stored in the
/// snapshot's `bot_services` section (`storage::codec::sections`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BotServiceState {
    pub services: OrdMap<UserId, OutgoingService>,
    /// Each bot's `/bot_storage` entries (any user may keep some; Zulip allows it).
    pub storage: OrdMap<UserId, BTreeMap<String, String>>,
    pub outbox: Outbox,
}

/// Facts about bots' services, storage and deliveries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum BotChange {
    /// A bot's service was created (at the bot's creation) or edited.
    ServiceSet {
        bot_id: UserId,
        service: OutgoingService,
        created: bool,
    },
    /// Storage entries were set (replacing values of the same keys).
    StoragePut {
        user_id: UserId,
        entries: Vec<(String, String)>,
    },
    /// Storage entries were removed (every key existed).
    StorageRemoved { user_id: UserId, keys: Vec<String> },
    /// A delivery was promised (in the triggering message's decision).
    DeliveryQueued(Delivery),
    /// An attempt failed and will be retried.
    DeliveryAttempted { id: u64 },
    /// The delivery is over (answered, failed for good, or no longer wanted).
    DeliveryDone { id: u64 },
}

/// What one delivery attempt came to, decided on the worker.
#[derive(Debug)]
pub enum DeliveryOutcome {
    /// Worth another try (a timeout, a refused connection, a 5xx) and retries remain.
    Retry,
    /// Over: the bot's answer and notices to send (each as the bot), then done.
    Done {
        /// The bot's answer or a `Failure! ...` notice, in the triggering conversation.
        reply: Option<Box<SendRequest>>,
        /// A direct message to the bot's owner about a failure.
        owner_notice: Option<Box<SendRequest>>,
    },
}

/// The worker's report on one delivery.
#[derive(Debug)]
pub struct DeliveryReport {
    pub id: u64,
    pub outcome: DeliveryOutcome,
}

/// `/bot_storage` writes.
#[derive(Debug, Clone)]
pub enum StorageRequest {
    Put(Vec<(String, String)>),
    /// `None`: every key.
    Remove(Option<Vec<String>>),
}

impl Realm {
    pub(super) fn apply_bot_change(&mut self, c: &BotChange) {
        let state = &mut self.bot_services;
        match c {
            BotChange::ServiceSet {
                bot_id, service, ..
            } => {
                state.services.insert(*bot_id, service.clone());
            }
            BotChange::StoragePut { user_id, entries } => {
                let map = state.storage.entry(*user_id).or_default();
                for (k, v) in entries {
                    map.insert(k.clone(), v.clone());
                }
            }
            BotChange::StorageRemoved { user_id, keys } => {
                if let Some(map) = state.storage.get_mut(user_id) {
                    for k in keys {
                        map.remove(k);
                    }
                    if map.is_empty() {
                        state.storage.remove(user_id);
                    }
                }
            }
            BotChange::DeliveryQueued(d) => {
                state.outbox.next_id = state.outbox.next_id.max(d.id + 1);
                state.outbox.pending.insert(d.id, d.clone());
            }
            BotChange::DeliveryAttempted { id } => {
                if let Some(d) = state.outbox.pending.get_mut(id) {
                    d.attempts += 1;
                }
            }
            BotChange::DeliveryDone { id } => {
                state.outbox.pending.remove(id);
            }
        }
    }

    /// `realm_bot` `update` with the bot's services when an existing bot's service
    /// changed (Zulip's `do_update_outgoing_webhook_service`).
    pub(super) fn bot_change_events(&self, c: &BotChange) -> Vec<super::events::Event> {
        let BotChange::ServiceSet {
            bot_id,
            created: false,
            ..
        } = c
        else {
            return Vec::new();
        };
        let Some(bot) = self.user(*bot_id) else {
            return Vec::new();
        };
        let ids: Vec<UserId> = self
            .users
            .values()
            .filter(|u| u.is_active && (u.is_admin() || Some(u.id) == bot.bot_owner_id))
            .map(|u| u.id)
            .collect();
        vec![super::events::Event::new(
            json!({"type": "realm_bot", "op": "update",
                   "bot": {"user_id": bot_id, "services": self.bot_services_json(*bot_id)}}),
            super::events::Audience::users(ids),
        )]
    }

    /// Zulip's `message_link_url`: the message in the web client.
    pub fn message_link(&self, m: &Message, realm_url: &str) -> String {
        match &m.recipient {
            Recipient::Channel { channel_id, topic } => {
                let name = self
                    .channel(*channel_id)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                super::messages::moves::channel_near_link(
                    realm_url,
                    *channel_id,
                    &name,
                    topic,
                    m.id,
                )
            }
            Recipient::Direct { users } => {
                let ids: Vec<String> = users.iter().map(u64::to_string).collect();
                let kind = if users.len() > 2 { "group" } else { "dm" };
                format!(
                    "{realm_url}/#narrow/dm/{}-{kind}/near/{}",
                    ids.join(","),
                    m.id
                )
            }
        }
    }

    /// A bot's `services` (one element for an outgoing-webhook bot, else none).
    pub fn bot_services_json(&self, bot_id: UserId) -> Value {
        match self.bot_services.services.get(&bot_id) {
            Some(s) => json!([s.json()]),
            None => json!([]),
        }
    }

    /// The active outgoing-webhook bot `id` and its service, if it is one.
    pub fn service_bot(&self, id: UserId) -> Option<(&User, &OutgoingService)> {
        let bot = self
            .user(id)
            .filter(|u| u.is_active && u.bot_type == Some(OUTGOING_WEBHOOK_BOT))?;
        Some((bot, self.bot_services.services.get(&id)?))
    }

    /// The deliveries a new message promises (Zulip's `get_service_bot_events`):
    /// `mentioned` are the users its rendering mentions (not silently, whether or not
    /// they are subscribed). Their ids start at `next`, which is moved past them (a
    /// decision that sends several messages numbers all their deliveries).
    pub(crate) fn service_deliveries(
        &self,
        m: &Message,
        sender: &User,
        mentioned: &[UserId],
        now: i64,
        next: &mut u64,
    ) -> Vec<Change> {
        if sender.is_bot() {
            return Vec::new();
        }
        let (candidates, trigger): (Vec<UserId>, Trigger) = match &m.recipient {
            Recipient::Channel { .. } => (mentioned.to_vec(), Trigger::Mention),
            Recipient::Direct { users } => (users.clone(), Trigger::DirectMessage),
        };
        let mut seen = std::collections::BTreeSet::new();
        candidates
            .into_iter()
            .filter(|id| *id != sender.id && seen.insert(*id))
            .filter(|id| self.service_bot(*id).is_some())
            .map(|bot_id| {
                let d = Delivery {
                    id: *next,
                    bot_id,
                    message_id: m.id,
                    trigger,
                    attempts: 0,
                    queued_at: now,
                };
                *next += 1;
                Change::Bot(BotChange::DeliveryQueued(d))
            })
            .collect()
    }

    /// A failed attempt of a pending delivery (a system write of the worker).
    pub fn decide_delivery_attempted(&self, id: u64, _cx: &mut Cx) -> ApiResult<Decided<()>> {
        if !self.bot_services.outbox.pending.contains_key(&id) {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Bot(
            BotChange::DeliveryAttempted { id },
        )]))
    }

    /// The end of a delivery (a system write of the worker): the bot's answer and the
    /// notices, sent as the bot, and `DeliveryDone`, in one decision. A delivery no
    /// longer pending (done by an earlier attempt) changes nothing; a notice that can
    /// no longer be sent (the bot deactivated, the channel gone) is dropped.
    pub fn decide_delivery_outcome(
        &self,
        report: DeliveryReport,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let Some(d) = self.bot_services.outbox.pending.get(&report.id) else {
            return Ok(Decided::changes(Vec::new()));
        };
        let mut changes = Vec::new();
        match report.outcome {
            DeliveryOutcome::Retry => {
                changes.push(Change::Bot(BotChange::DeliveryAttempted { id: d.id }));
            }
            DeliveryOutcome::Done {
                reply,
                owner_notice,
            } => {
                let bot = self.user(d.bot_id).filter(|u| u.is_active);
                let mut next_id = self.messages.next_id;
                let mut next_mail = self.missed_mail.next_id;
                for req in [reply, owner_notice].into_iter().flatten().map(|r| *r) {
                    let Some(bot) = bot else { break };
                    match self.service_reply_row(bot, req, next_id, cx) {
                        Ok(m) => {
                            next_id += 1;
                            let mails = self.missed_mail_for(&m, cx.now_secs(), &mut next_mail);
                            changes.push(sent(m));
                            changes.extend(mails);
                        }
                        Err(e) => tracing::info!(
                            "the answer of bot {} to delivery {} is not sent: {}",
                            bot.id,
                            d.id,
                            e.msg
                        ),
                    }
                }
                changes.push(Change::Bot(BotChange::DeliveryDone { id: d.id }));
            }
        }
        Ok(Decided::changes(changes))
    }

    /// A message from a service bot in reply to a delivery: into the triggering
    /// channel without the bot's access to it being checked (Zulip's
    /// `send_response_message` sends with `skip_stream_access_check`), or a direct
    /// message as any send.
    fn service_reply_row(
        &self,
        bot: &User,
        req: SendRequest,
        id: MessageId,
        cx: &mut Cx,
    ) -> ApiResult<Message> {
        use super::messages::send::{Addressee, ChannelRef};
        let recipient = match &req.to {
            Addressee::Channel {
                channel: ChannelRef::Id(cid),
                topic,
            } => {
                let ch = u64::try_from(*cid)
                    .ok()
                    .and_then(|c| self.channel(c))
                    .filter(|c| !c.is_archived)
                    .ok_or_else(|| ApiError::bad_request("Channel does not exist"))?;
                Recipient::Channel {
                    channel_id: ch.id,
                    topic: topic.clone(),
                }
            }
            _ => {
                let rows = cx.rows()?;
                let mut m = self.send_row(bot, req, cx, rows)?;
                m.id = id;
                return Ok(m);
            }
        };
        // The answer is built read by the bot (`read_by_sender`), as every send of it.
        Ok(self.message_row(id, bot.id, recipient, req, cx.now_secs()))
    }

    /// `GET /bot_storage`: the caller's entries for `keys` (every entry when none);
    /// a missing key is Zulip's "Key does not exist."
    pub fn view_bot_storage(
        &self,
        me: &User,
        keys: Option<&[String]>,
    ) -> ApiResult<BTreeMap<String, String>> {
        let empty = BTreeMap::new();
        let mine = self.bot_services.storage.get(&me.id).unwrap_or(&empty);
        match keys {
            None | Some([]) => Ok(mine.clone()),
            Some(keys) => keys
                .iter()
                .map(|k| {
                    mine.get(k)
                        .map(|v| (k.clone(), v.clone()))
                        .ok_or_else(|| ApiError::bad_request("Key does not exist."))
                })
                .collect(),
        }
    }

    /// `PUT /bot_storage`, `DELETE /bot_storage`: Zulip's `set_bot_storage` (the size
    /// limit counts characters of keys and values) and `remove_bot_storage`.
    pub fn decide_bot_storage(
        &self,
        me: &User,
        q: StorageRequest,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let empty = BTreeMap::new();
        let mine = self.bot_services.storage.get(&me.id).unwrap_or(&empty);
        let size = |k: &str, v: &str| k.chars().count() + v.chars().count();
        match q {
            StorageRequest::Put(entries) => {
                let mut total: usize = mine.iter().map(|(k, v)| size(k, v)).sum();
                let mut after = mine.clone();
                for (k, v) in &entries {
                    if let Some(old) = after.insert(k.clone(), v.clone()) {
                        total -= size(k, &old);
                    }
                    total += size(k, v);
                }
                if total > STORAGE_LIMIT {
                    return Err(ApiError::bad_request(format!(
                        "Request exceeds storage limit by {} characters. The limit is {} characters.",
                        total - STORAGE_LIMIT,
                        STORAGE_LIMIT
                    )));
                }
                if entries.is_empty() {
                    return Ok(Decided::changes(Vec::new()));
                }
                Ok(Decided::changes(vec![Change::Bot(BotChange::StoragePut {
                    user_id: me.id,
                    entries,
                })]))
            }
            StorageRequest::Remove(keys) => {
                let keys = match keys {
                    Some(k) if !k.is_empty() => k,
                    _ => mine.keys().cloned().collect(),
                };
                if keys.iter().any(|k| !mine.contains_key(k)) {
                    return Err(ApiError::bad_request("Key does not exist."));
                }
                if keys.is_empty() {
                    return Ok(Decided::changes(Vec::new()));
                }
                Ok(Decided::changes(vec![Change::Bot(
                    BotChange::StorageRemoved {
                        user_id: me.id,
                        keys,
                    },
                )]))
            }
        }
    }
}

/// Zulip's `check_valid_interface_type`.
pub fn check_interface(interface: i64) -> ApiResult<u8> {
    match u8::try_from(interface) {
        Ok(i @ (GENERIC_INTERFACE | SLACK_INTERFACE)) => Ok(i),
        _ => Err(ApiError::bad_request("Invalid interface type")),
    }
}

/// Zulip's `check_url` of a service's URL: an absolute http(s) URL with a host.
pub fn check_payload_url(name: &str, raw: &str) -> ApiResult<String> {
    let ok = url::Url::parse(raw)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    match ok {
        Some(_) => Ok(raw.to_owned()),
        None => Err(ApiError::bad_request(format!("{name} is not a URL"))),
    }
}

/// `PATCH /bots/{bot_id}`, parsed on the worker.
#[derive(Debug, Clone)]
pub struct UpdateBot {
    pub bot_id: i64,
    pub full_name: Option<String>,
    /// `service_payload_url` (checked) with `service_interface`.
    pub service: Option<(String, i64)>,
    /// `service_interface` as given (1 when absent).
    pub interface: i64,
}

/// What `PATCH /bots/{bot_id}` answers about the bot after the update.
#[derive(Debug, Clone)]
pub struct UpdatedBot {
    pub full_name: String,
    pub email: String,
    pub avatar_version: u32,
    pub owner_email: Option<String>,
}

impl Realm {
    /// `PATCH /bots/{bot_id}`: Zulip's `patch_bot_backend` for the bot's name and its
    /// outgoing-webhook service (`access_bot_by_id`: the owner or an administrator).
    pub fn decide_update_bot(
        &self,
        me: &User,
        q: UpdateBot,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<UpdatedBot>> {
        self.require_member_or_admin(me)?;
        let bot = self.access_bot_for_admin(me, q.bot_id)?;
        let mut changes = Vec::new();
        let mut full_name = bot.full_name.clone();
        if let Some(raw) = &q.full_name {
            if bot.full_name != *raw && !raw.trim().is_empty() {
                full_name = super::users::check_full_name(raw)?;
                changes.push(Change::User(super::UserChange::FullNameChanged {
                    user_id: bot.id,
                    full_name: full_name.clone(),
                }));
            }
        }
        if let Some((url, interface)) = q.service {
            let interface = check_interface(interface)?;
            // Zulip's `do_update_outgoing_webhook_service` edits the bot's one service.
            if let Some(old) = self.bot_services.services.get(&bot.id) {
                changes.push(Change::Bot(BotChange::ServiceSet {
                    bot_id: bot.id,
                    service: OutgoingService {
                        base_url: url,
                        interface,
                        ..old.clone()
                    },
                    created: false,
                }));
            }
        }
        let owner_email = bot
            .bot_owner_id
            .and_then(|o| self.user(o))
            .map(|o| self.api_email(o));
        Ok(Decided::new(
            changes,
            UpdatedBot {
                full_name,
                email: bot.delivery_email.clone(),
                avatar_version: bot.avatar_version,
                owner_email,
            },
        ))
    }
}

/// How long a bot's owner is left alone after a notice about the bot's sends (Zulip's
/// `BOT_OWNER_STREAM_ALERT_WAITPERIOD`, one minute).
pub const OWNER_NOTICE_WAIT_SECS: u64 = 60;

/// A notice to a bot's owner about one of the bot's sends, from the Notification Bot,
/// rendered on the worker.
#[derive(Debug, Clone)]
pub struct OwnerNotice {
    pub bot_id: UserId,
    pub content: String,
    pub rendered: String,
}

/// The notice's text when a bot sent to a channel that does not exist: `name` is the
/// channel as named (`None` when named by id `id`), in hearth's words.
pub fn missing_channel_notice(bot_email: &str, name: Option<&str>, id: i64) -> String {
    match name {
        Some(name) => format!(
            "Your bot `{bot_email}` sent a message to the channel #**{name}**, which does not \
             exist, so it was not sent. Create the channel, or change where the bot sends."
        ),
        None => format!(
            "Your bot `{bot_email}` sent a message to the channel with ID {id}, and there is no \
             such channel, so it was not sent."
        ),
    }
}

impl Realm {
    /// The Notification Bot's direct message to a bot's owner (Zulip's
    /// `send_rate_limited_pm_notification_to_bot_owner`; the caller keeps the rate).
    /// Nothing when the bot or its owner is gone or deactivated.
    pub fn decide_owner_notice(&self, q: OwnerNotice, cx: &mut Cx) -> ApiResult<Decided<()>> {
        use super::messages::moves::NOTIFICATION_BOT_ID;
        use super::messages::MessageChange;
        let owner = self
            .user(q.bot_id)
            .filter(|b| b.is_bot() && b.is_active)
            .and_then(|b| b.bot_owner_id)
            .and_then(|o| self.user(o))
            .filter(|o| o.is_active && !o.is_bot());
        let Some(owner) = owner else {
            return Ok(Decided::changes(Vec::new()));
        };
        let mut users = vec![owner.id, NOTIFICATION_BOT_ID];
        users.sort_unstable();
        let message = Message::internal(
            self.messages.next_id,
            NOTIFICATION_BOT_ID,
            Recipient::Direct { users },
            q.content,
            q.rendered,
            cx.now_secs(),
        );
        Ok(Decided::changes(vec![Change::Message(
            MessageChange::Notice {
                message: Box::new(message),
                read_by: NOTIFICATION_BOT_ID,
                all_read: false,
            },
        )]))
    }
}

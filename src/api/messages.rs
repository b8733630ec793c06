//! Messages: send, fetch, flags, topics.
//!
//! Sends are parsed and rendered on the worker against the published version; the
//! realm actor only checks the recipient, hands out the id and commits. Fetches walk
//! the message store on the blocking pool; the actor never sees them.

use actix_web::web;
use serde_json::{json, Map, Value};

use super::params::{path_int, Params};
use super::{success, with_ignored, ApiRequest, ApiResponse, CallOpts, Ctx, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::events::{Audience, Event};
use crate::realm::messages::edit::{self, EditRequest, Propagate};
use crate::realm::messages::fetch::{self, can_read, MessageRows, Narrow, Source};
use crate::realm::messages::json::MessageView;
use crate::realm::messages::moves;
use crate::realm::messages::scheduled::{is_channel_type, ScheduleRequest};
use crate::realm::messages::send::{
    self, normalize_body, normalize_topic, parse_channel_to, parse_direct_to, Addressee,
    ChannelRef, SendRequest,
};
use crate::realm::messages::{
    flags, MessageChange, MessageId, Recipient, TopicMax, Wildcard, MAX_MESSAGES_PER_FETCH,
    MAX_UNREAD_MESSAGES,
};
use crate::realm::{Change, Realm, User};
use crate::storage::messages::MessageStore;

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// The topic parameter (`topic`, or its old name `subject`).
fn topic_param(p: &Params) -> Option<String> {
    p.opt_str("topic").or_else(|| p.opt_str("subject"))
}

fn message_view(p: &Params) -> ApiResult<MessageView> {
    Ok(MessageView {
        apply_markdown: p.bool_or("apply_markdown", true)?,
        client_gravatar: p.bool_or("client_gravatar", true)?,
        allow_empty_topic_name: p.bool_or("allow_empty_topic_name", false)?,
    })
}

/// Parses a send as Zulip's view and `Addressee.legacy_build` do, then normalizes the
/// content (Zulip's order).
fn parse_send(p: &Params, realm: &Realm, client: &str) -> ApiResult<(Addressee, String, bool)> {
    let content = p.str("content")?;
    let kind = p.str("type")?;
    let read_by_sender = p.opt_bool("read_by_sender")?;
    let to = p.opt_str("to");
    let topic = topic_param(p);
    let addressee = match kind.as_str() {
        "stream" | "channel" => {
            let channel = match &to {
                Some(raw) => parse_channel_to(raw)?,
                None => return Err(ApiError::bad_request("Missing channel")),
            };
            let Some(topic) = topic else {
                return Err(ApiError::bad_request("Missing topic"));
            };
            Addressee::Channel {
                channel,
                topic: normalize_topic(realm, &topic)?,
            }
        }
        "private" | "direct" => {
            let (ids, emails) = match &to {
                Some(raw) => parse_direct_to(raw)?,
                None => (Vec::new(), Vec::new()),
            };
            if ids.is_empty() && emails.is_empty() {
                return Err(ApiError::bad_request("Message must have recipients"));
            }
            // `Addressee.legacy_build` looks the users up before the content is read.
            realm.lookup_direct_recipients(&ids, &emails)?;
            Addressee::Direct { ids, emails }
        }
        _ => return Err(ApiError::bad_request("Invalid type")),
    };
    let content = normalize_body(&content)?;
    let read_by_sender = read_by_sender.unwrap_or_else(|| default_read_by_sender(client));
    Ok((addressee, content, read_by_sender))
}

/// Zulip's `Client.default_read_by_sender`: messages sent from a full Zulip UI are read
/// by their sender; messages sent through the API by integrations are not.
fn default_read_by_sender(client: &str) -> bool {
    let c = client.to_lowercase();
    [
        "zulipandroid",
        "zulipios",
        "zulipdesktop",
        "zulipmobile",
        "zulipelectron",
        "zulipterminal",
        "snipe",
        "website",
        "ios",
        "android",
    ]
    .contains(&c.as_str())
        || c.contains("desktop app")
}

/// # `POST /messages`
pub async fn send_message(req: ApiRequest) -> ApiResponse {
    let version = req.hub.current();
    let client = req.client.clone();
    let store = req.message_store().await?;
    let reader = store.clone();
    req.write_legacy(
        CallOpts::USER,
        |p| {
            let (to, content, read_by_sender) = parse_send(p, &version, &client)?;
            // Rendered here against the published version: mentions and channel
            // links resolve as the sender saw the realm.
            let rendered = version.render_message(&content);
            // A topic wildcard mention's reach is read here, off the actor.
            let mut topic_participants = Vec::new();
            if let (Wildcard::Topic, Addressee::Channel { channel, topic }) =
                (rendered.wildcard, &to)
            {
                let ch = match channel {
                    ChannelRef::Id(id) => {
                        u64::try_from(*id).ok().and_then(|id| version.channel(id))
                    }
                    ChannelRef::Name(name) => version.channel_by_name(name.trim()),
                };
                if let Some(ch) = ch {
                    topic_participants = send::topic_participants(
                        &reader,
                        ch.id,
                        topic,
                        version.messages.max_visible(),
                    )?;
                }
            }
            Ok(SendRequest {
                to,
                content,
                rendered,
                client,
                read_by_sender,
                topic_participants,
            })
        },
        move |c: &mut Ctx<'_>, r: SendRequest| {
            let me = c.me()?;
            let m = c.realm.decide_send(me, r, c.cx, &store)?;
            let body = one("id", m.id.into());
            let claims = claim_uploads(&store, c.realm, me, &m, &m.content);
            let mut changes = vec![send::sent(m)];
            changes.extend(claims);
            Ok(Outcome::write(changes, body))
        },
    )
    .await
    .map(success)
}

/// Zulip's `do_claim_attachments`: the uploads `content` links that the sender may
/// read now belong to message `m` too.
fn claim_uploads(
    store: &MessageStore,
    realm: &Realm,
    me: &User,
    m: &crate::realm::messages::Message,
    content: &str,
) -> Vec<Change> {
    let paths = crate::realm::attachments::upload_path_ids(content);
    if paths.is_empty() {
        return Vec::new();
    }
    realm.decide_claim_attachments(me, m.id, m.timestamp * 1000, &paths, &|u, id| {
        access_message(store, realm, u, id as i64).is_ok()
    })
}

/// The uploads `before` linked and `after` no longer does (Zulip's
/// `do_update_message` / `do_delete_messages` attachment bookkeeping): the release
/// changes, and the attachments left without any message.
fn release_uploads(
    realm: &Realm,
    message_id: MessageId,
    before: &str,
    after: &str,
    deleted: bool,
) -> (Vec<Change>, Vec<crate::realm::attachments::Attachment>) {
    let now: Vec<String> = crate::realm::attachments::upload_path_ids(after);
    let gone: Vec<String> = crate::realm::attachments::upload_path_ids(before)
        .into_iter()
        .filter(|p| !now.contains(p))
        .collect();
    let changes = realm.decide_release_attachments(message_id, &gone, deleted);
    let detached = gone
        .iter()
        .filter_map(|p| realm.attachment_by_path(p))
        .filter(|a| a.messages.len() == 1 && a.messages.contains_key(&message_id))
        .cloned()
        .collect();
    (changes, detached)
}

/// `num_before` / `num_after`: non-negative integers.
fn count_param(p: &Params, name: &str) -> ApiResult<usize> {
    match p.opt_int(name)? {
        None => Ok(0),
        Some(n) if n < 0 => Err(ApiError::bad_request(format!(
            "{name} is too small (minimum 0)"
        ))),
        Some(n) => Ok(n as usize),
    }
}

/// # `GET /messages`
pub async fn get_messages(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    req.read_large(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let anchor = p.opt_str("anchor");
        let use_first_unread = p.bool_or("use_first_unread_anchor", false)?;
        let num_before = count_param(p, "num_before")?;
        let num_after = count_param(p, "num_after")?;
        let include_anchor = p.bool_or("include_anchor", true)?;
        let view = message_view(p)?;
        let narrow = p.opt_json("narrow")?.unwrap_or(Value::Array(Vec::new()));
        let anchor = if use_first_unread {
            fetch::Anchor::FirstUnread
        } else {
            fetch::parse_anchor(anchor.as_deref())?
        };
        if (num_before + num_after) as u64 > MAX_MESSAGES_PER_FETCH {
            return Err(ApiError::bad_request(format!(
                "Too many messages requested (maximum {MAX_MESSAGES_PER_FETCH})."
            )));
        }
        if num_before > 0 && num_after > 0 && !include_anchor {
            return Err(ApiError::bad_request(
                "The anchor can only be excluded at an end of the range",
            ));
        }
        let terms = c.realm.parse_narrow(me, &narrow)?;
        let narrow = Narrow {
            realm: c.realm,
            me,
            terms,
        };
        let found = fetch::fetch(
            &store,
            &narrow,
            anchor,
            num_before,
            num_after,
            include_anchor,
        )?;
        let messages: Vec<Value> = found
            .messages
            .iter()
            .map(|(m, f)| c.realm.message_json_for(m, *f, view))
            .collect();
        let mut body = Map::new();
        body.insert("messages".into(), messages.into());
        body.insert("found_anchor".into(), found.found_anchor.into());
        body.insert("found_oldest".into(), found.found_oldest.into());
        body.insert("found_newest".into(), found.found_newest.into());
        body.insert("history_limited".into(), false.into());
        body.insert("anchor".into(), found.anchor.into());
        Ok(Outcome::read(body))
    })
    .await
}

/// Zulip's `access_message`: the message, if `me` may read it; else "Invalid
/// message(s)".
pub fn access_message(
    store: &MessageStore,
    realm: &Realm,
    me: &User,
    id: i64,
) -> ApiResult<(crate::realm::messages::Message, Option<u32>)> {
    let invalid = || ApiError::bad_request("Invalid message(s)");
    let id = u64::try_from(id).map_err(|_| invalid())?;
    if id > realm.messages.max_visible() {
        return Err(invalid());
    }
    let m = store.row(id)?.ok_or_else(invalid)?;
    let f = store.user_flags(me.id, id)?;
    if can_read(realm, me, &m, f) {
        Ok((m, f))
    } else {
        Err(invalid())
    }
}

/// # `GET /messages/{message_id}`
pub async fn get_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let view = MessageView {
            apply_markdown: c.params.bool_or("apply_markdown", true)?,
            client_gravatar: true,
            allow_empty_topic_name: c.params.bool_or("allow_empty_topic_name", false)?,
        };
        let (m, f) = access_message(&store, c.realm, me, id)?;
        let mut body = Map::new();
        body.insert("raw_content".into(), m.content.clone().into());
        body.insert("message".into(), c.realm.message_json_for(&m, f, view));
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// A flags request, parsed on the worker.
struct FlagsRequest {
    ids: Vec<i64>,
    add: bool,
    flag: u32,
}

/// `op` and `flag`, required in that order (Zulip's signature), then checked as
/// `do_update_message_flags` checks them.
fn parse_flag(p: &Params) -> ApiResult<(bool, u32)> {
    let op = p.str("op")?;
    let flag = p.str("flag")?;
    let Some(bit) = flags::by_name(&flag) else {
        return Err(ApiError::bad_request(format!("Invalid flag: '{flag}'")));
    };
    if !flags::EDITABLE.contains(&flag.as_str()) {
        return Err(ApiError::bad_request(format!(
            "Flag not editable: '{flag}'"
        )));
    }
    let add = match op.as_str() {
        "add" => true,
        "remove" => false,
        other => {
            return Err(ApiError::bad_request(format!(
                "Invalid message flag operation: '{other}'"
            )))
        }
    };
    Ok((add, bit))
}

/// Decides a flags change for `ids`: the ids whose flag changes (messages not
/// received are checked for access and become historical).
fn decide_flags(
    store: &MessageStore,
    realm: &Realm,
    me: &User,
    ids: &[i64],
    add: bool,
    flag: u32,
) -> ApiResult<Option<Change>> {
    let mut changed: Vec<MessageId> = Vec::new();
    for id in ids {
        let Ok(uid) = u64::try_from(*id) else {
            return Err(ApiError::bad_request("Invalid message(s)"));
        };
        match store.user_flags(me.id, uid)? {
            Some(bits) => {
                if (bits & flag != 0) != add {
                    changed.push(uid);
                }
            }
            None => {
                // Not received: read and historical, until a change makes it differ.
                let base = flags::READ | flags::HISTORICAL;
                let new = if add { base | flag } else { base & !flag };
                if new != base {
                    access_message(store, realm, me, *id)?;
                    changed.push(uid);
                }
            }
        }
    }
    changed.sort_unstable();
    changed.dedup();
    Ok((!changed.is_empty()).then(|| {
        Change::Message(MessageChange::FlagsChanged {
            user_id: me.id,
            flag,
            add,
            ids: changed,
        })
    }))
}

/// # `POST /messages/flags`
pub async fn update_flags(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    req.write_legacy(
        CallOpts::USER,
        |p| {
            let ids = p
                .opt_int_list("messages")?
                .ok_or_else(|| ApiError::missing("messages"))?;
            let (add, flag) = parse_flag(p)?;
            Ok(FlagsRequest { ids, add, flag })
        },
        move |c: &mut Ctx<'_>, r: FlagsRequest| {
            let me = c.me()?;
            let change = decide_flags(&store, c.realm, me, &r.ids, r.add, r.flag)?;
            let ids: Vec<Value> = r.ids.iter().map(|i| Value::from(*i)).collect();
            let mut body = one("messages", ids.into());
            body.insert("ignored_because_not_subscribed_channels".into(), json!([]));
            Ok(Outcome::write(change.into_iter().collect(), body))
        },
    )
    .await
    .map(success)
}

/// # `POST /messages/flags/narrow`
pub async fn update_flags_for_narrow(req: ApiRequest) -> ApiResponse {
    // The narrow is walked here, on the worker; the actor gets the ids.
    let store = req.message_store().await?;
    let version = req.hub.current();
    let me = req.caller()?;
    let p = &req.params;
    // Zulip's parameters are all required but `include_anchor`, read in the order of
    // its signature before any value is looked at.
    let anchor = p.str("anchor")?;
    let include_anchor = p.bool_or("include_anchor", true)?;
    for name in ["num_before", "num_after"] {
        if !p.has(name) {
            return Err(ApiError::missing(name));
        }
    }
    let num_before = count_param(p, "num_before")?;
    let num_after = count_param(p, "num_after")?;
    let narrow = p
        .opt_json("narrow")?
        .ok_or_else(|| ApiError::missing("narrow"))?;
    for name in ["op", "flag"] {
        if !p.has(name) {
            return Err(ApiError::missing(name));
        }
    }
    let anchor = fetch::parse_anchor(Some(&anchor))?;
    if num_before > 0 && num_after > 0 && !include_anchor {
        return Err(ApiError::bad_request(
            "The anchor can only be excluded at an end of the range",
        ));
    }
    // Zulip clamps the range to `MAX_MESSAGES_PER_UPDATE` instead of refusing it.
    let max = MAX_MESSAGES_PER_FETCH as usize;
    let num_before = num_before.min((max.saturating_sub(num_after)).max(max / 2));
    let num_after = num_after.min(max - num_before);
    let (add, flag) = parse_flag(p)?;
    let me_user = version.user(me).ok_or_else(ApiError::internal)?;
    let terms = version.parse_narrow(me_user, &narrow)?;
    let (found, ids) = {
        let narrow = Narrow {
            realm: &version,
            me: me_user,
            terms,
        };
        let found = fetch::fetch(
            &store,
            &narrow,
            anchor,
            num_before,
            num_after,
            include_anchor,
        )?;
        let ids: Vec<i64> = found.messages.iter().map(|(m, _)| m.id as i64).collect();
        (found, ids)
    };
    let processed = ids.len();
    let (first, last) = (ids.first().copied(), ids.last().copied());
    let store2 = store.clone();
    let body = req
        .write_legacy(
            CallOpts::USER,
            |_| Ok(()),
            move |c: &mut Ctx<'_>, ()| {
                let me = c.me()?;
                let change = decide_flags(&store2, c.realm, me, &ids, add, flag)?;
                let updated = match &change {
                    Some(Change::Message(MessageChange::FlagsChanged { ids, .. })) => ids.len(),
                    _ => 0,
                };
                let mut body = Map::new();
                body.insert("processed_count".into(), processed.into());
                body.insert("updated_count".into(), updated.into());
                body.insert("first_processed_id".into(), json!(first));
                body.insert("last_processed_id".into(), json!(last));
                body.insert("found_oldest".into(), found.found_oldest.into());
                body.insert("found_newest".into(), found.found_newest.into());
                Ok(Outcome::write(change.into_iter().collect(), body))
            },
        )
        .await?;
    Ok(success(body))
}

/// # `GET /users/me/{stream_id}/topics`
pub async fn get_topics(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("stream_id", &path)?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let allow_empty = c.params.bool_or("allow_empty_topic_name", false)?;
        let ch = c.realm.access_channel(me, id)?;
        let mut topics: Vec<(u64, String)> = c
            .realm
            .messages
            .topics
            .get(&ch.id)
            .map(|t| {
                t.values()
                    .map(|t| (t.max_id, c.realm.topic_for_client(&t.name, allow_empty)))
                    .collect()
            })
            .unwrap_or_default();
        topics.sort_by_key(|t| std::cmp::Reverse(t.0));
        let topics: Vec<Value> = topics
            .into_iter()
            .map(|(max_id, name)| json!({"name": name, "max_id": max_id}))
            .collect();
        Ok(Outcome::read(one("topics", topics.into())))
    })
    .await
    .map(success)
}

/// Sets `max_message_id` (when the body has it): the newest message `me` received, or
/// -1.
pub fn fill_max_message_id(
    store: &MessageStore,
    realm: &Realm,
    me: &User,
    body: &mut Map<String, Value>,
) -> ApiResult<()> {
    if body.contains_key("max_message_id") {
        let max = realm.messages.max_visible();
        // The index may still name deleted messages: the newest with a row.
        let mut newest = None;
        for id in store.scan(&Source::User(me.id), 0, max, true)? {
            let id = id?;
            if store.row(id)?.is_some() {
                newest = Some(id);
                break;
            }
        }
        body.insert(
            "max_message_id".into(),
            newest.map_or(json!(-1), |id| json!(id)),
        );
    }
    Ok(())
}

/// `unread_msgs`, `max_message_id` and `starred_messages` of `/register`, read from
/// the message store (bounded by Zulip's `MAX_UNREAD_MESSAGES`).
pub fn register_message_state(
    store: &MessageStore,
    realm: &Realm,
    me: &User,
    body: &mut Map<String, Value>,
) -> ApiResult<()> {
    let max = realm.messages.max_visible();
    fill_max_message_id(store, realm, me, body)?;
    if body.contains_key("unread_msgs") {
        body.insert("unread_msgs".into(), unread_msgs(store, realm, me)?);
    }
    if body.contains_key("starred_messages") {
        let mut starred = Vec::new();
        for id in store.scan(&Source::User(me.id), 0, max, false)? {
            let id = id?;
            if store
                .user_flags(me.id, id)?
                .is_some_and(|f| f & flags::STARRED != 0)
                && store.row(id)?.is_some()
            {
                starred.push(id);
            }
        }
        body.insert("starred_messages".into(), starred.into());
    }
    Ok(())
}

fn unread_msgs(store: &MessageStore, realm: &Realm, me: &User) -> ApiResult<Value> {
    use std::collections::BTreeMap;
    let max = realm.messages.max_visible();
    let mut streams: BTreeMap<(u64, String), (String, Vec<u64>)> = BTreeMap::new();
    let mut pms: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut huddles: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut mentions = Vec::new();
    let mut count = 0usize;
    let mut missing = false;
    for id in store.scan(&Source::Unread(me.id), 0, max, false)? {
        let id = id?;
        if count >= MAX_UNREAD_MESSAGES {
            missing = true;
            break;
        }
        let Some(m) = store.row(id)? else { continue };
        count += 1;
        let bits = store.user_flags(me.id, id)?.unwrap_or(0);
        if bits
            & (flags::MENTIONED
                | flags::STREAM_WILDCARD_MENTIONED
                | flags::TOPIC_WILDCARD_MENTIONED)
            != 0
        {
            mentions.push(id);
        }
        match &m.recipient {
            Recipient::Channel { channel_id, topic } => {
                streams
                    .entry((*channel_id, topic.to_lowercase()))
                    .or_insert_with(|| (topic.clone(), Vec::new()))
                    .1
                    .push(id);
            }
            Recipient::Direct { users } if users.len() <= 2 => {
                let other = users.iter().copied().find(|u| *u != me.id).unwrap_or(me.id);
                pms.entry(other).or_default().push(id);
            }
            Recipient::Direct { users } => {
                let key = users
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                huddles.entry(key).or_default().push(id);
            }
        }
    }
    let streams: Vec<Value> = streams
        .into_iter()
        .map(|((channel_id, _), (topic, ids))| {
            json!({"stream_id": channel_id, "topic": realm.topic_for_client(&topic, false),
                   "unread_message_ids": ids})
        })
        .collect();
    let pms: Vec<Value> = pms
        .into_iter()
        .map(|(other, ids)| {
            json!({"other_user_id": other, "sender_id": other, "unread_message_ids": ids})
        })
        .collect();
    let huddles: Vec<Value> = huddles
        .into_iter()
        .map(|(key, ids)| json!({"user_ids_string": key, "unread_message_ids": ids}))
        .collect();
    Ok(json!({
        "pms": pms,
        "streams": streams,
        "huddles": huddles,
        "mentions": mentions,
        "count": count,
        "old_unreads_missing": missing,
    }))
}

/// The topics that `pairs` (rows before and after) left and joined, with their newest
/// messages afterwards, read from the store as the actor sees it.
fn topic_max_after(
    store: &MessageStore,
    realm: &Realm,
    removed: &[&crate::realm::messages::Message],
    added: &[&crate::realm::messages::Message],
) -> ApiResult<Vec<TopicMax>> {
    use std::collections::BTreeMap;
    let skip: Vec<MessageId> = removed.iter().map(|m| m.id).collect();
    let mut out: BTreeMap<(u64, String), TopicMax> = BTreeMap::new();
    for m in removed {
        if let Recipient::Channel { channel_id, topic } = &m.recipient {
            let key = (*channel_id, topic.to_lowercase());
            if out.contains_key(&key) {
                continue;
            }
            let max_id = store.topic_max(*channel_id, topic, &skip).map_err(|e| {
                tracing::error!("message store read failed: {e}");
                ApiError::internal()
            })?;
            let name = realm
                .messages
                .topics
                .get(channel_id)
                .and_then(|t| t.get(&topic.to_lowercase()))
                .map_or_else(|| topic.clone(), |t| t.name.clone());
            out.insert(
                key,
                TopicMax {
                    channel_id: *channel_id,
                    topic: name,
                    max_id,
                },
            );
        }
    }
    for m in added {
        if let Recipient::Channel { channel_id, topic } = &m.recipient {
            let key = (*channel_id, topic.to_lowercase());
            let existing = out.get(&key).map(|t| t.max_id).unwrap_or_else(|| {
                realm
                    .messages
                    .topics
                    .get(channel_id)
                    .and_then(|t| t.get(&topic.to_lowercase()))
                    .map(|t| t.max_id)
            });
            let max_id = existing.map_or(m.id, |e| e.max(m.id));
            out.insert(
                key,
                TopicMax {
                    channel_id: *channel_id,
                    topic: topic.clone(),
                    max_id: Some(max_id),
                },
            );
        }
    }
    Ok(out.into_values().collect())
}

/// The resolve notice that an opposite toggle deletes instead of answering it (Zulip's
/// `maybe_delete_previous_resolve_topic_notification`): the newest message of the
/// target topic once `moved` (rows after the move) are in it, when that is a resolve
/// notice younger than the grace period; with the topic's newest message without it.
fn resolve_undo(
    store: &MessageStore,
    moved: &[&crate::realm::messages::Message],
    channel: u64,
    topic: &str,
    now: i64,
) -> Result<
    Option<(crate::realm::messages::Message, Option<MessageId>)>,
    crate::storage::StorageError,
> {
    let moved_ids: Vec<MessageId> = moved.iter().map(|m| m.id).collect();
    let moved_max = moved_ids.iter().copied().max();
    let stayed = store.topic_max(channel, topic, &moved_ids)?;
    let Some(newest_id) = stayed.max(moved_max) else {
        return Ok(None);
    };
    let newest = match moved.iter().find(|m| m.id == newest_id) {
        Some(m) => Some((*m).clone()),
        // The index names it; the row must agree that it is in this topic.
        None => store
            .get(newest_id)?
            .filter(|m| m.recipient.is_topic(channel, topic)),
    };
    let Some(newest) = newest.filter(|m| {
        moves::is_resolve_notice(m) && now - m.timestamp <= moves::RESOLVE_UNDO_GRACE_SECS
    }) else {
        return Ok(None);
    };
    let rest = if moved_max == Some(newest_id) {
        let others = moved_ids
            .iter()
            .copied()
            .filter(|id| *id != newest_id)
            .max();
        stayed.max(others)
    } else {
        let mut skip = moved_ids;
        skip.push(newest_id);
        store.topic_max(channel, topic, &skip)?.max(moved_max)
    };
    Ok(Some((newest, rest)))
}

/// An edit, parsed and rendered on the worker.
struct ParsedEdit {
    id: i64,
    request: EditRequest,
    /// The rest of the target's topic, for a propagated move.
    others: Vec<crate::realm::messages::Message>,
    /// `send_notification_to_old_thread` / `send_notification_to_new_thread`.
    send_to_old_thread: bool,
    send_to_new_thread: bool,
}

/// # `PATCH /messages/{message_id}`
pub async fn update_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let version = req.hub.current();
    let store = req.message_store().await?;
    let reader = store.clone();
    let body = req
        .write_legacy(
            CallOpts::USER,
            |p| {
                let content = p.opt_str("content");
                let topic = topic_param(p);
                let channel_id = p.opt_int("stream_id")?;
                let propagate = Propagate::parse(
                    &p.opt_str("propagate_mode")
                        .unwrap_or_else(|| "change_one".into()),
                )?;
                // Notification Bot messages about a move (`realm::messages::moves`).
                let send_to_old_thread = p.bool_or("send_notification_to_old_thread", false)?;
                let send_to_new_thread = p.bool_or("send_notification_to_new_thread", true)?;
                // Rendered as `decide_edit` stores it (which reports a bad body).
                let rendered = content.as_deref().map(|c| {
                    let c = edit::edited_content(c).unwrap_or_else(|_| c.to_owned());
                    version.render_message(&c)
                });
                // A topic wildcard mention's reach is read here, off the actor.
                let mut topic_participants = Vec::new();
                if rendered
                    .as_ref()
                    .is_some_and(|r| r.wildcard == Wildcard::Topic)
                {
                    if let Some(Recipient::Channel { channel_id, topic }) = u64::try_from(id)
                        .ok()
                        .and_then(|i| reader.get(i).ok().flatten())
                        .map(|m| m.recipient)
                    {
                        topic_participants = send::topic_participants(
                            &reader,
                            channel_id,
                            &topic,
                            version.messages.max_visible(),
                        )?;
                    }
                }
                let mut others = Vec::new();
                let moving = topic.is_some() || channel_id.is_some();
                if moving && propagate != Propagate::One {
                    if let Some(target) = u64::try_from(id)
                        .ok()
                        .and_then(|i| reader.get(i).ok().flatten())
                    {
                        if let Recipient::Channel { channel_id, topic } = &target.recipient {
                            let source = Source::Topic(*channel_id, topic.clone());
                            let max = version.messages.max_visible();
                            for mid in reader
                                .scan(&source, 0, max, false)?
                                .take(crate::api::params::MAX_LIST_ITEMS)
                            {
                                if let Some(m) = reader.row(mid?)? {
                                    others.push(m);
                                }
                            }
                        }
                    }
                }
                Ok(ParsedEdit {
                    id,
                    request: EditRequest {
                        content,
                        rendered,
                        topic,
                        channel_id,
                        propagate,
                        topic_participants,
                    },
                    others,
                    send_to_old_thread,
                    send_to_new_thread,
                })
            },
            move |c: &mut Ctx<'_>, e: ParsedEdit| {
                let me = c.me()?;
                let (target, _) = access_message(&store, c.realm, me, e.id)?;
                // Rows read on the worker that moved meanwhile are left where they are.
                let others: Vec<_> = e
                    .others
                    .into_iter()
                    .filter(|m| m.recipient == target.recipient)
                    .collect();
                let pairs =
                    c.realm
                        .decide_edit(me, &target, &others, &e.request, c.cx.now_secs())?;
                let before: Vec<&crate::realm::messages::Message> =
                    pairs.iter().map(|(b, _)| b).collect();
                let after: Vec<&crate::realm::messages::Message> =
                    pairs.iter().map(|(_, a)| a).collect();
                let topic_max = if before
                    .iter()
                    .zip(&after)
                    .any(|(b, a)| b.recipient != a.recipient)
                {
                    topic_max_after(&store, c.realm, &before, &after)?
                } else {
                    Vec::new()
                };
                let (first_before, first_after) = (before[0].clone(), after[0].clone());
                let moved_ids: Vec<MessageId> = after.iter().map(|m| m.id).collect();
                let notices = match (&first_before.recipient, &first_after.recipient) {
                    (
                        Recipient::Channel {
                            channel_id: old_channel,
                            topic: old_topic,
                        },
                        Recipient::Channel {
                            channel_id: new_channel,
                            topic: new_topic,
                        },
                    ) if first_before.recipient != first_after.recipient => {
                        let read = |e: crate::storage::StorageError| {
                            tracing::error!("message store read failed: {e}");
                            ApiError::internal()
                        };
                        let old_topic_emptied = store
                            .topic_max(*old_channel, old_topic, &moved_ids)
                            .map_err(read)?
                            .is_none();
                        let new_topic_had_messages = store
                            .topic_max(*new_channel, new_topic, &moved_ids)
                            .map_err(read)?
                            .is_some();
                        let realm_url = c.realm.url(c.server_url).to_owned();
                        let mut mv = moves::Move {
                            before: &first_before,
                            after: &first_after,
                            count: moved_ids.len(),
                            change_all: e.request.propagate == Propagate::All,
                            old_topic_emptied,
                            new_topic_had_messages,
                            send_to_old_thread: e.send_to_old_thread,
                            send_to_new_thread: e.send_to_new_thread,
                            content_edited: e.request.content.is_some(),
                            undo: None,
                            realm_url: &realm_url,
                        };
                        if mv.resolve().is_some() {
                            mv.undo = resolve_undo(
                                &store,
                                &after,
                                *new_channel,
                                new_topic,
                                c.cx.now_secs(),
                            )
                            .map_err(read)?;
                        }
                        c.realm.decide_move_notices(me, &mv, c.cx)
                    }
                    _ => Vec::new(),
                };
                let change = Change::Message(MessageChange::Edited {
                    user_id: me.id,
                    propagate_mode: e.request.propagate.name().to_owned(),
                    pairs,
                    topic_max,
                });
                let mut changes = vec![change];
                let mut detached = Vec::new();
                if first_before.content != first_after.content {
                    let (released, gone) = release_uploads(
                        c.realm,
                        first_after.id,
                        &first_before.content,
                        &first_after.content,
                        false,
                    );
                    changes.extend(released);
                    changes.extend(claim_uploads(
                        &store,
                        c.realm,
                        me,
                        &first_after,
                        &first_after.content,
                    ));
                    detached = gone.iter().map(|a| a.json()).collect();
                }
                changes.extend(notices);
                Ok(Outcome::write(
                    changes,
                    one("detached_uploads", detached.into()),
                ))
            },
        )
        .await?;
    Ok(success(body))
}

/// # `DELETE /messages/{message_id}`
pub async fn delete_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    let (state, hub) = (req.state.clone(), req.hub.clone());
    let released: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let out = released.clone();
    let body = req
        .call(CallOpts::USER, move |c| {
            let me = c.me()?;
            let (m, _) = access_message(&store, c.realm, me, id)?;
            c.realm.check_can_delete(me, &m, c.cx.now_secs())?;
            let topic_max = topic_max_after(&store, c.realm, &[&m], &[])?;
            let (releases, gone) = release_uploads(c.realm, m.id, &m.content, "", true);
            *out.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                gone.into_iter().map(|a| a.sha256).collect();
            let mut changes = vec![Change::Message(MessageChange::Deleted {
                messages: vec![m],
                topic_max,
            })];
            changes.extend(releases);
            Ok(Outcome::write(changes, Map::new()))
        })
        .await?;
    let shas = std::mem::take(
        &mut *released
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    // Files no attachment names any more go once the deletion is durable and visible.
    super::attachments::remove_unreferenced_files(&state, &hub, shas).await;
    Ok(success(body))
}

/// # `GET /messages/{message_id}/history`
pub async fn get_message_history(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let allow_empty = c.params.bool_or("allow_empty_topic_name", false)?;
        let (m, _) = access_message(&store, c.realm, me, id)?;
        // The realm's edit-history policy is "all" (as `/register` advertises; it is
        // not editable yet), so the history is always shown.
        let history = c.realm.message_history(&m, allow_empty);
        Ok(Outcome::read(one("message_history", history.into())))
    })
    .await
    .map(success)
}

/// Parses a scheduled-message create or edit (`to` is JSON: an id or a list of ids).
fn parse_schedule(p: &Params, create: bool, client: &str) -> ApiResult<ScheduleRequest> {
    // Zulip's order: `type`, `to`, `content`, `scheduled_delivery_timestamp`, then
    // `read_by_sender`.
    let channel_type = match (p.opt_str("type"), create) {
        (Some(t), _) => Some(is_channel_type(&t)?),
        (None, true) => return Err(ApiError::missing("type")),
        (None, false) => None,
    };
    let to = if create {
        Some(p.opt_json("to")?.ok_or_else(|| ApiError::missing("to"))?)
    } else {
        p.opt_json("to")?
    };
    let content = if create {
        Some(p.str("content")?)
    } else {
        p.opt_str("content")
    };
    let deliver_at = if create {
        Some(p.int("scheduled_delivery_timestamp")?)
    } else {
        p.opt_int("scheduled_delivery_timestamp")?
    };
    let read_by_sender = p.opt_bool("read_by_sender")?;
    Ok(ScheduleRequest {
        channel_type,
        to,
        topic: topic_param(p),
        content,
        deliver_at,
        read_by_sender: read_by_sender.unwrap_or_else(|| default_read_by_sender(client)),
    })
}

/// # `GET /scheduled_messages`
pub async fn get_scheduled_messages(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let list = c.realm.view_scheduled(me);
        Ok(Outcome::read(one("scheduled_messages", list.into())))
    })
    .await
    .map(success)
}

/// # `POST /scheduled_messages`
pub async fn create_scheduled_message(req: ApiRequest) -> ApiResponse {
    let client = req.client.clone();
    let store = req.message_store().await?;
    req.write_legacy(
        CallOpts::USER,
        |p| parse_schedule(p, true, &client),
        move |c: &mut Ctx<'_>, r: ScheduleRequest| {
            let me = c.me()?;
            let s = c.realm.decide_schedule(me, &r, c.cx, &store)?;
            let body = one("scheduled_message_id", s.id.into());
            Ok(Outcome::write(
                vec![Change::Message(MessageChange::ScheduledCreated(s))],
                body,
            ))
        },
    )
    .await
    .map(success)
}

/// # `PATCH /scheduled_messages/{scheduled_message_id}`
pub async fn update_scheduled_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("scheduled_message_id", &path)?;
    let client = req.client.clone();
    let store = req.message_store().await?;
    req.write_legacy(
        CallOpts::USER,
        |p| parse_schedule(p, false, &client),
        move |c: &mut Ctx<'_>, r: ScheduleRequest| {
            let me = c.me()?;
            let s = c.realm.decide_schedule_edit(me, id, &r, c.cx, &store)?;
            Ok(Outcome::write(
                vec![Change::Message(MessageChange::ScheduledUpdated(s))],
                Map::new(),
            ))
        },
    )
    .await
    .map(success)
}

/// # `DELETE /scheduled_messages/{scheduled_message_id}`
pub async fn delete_scheduled_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("scheduled_message_id", &path)?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        let id = c.realm.decide_schedule_delete(me, id)?;
        Ok(Outcome::write(
            vec![Change::Message(MessageChange::ScheduledDeleted { id })],
            Map::new(),
        ))
    })
    .await
    .map(success)
}

/// # `POST /typing`
///
/// Typing notifications are events only: nothing is stored, the actor is not involved.
pub async fn set_typing_status(req: ApiRequest) -> ApiResponse {
    let version = req.hub.current();
    let me_id = req.caller()?;
    let me = version.user(me_id).ok_or_else(ApiError::internal)?;
    let p = &req.params;
    // Zulip's order: `to` (a JSON list of ids, for every type), `op`, `type`.
    let to = p.opt_int_list("to")?;
    let op = p.str("op")?;
    if op != "start" && op != "stop" {
        return Err(ApiError::bad_request("Invalid op"));
    }
    let kind = p.opt_str("type").unwrap_or_else(|| "direct".into());
    let sender = json!({"user_id": me.id, "email": version.api_email(me)});
    let event = match kind.as_str() {
        "direct" | "private" => {
            let to = to.clone().ok_or_else(|| ApiError::missing("to"))?;
            if to.is_empty() {
                return Err(ApiError::bad_request("Empty 'to' list"));
            }
            let mut users = Vec::new();
            for id in &to {
                let user = u64::try_from(*id)
                    .ok()
                    .and_then(|id| version.user(id))
                    .ok_or_else(|| ApiError::bad_request(format!("Invalid user ID {id}")))?;
                users.push(user);
            }
            let mut ids: Vec<u64> = users.iter().map(|u| u.id).collect();
            ids.push(me.id);
            let recipients: Vec<Value> = {
                let mut all: Vec<&User> = users.clone();
                all.push(me);
                all.sort_by_key(|u| u.id);
                all.dedup_by_key(|u| u.id);
                all.iter()
                    .map(|u| json!({"user_id": u.id, "email": version.api_email(u)}))
                    .collect()
            };
            Event::new(
                json!({"type": "typing", "op": op, "message_type": "direct",
                       "sender": sender, "recipients": recipients}),
                Audience::users(ids),
            )
        }
        "stream" | "channel" => {
            let stream_id = p
                .opt_int("stream_id")?
                .ok_or_else(|| ApiError::missing("stream_id"))?;
            let topic = topic_param(p).ok_or_else(|| ApiError::bad_request("Missing topic"))?;
            let ch = version.access_channel(me, stream_id)?;
            Event::new(
                json!({"type": "typing", "op": op, "message_type": "stream",
                       "sender": sender, "stream_id": ch.id, "topic": topic}),
                Audience::users(ch.subscriber_ids()),
            )
            .for_capability("stream_typing_notifications", true)
        }
        _ => return Err(ApiError::bad_request("Invalid type")),
    };
    req.hub.publish(vec![event]);
    Ok(success(with_ignored(Map::new(), p.unused())))
}

/// # `POST /messages/{message_id}/reactions`
pub async fn add_reaction(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let name = p.str("emoji_name")?;
        let code = p.opt_str("emoji_code");
        let rtype = p.opt_str("reaction_type");
        let (m, _) = access_message(&store, c.realm, me, id)?;
        if m.recipient
            .channel()
            .and_then(|ch| c.realm.channel(ch))
            .is_some_and(|ch| ch.is_archived)
        {
            return Err(ApiError::bad_request("Invalid message(s)"));
        }
        let change =
            c.realm
                .decide_add_reaction(me, &m, &name, code.as_deref(), rtype.as_deref())?;
        Ok(Outcome::write(vec![change], Map::new()))
    })
    .await
    .map(success)
}

/// # `DELETE /messages/{message_id}/reactions`
pub async fn remove_reaction(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let name = p.opt_str("emoji_name");
        let code = p.opt_str("emoji_code");
        let rtype = p.opt_str("reaction_type");
        let (m, _) = access_message(&store, c.realm, me, id)?;
        let change = c.realm.decide_remove_reaction(
            me,
            &m,
            name.as_deref(),
            code.as_deref(),
            rtype.as_deref(),
        )?;
        Ok(Outcome::write(vec![change], Map::new()))
    })
    .await
    .map(success)
}

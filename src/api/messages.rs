//! Messages: send, fetch, flags, edits, reactions, scheduled messages, typing.
//!
//! Parsing and rendering only: each write is parsed here, on the worker, into the
//! typed request of its rule in `realm::messages` (rendered Markdown, topic
//! participants and the rows of a propagated move are read here too, against the
//! published version) and committed by the realm actor; fetches walk the message rows
//! on the blocking pool, and the actor never sees them.

use actix_web::web;
use serde_json::{json, Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome, Parsed};
use crate::error::{ApiError, ApiResult};
use crate::realm::attachments::Attachment;
use crate::realm::messages::edit::{DeleteMessage, EditRequest, Propagate};
use crate::realm::messages::fetch::{self, Narrow};
use crate::realm::messages::flags::{parse_flag_op, FlagsRequest};
use crate::realm::messages::json::MessageView;
use crate::realm::messages::reactions::ReactionRequest;
use crate::realm::messages::read::{MarkAllRead, MarkChannelRead, MARK_ALL_BATCH};
use crate::realm::messages::report::{ReportMessage, MAX_REPORT_DESCRIPTION_LENGTH, REPORT_TYPES};
use crate::realm::messages::scheduled::{
    is_channel_type, DeleteScheduled, ScheduleEdit, ScheduleRequest,
};
use crate::realm::messages::search;
use crate::realm::messages::send::{
    normalize_body, normalize_topic, parse_channel_to, parse_direct_to, Addressee,
    MAX_MESSAGE_LENGTH,
};
use crate::realm::messages::typing::{EditTypingRequest, TypingRequest, TypingTo};
use crate::realm::messages::MAX_MESSAGES_PER_FETCH;
use crate::realm::Realm;

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
    let store = req.message_store().await?;
    let client = req.client.clone();
    let id = req
        .write(
            |version, _, p| {
                let (to, content, read_by_sender) = parse_send(p, version, &client)?;
                // Rendered here against the published version: mentions and channel
                // links resolve as the sender saw the realm.
                version.send_request(&store, to, content, client, read_by_sender)
            },
            Realm::decide_send,
        )
        .await
        .inspect_err(|e| remind_bot_owner(&req, e))?;
    req.reply(one("id", id.into()))
}

/// When a bot's send failed because its channel does not exist, its owner is told by
/// the Notification Bot (Zulip's `send_pm_if_empty_stream`; see `notify_bot_owner`).
pub(crate) fn remind_bot_owner(req: &ApiRequest, e: &ApiError) {
    use crate::realm::bot_services::missing_channel_notice;
    if e.code != crate::error::ErrorCode::StreamDoesNotExist {
        return;
    }
    // `stream` is HTML-escaped in the error's fields: the name as named is in the text.
    let name = e.extra.get("stream").map(|_| {
        e.msg
            .strip_prefix("Channel '")
            .and_then(|m| m.strip_suffix("' does not exist"))
            .unwrap_or_default()
            .to_owned()
    });
    let channel_id = e
        .extra
        .get("stream_id")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    notify_bot_owner(req, |bot_email| {
        missing_channel_notice(bot_email, name.as_deref(), channel_id)
    });
}

/// Tells the owner of the calling bot what `text` (given the bot's address) says,
/// from the Notification Bot, at most once a minute per bot (Zulip's
/// `send_rate_limited_pm_notification_to_bot_owner`; `OWNER_NOTICE_WAIT_SECS`). The
/// rate is kept in memory, so a restart may let one more through. The notice is
/// written off this request. Callers that are not bots with an owner are left alone.
pub(crate) fn notify_bot_owner(req: &ApiRequest, text: impl FnOnce(&str) -> String) {
    use crate::realm::bot_services::{OwnerNotice, OWNER_NOTICE_WAIT_SECS};
    let version = req.hub.current();
    let Ok(id) = req.caller() else { return };
    let Some(bot) = version
        .user(id)
        .filter(|u| u.is_bot() && u.bot_owner_id.is_some())
    else {
        return;
    };
    let key = (version.settings.subdomain.clone(), bot.id);
    let now = std::time::Instant::now();
    let wait = std::time::Duration::from_secs(OWNER_NOTICE_WAIT_SECS);
    match req.state.owner_notices.entry(key) {
        dashmap::Entry::Occupied(mut last) => {
            if now.duration_since(*last.get()) <= wait {
                return;
            }
            last.insert(now);
        }
        dashmap::Entry::Vacant(v) => {
            v.insert(now);
        }
    }
    let content = text(&bot.delivery_email);
    let rendered = version.render_message(&content).html;
    let notice = OwnerNotice {
        bot_id: bot.id,
        content,
        rendered,
    };
    let writer = req.writer();
    actix_web::rt::spawn(async move {
        if let Err(e) = writer
            .commit_system(notice, Realm::decide_owner_notice)
            .await
        {
            tracing::warn!("a bot owner's notice was not sent: {}", e.msg);
        }
    });
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
        // Zulip's `is_search`: each message also says where the words matched.
        let lexemes = narrow
            .terms
            .iter()
            .any(|t| matches!(t.term, fetch::Term::Search(_)) && !t.negated)
            .then(|| narrow.highlighted_lexemes());
        let messages: Vec<Value> = found
            .messages
            .iter()
            .map(|(m, f)| {
                let mut json = c.realm.message_json_for(m, *f, view);
                if let (Some(lexemes), Value::Object(o)) = (&lexemes, &mut json) {
                    let (content, topic) = search::search_fields(m, lexemes);
                    o.insert("match_content".into(), content.into());
                    o.insert("match_subject".into(), topic.into());
                }
                json
            })
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
        let (m, f) = c.realm.access_message(&store, me, id)?;
        let mut body = Map::new();
        body.insert("raw_content".into(), m.content.clone().into());
        body.insert("message".into(), c.realm.message_json_for(&m, f, view));
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// `op` and `flag`, required in that order (Zulip's signature), then checked as
/// `do_update_message_flags` checks them.
fn parse_flag(p: &Params) -> ApiResult<(bool, u32)> {
    let op = p.str("op")?;
    let flag = p.str("flag")?;
    parse_flag_op(&op, &flag)
}

/// # `POST /messages/flags`
pub async fn update_flags(req: ApiRequest) -> ApiResponse {
    req.message_store().await?;
    let parsed = req.parse(|_, _, p| {
        let ids = p
            .opt_int_list("messages")?
            .ok_or_else(|| ApiError::missing("messages"))?;
        let (add, flag) = parse_flag(p)?;
        Ok(FlagsRequest { ids, add, flag })
    })?;
    let ids: Vec<Value> = parsed.req.ids.iter().map(|i| Value::from(*i)).collect();
    req.commit(parsed, Realm::decide_update_flags).await?;
    let mut body = one("messages", ids.into());
    body.insert("ignored_because_not_subscribed_channels".into(), json!([]));
    req.reply(body)
}

/// # `POST /messages/flags/narrow`
pub async fn update_flags_for_narrow(req: ApiRequest) -> ApiResponse {
    // The narrow is walked here, on the worker; the actor gets the ids.
    let store = req.message_store().await?;
    let Parsed {
        me,
        req: (q, found),
    } = req.parse(|version, me, p| {
        // Zulip's parameters are all required but `include_anchor`, read in the order
        // of its signature before any value is looked at.
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
        let terms = version.parse_narrow(me, &narrow)?;
        let narrow = Narrow {
            realm: version,
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
        let ids: Vec<i64> = found.messages.iter().map(|(m, _)| m.id as i64).collect();
        let ends = (found.found_oldest, found.found_newest);
        Ok((FlagsRequest { ids, add, flag }, ends))
    })?;
    let (processed, first, last) = (q.ids.len(), q.ids.first().copied(), q.ids.last().copied());
    let updated = req
        .commit(Parsed { me, req: q }, Realm::decide_update_flags)
        .await?;
    let mut body = Map::new();
    body.insert("processed_count".into(), processed.into());
    body.insert("updated_count".into(), updated.into());
    body.insert("first_processed_id".into(), json!(first));
    body.insert("last_processed_id".into(), json!(last));
    body.insert("found_oldest".into(), found.0.into());
    body.insert("found_newest".into(), found.1.into());
    req.reply(body)
}

/// # `POST /mark_all_as_read`
pub async fn mark_all_as_read(req: ApiRequest) -> ApiResponse {
    req.message_store().await?;
    let complete = req
        .write(
            |_, _, _| {
                Ok(MarkAllRead {
                    batch: MARK_ALL_BATCH,
                })
            },
            Realm::decide_mark_all_as_read,
        )
        .await?;
    req.reply(one("complete", complete.into()))
}

/// # `POST /mark_stream_as_read`
pub async fn mark_stream_as_read(req: ApiRequest) -> ApiResponse {
    req.message_store().await?;
    req.write(
        |_, _, p| {
            Ok(MarkChannelRead {
                stream_id: p.int("stream_id")?,
                topic: None,
            })
        },
        Realm::decide_mark_channel_read,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /mark_topic_as_read`
pub async fn mark_topic_as_read(req: ApiRequest) -> ApiResponse {
    req.message_store().await?;
    req.write(
        |version, _, p| {
            let stream_id = p.int("stream_id")?;
            let mut topic = p.str("topic_name")?;
            if topic == version.settings.empty_topic_display_name {
                topic.clear();
            }
            Ok(MarkChannelRead {
                stream_id,
                topic: Some(topic),
            })
        },
        Realm::decide_mark_channel_read,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /messages/render`
pub async fn render_message(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        let content = c.params.str("content")?;
        if content.chars().count() > MAX_MESSAGE_LENGTH {
            return Err(ApiError::bad_request(format!(
                "content is too long (limit: {MAX_MESSAGE_LENGTH} characters)"
            )));
        }
        let rendered = c.realm.render_message(&content).html;
        Ok(Outcome::read(one("rendered", rendered.into())))
    })
    .await
    .map(success)
}

/// # `GET /messages/matches_narrow`
pub async fn messages_match_narrow(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let ids = p
            .opt_int_list("msg_ids")?
            .ok_or_else(|| ApiError::missing("msg_ids"))?;
        let narrow = p
            .opt_json("narrow")?
            .ok_or_else(|| ApiError::missing("narrow"))?;
        let found = c
            .realm
            .messages_matching_narrow(&store, me, &ids, &narrow)?;
        Ok(Outcome::read(one("messages", found.into())))
    })
    .await
    .map(success)
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

/// # `PATCH /messages/{message_id}`
pub async fn update_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    let server_url = req.server_url();
    let detached = req
        .write(
            |version, _, p| {
                let content = p.opt_str("content");
                let topic = topic_param(p);
                let channel_id = p.opt_int("stream_id")?;
                let propagate = Propagate::parse(
                    &p.opt_str("propagate_mode")
                        .unwrap_or_else(|| "change_one".into()),
                )?;
                // Notification Bot messages about a move (`realm::messages::moves`).
                let notify = (
                    p.bool_or("send_notification_to_old_thread", false)?,
                    p.bool_or("send_notification_to_new_thread", true)?,
                );
                let edit = EditRequest {
                    content,
                    rendered: None,
                    topic,
                    channel_id,
                    propagate,
                    topic_participants: Vec::new(),
                };
                let realm_url = version.url(&server_url).to_owned();
                version.update_message_request(&store, id, edit, notify, realm_url)
            },
            Realm::decide_update_message,
        )
        .await?;
    let detached: Vec<Value> = detached.iter().map(Attachment::json).collect();
    req.reply(one("detached_uploads", detached.into()))
}

/// # `DELETE /messages/{message_id}`
pub async fn delete_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    req.message_store().await?;
    let detached = req
        .write(
            |_, _, _| Ok(DeleteMessage { id }),
            Realm::decide_delete_message,
        )
        .await?;
    let shas = detached.into_iter().map(|a| a.sha256).collect();
    // Files no attachment names any more go once the deletion is durable and visible.
    super::attachments::remove_unreferenced_files(&req.state, &req.hub, shas).await;
    req.reply(Map::new())
}

/// # `GET /messages/{message_id}/history`
pub async fn get_message_history(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let allow_empty = c.params.bool_or("allow_empty_topic_name", false)?;
        let (m, _) = c.realm.access_message(&store, me, id)?;
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
        rendered: None,
    })
}

/// # `GET /scheduled_messages`
pub async fn get_scheduled_messages(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let list = c.realm.view_scheduled(me, false);
        Ok(Outcome::read(one("scheduled_messages", list.into())))
    })
    .await
    .map(success)
}

/// # `POST /scheduled_messages`
pub async fn create_scheduled_message(req: ApiRequest) -> ApiResponse {
    req.message_store().await?;
    let client = req.client.clone();
    let id = req
        .write(
            |version, me, p| {
                let mut request = parse_schedule(p, true, &client)?;
                request.rendered = version.prerender_scheduled(me, None, &request);
                Ok(request)
            },
            Realm::decide_schedule,
        )
        .await?;
    req.reply(one("scheduled_message_id", id.into()))
}

/// # `PATCH /scheduled_messages/{scheduled_message_id}`
pub async fn update_scheduled_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("scheduled_message_id", &path)?;
    req.message_store().await?;
    let client = req.client.clone();
    req.write(
        |version, me, p| {
            let mut request = parse_schedule(p, false, &client)?;
            request.rendered = version.prerender_scheduled(me, Some(id), &request);
            Ok(ScheduleEdit { id, request })
        },
        Realm::decide_schedule_edit,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /scheduled_messages/{scheduled_message_id}`
pub async fn delete_scheduled_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("scheduled_message_id", &path)?;
    req.write(
        |_, _, _| Ok(DeleteScheduled { id }),
        Realm::decide_schedule_delete,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /typing`
///
/// Typing notifications are events only: nothing is stored, the actor is not involved.
pub async fn set_typing_status(req: ApiRequest) -> ApiResponse {
    let event = req.check(|version, me| {
        let p = &req.params;
        // Zulip's order: `to` (a JSON list of ids, for every type), `op`, `type`.
        let to = p.opt_int_list("to")?;
        let op = p.str("op")?;
        if op != "start" && op != "stop" {
            return Err(ApiError::bad_request("Invalid op"));
        }
        let kind = p.opt_str("type").unwrap_or_else(|| "direct".into());
        let to = match kind.as_str() {
            "direct" | "private" => {
                let to = to.ok_or_else(|| ApiError::missing("to"))?;
                if to.is_empty() {
                    return Err(ApiError::bad_request("Empty 'to' list"));
                }
                TypingTo::Direct(to)
            }
            "stream" | "channel" => {
                let stream_id = p
                    .opt_int("stream_id")?
                    .ok_or_else(|| ApiError::missing("stream_id"))?;
                let topic = topic_param(p).ok_or_else(|| ApiError::bad_request("Missing topic"))?;
                TypingTo::Channel { stream_id, topic }
            }
            _ => return Err(ApiError::bad_request("Invalid type")),
        };
        version.typing_event(me, TypingRequest { op, to })
    })?;
    req.hub.publish(vec![event]);
    req.reply(Map::new())
}

/// # `POST /messages/{message_id}/typing`
///
/// Someone starts or stops editing a message: an event only, as `POST /typing`.
pub async fn set_typing_status_for_edit(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let message_id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    let now = req.now_secs();
    let event = req.check(|version, me| {
        let op = req.params.str("op")?;
        if op != "start" && op != "stop" {
            return Err(ApiError::bad_request("Invalid op"));
        }
        version.typing_edit_event(&store, me, EditTypingRequest { message_id, op }, now)
    })?;
    req.hub.publish(vec![event]);
    req.reply(Map::new())
}

/// # `POST /messages/{message_id}/report`
///
/// The Notification Bot posts the report to the realm's moderation request channel.
pub async fn report_message(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let message_id = path_int("message_id", &path)?;
    req.message_store().await?;
    req.write(
        |_, _, p| {
            // Zulip's signature order: report_type, then description.
            let report_type = p.str("report_type")?;
            if !REPORT_TYPES.iter().any(|(k, _)| *k == report_type) {
                return Err(ApiError::bad_request("Invalid report_type"));
            }
            let description = p.opt_str("description").unwrap_or_default();
            if description.chars().count() > MAX_REPORT_DESCRIPTION_LENGTH {
                return Err(ApiError::bad_request(format!(
                    "description is too long (limit: {MAX_REPORT_DESCRIPTION_LENGTH} characters)"
                )));
            }
            Ok(ReportMessage {
                message_id,
                report_type,
                description,
            })
        },
        Realm::decide_report_message,
    )
    .await?;
    req.reply(Map::new())
}

/// The reaction parameters; `emoji_name` is required to add one.
fn reaction(p: &Params, message_id: i64, adding: bool) -> ApiResult<ReactionRequest> {
    Ok(ReactionRequest {
        message_id,
        emoji_name: if adding {
            Some(p.str("emoji_name")?)
        } else {
            p.opt_str("emoji_name")
        },
        emoji_code: p.opt_str("emoji_code"),
        reaction_type: p.opt_str("reaction_type"),
    })
}

/// # `POST /messages/{message_id}/reactions`
pub async fn add_reaction(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    req.message_store().await?;
    req.write(|_, _, p| reaction(p, id, true), Realm::decide_add_reaction)
        .await?;
    req.reply(Map::new())
}

/// # `DELETE /messages/{message_id}/reactions`
pub async fn remove_reaction(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    req.message_store().await?;
    req.write(
        |_, _, p| reaction(p, id, false),
        Realm::decide_remove_reaction,
    )
    .await?;
    req.reply(Map::new())
}

// Read receipts.

/// # `GET /messages/{message_id}/read_receipts`
///
/// Who read the message (Zulip's `read_receipts`): the flags of one message, read on
/// the blocking pool (a channel message asks every active user's flags).
pub async fn get_read_receipts(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("message_id", &path)?;
    let store = req.message_store().await?;
    req.read_large(CallOpts::USER, move |c| {
        let me = c.me()?;
        let user_ids = c.realm.view_read_receipts(&store, me, id)?;
        Ok(Outcome::read(one("user_ids", user_ids.into())))
    })
    .await
}

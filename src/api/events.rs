//! Event queues: register, long-poll, delete.

use std::collections::HashSet;

use actix_web::HttpResponse;
use serde_json::{Map, Value};

use super::Outcome;
use super::{success, with_ignored, ApiRequest, ApiResponse, CallOpts};
use crate::error::ApiError;
use crate::hub::presence::PresenceQuery;
use crate::hub::{QueueOptions, LONGPOLL_TIMEOUT_SECS};
use crate::realm::register::RegisterOptions;

/// Reads the queue options shared by `POST /register` and a queue-creating `GET /events`.
fn queue_options(p: &super::params::Params) -> Result<QueueOptions, ApiError> {
    let event_types = p
        .opt_str_list("event_types")?
        .map(|v| v.into_iter().collect::<HashSet<_>>());
    let all_public_streams = p.bool_or("all_public_streams", false)?;
    let capabilities = p.opt_object("client_capabilities")?.unwrap_or_default();
    Ok(QueueOptions {
        event_types,
        all_public_streams,
        capabilities,
        lifespan_secs: 0,
        narrow: Vec::new(),
        apply_markdown: p.bool_or("apply_markdown", false)?,
        client_gravatar: p.bool_or("client_gravatar", false)?,
    })
}

/// `narrow` of `/register`: `[operator, operand]` pairs (or `{operator, operand}`
/// objects) that message events must match (Zulip's `build_narrow_filter`).
fn parse_queue_narrow(p: &super::params::Params) -> Result<Vec<(String, String)>, ApiError> {
    let Some(v) = p.opt_json("narrow")? else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(ApiError::bad_request("narrow is not a list"));
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let pair = match item {
            Value::Array(pair) if pair.len() == 2 => (pair[0].clone(), pair[1].clone()),
            Value::Object(o) => (
                o.get("operator").cloned().unwrap_or(Value::Null),
                o.get("operand").cloned().unwrap_or(Value::Null),
            ),
            _ => return Err(ApiError::bad_request(format!("narrow[{i}] is not a list"))),
        };
        let as_text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let (Some(op), Some(operand)) = (as_text(&pair.0), as_text(&pair.1)) else {
            return Err(ApiError::bad_request(format!(
                "narrow[{i}] is not a string pair"
            )));
        };
        let op = match op.as_str() {
            "channel" => "stream".to_owned(),
            "subject" => "topic".to_owned(),
            "pm-with" | "pm_with" => "dm".to_owned(),
            other => other.to_owned(),
        };
        if !["stream", "topic", "sender", "is", "search", "dm"].contains(&op.as_str()) {
            return Err(ApiError::bad_request(format!(
                "Invalid narrow operator: unknown operator {op}"
            )));
        }
        out.push((op, operand));
    }
    Ok(out)
}

/// Zulip's check in `events_register_backend` and `get_events_backend`: only users who
/// may read public channels (not guests) may ask for every public channel's messages.
fn check_all_public_streams(me: &crate::realm::User, asked: bool) -> Result<(), ApiError> {
    if asked && !me.can_access_public_channels() {
        return Err(ApiError::bad_request("User not authorized for this query"));
    }
    Ok(())
}

/// # `POST /register`
pub async fn register(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    let max_file_upload_size_mib = req.state.uploads.max_mib;
    req.read_large(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let mut queue = queue_options(p)?;
        queue.lifespan_secs = p.opt_int("queue_lifespan_secs")?.unwrap_or(0);
        let fetch_event_types = match p.opt_str_list("fetch_event_types")? {
            Some(list) => Some(list.into_iter().collect()),
            None => queue.event_types.clone(),
        };
        queue.narrow = parse_queue_narrow(p)?;
        let client_gravatar = p.bool_or("client_gravatar", true)?;
        queue.client_gravatar = client_gravatar;
        let include_subscribers = match p.opt_json("include_subscribers")? {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(Value::String(s)) if s == "partial" => true,
            Some(_) => return Err(ApiError::bad_request("Invalid include_subscribers")),
        };
        let slim_presence = p.bool_or("slim_presence", false)?;
        let presence_history_limit_days = p.opt_int("presence_history_limit_days")?;
        let capability = |name: &str| {
            queue
                .capabilities
                .get(name)
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        check_all_public_streams(me, queue.all_public_streams)?;
        let user_avatar_url_field_optional = capability("user_avatar_url_field_optional");
        let linkifier_url_template = capability("linkifier_url_template");
        let include_deactivated_groups = capability("include_deactivated_groups");
        let user_settings_object = capability("user_settings_object");
        let empty_topic_name = capability("empty_topic_name");
        let notification_settings_null = capability("notification_settings_null");
        // The queue sees exactly the events published after `version`, the state
        // answered below (newer than or equal to the one `me` was authenticated in).
        let (queue_id, version) = c.hub.register(me.id, queue);
        let me = version.user(me.id).ok_or_else(ApiError::internal)?;
        let opts = RegisterOptions {
            fetch_event_types,
            client_gravatar,
            include_subscribers,
            slim_presence,
            user_avatar_url_field_optional,
            include_deactivated_groups,
            user_settings_object,
            notification_settings_null,
            empty_topic_name,
            longpoll_timeout_secs: LONGPOLL_TIMEOUT_SECS,
            realm_url: version.url(c.server_url).to_owned(),
            linkifier_url_template,
            max_file_upload_size_mib,
        };
        let wants_presence = opts
            .fetch_event_types
            .as_ref()
            .is_none_or(|t| t.contains("presence"));
        let state = version.register_state(me, &opts);
        let mut body = Map::new();
        body.insert("queue_id".into(), queue_id.into());
        body.insert("last_event_id".into(), (-1).into());
        body.extend(state);
        version.register_message_state(&store, me, empty_topic_name, &mut body)?;
        if wants_presence {
            // Read after the queue exists: a ping in between is in both (harmless for
            // presence), never in neither.
            let presence = c.hub.presence();
            let now_ms = presence.now_ms();
            let q = PresenceQuery {
                slim: slim_presence,
                last_update_id: None,
                history_limit_days: presence_history_limit_days,
            };
            let listing = presence.listing(&version, q, now_ms.div_euclid(1000));
            let presences: Value =
                serde_json::from_slice(&listing.presences).map_err(|_| ApiError::internal())?;
            body.insert("presences".into(), presences);
            body.insert("server_timestamp".into(), (now_ms as f64 / 1000.0).into());
            body.insert(
                "presence_last_update_id".into(),
                listing.last_update_id.into(),
            );
        }
        Ok(Outcome::read(body))
    })
    .await
}

/// # `GET /events`
///
/// The answer is written as bytes (`result`, `msg`, `queue_id` when this poll
/// registered the queue, `events`, then any ignored parameters): the events come
/// encoded from the hub, most of them copies of one encoding shared by every queue.
pub async fn get_events(req: ApiRequest) -> ApiResponse {
    let user_id = req.caller()?;
    let (hub, p) = (req.hub, req.params);
    let queue_id = p.opt_str("queue_id");
    let dont_block = p.bool_or("dont_block", false)?;
    let last_event_id = p.opt_int("last_event_id")?;
    let version = hub.current();
    let me = version.user(user_id).ok_or_else(ApiError::internal)?;
    check_all_public_streams(me, p.bool_or("all_public_streams", false)?)?;
    let encode_failed = |_| ApiError::internal();
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(br#"{"result":"success","msg":"","#);
    let events = match queue_id {
        Some(queue_id) => {
            if last_event_id.is_none() {
                return Err(ApiError::missing("last_event_id"));
            }
            drop(version);
            hub.poll_events(user_id, &queue_id, last_event_id, dont_block)
                .await?
        }
        None if dont_block => {
            let (queue_id, _) = hub.register(user_id, queue_options(&p)?);
            let events = hub.poll_events(user_id, &queue_id, None, true).await?;
            body.extend_from_slice(br#""queue_id":"#);
            serde_json::to_writer(&mut body, &queue_id).map_err(encode_failed)?;
            body.push(b',');
            events
        }
        None => return Err(ApiError::missing("queue_id")),
    };
    body.extend_from_slice(br#""events":"#);
    body.extend_from_slice(&events);
    let ignored = p.unused();
    if !ignored.is_empty() {
        body.extend_from_slice(br#","ignored_parameters_unsupported":"#);
        serde_json::to_writer(&mut body, &ignored).map_err(encode_failed)?;
    }
    body.push(b'}');
    Ok(HttpResponse::Ok()
        .insert_header(crate::api::json_content_type())
        .body(body))
}

/// # `DELETE /events`
pub async fn delete_events(req: ApiRequest) -> ApiResponse {
    let user_id = req.caller()?;
    let (hub, p) = (req.hub, req.params);
    let queue_id = p.str("queue_id")?;
    hub.delete(user_id, &queue_id)?;
    Ok(success(with_ignored(Map::new(), p.unused())))
}

//! Incoming webhooks: `POST /api/v1/external/<integration>`, as Zulip's `webhook_view`
//! and `check_send_webhook_message` serve them.
//!
//! The bot authenticates with its key in the URL (`api_key=`), or with Basic
//! credentials. The integration (`crate::integrations`, a pure function) turns the
//! service's request into a topic and Markdown on this worker; the message is then an
//! ordinary send (`Realm::decide_send` through the realm actor: durable before
//! `success`, with its events and unread counts) to the channel the URL names
//! (`stream=`, a name or an id; `topic=` overrides the integration's topic), or, with
//! no channel, a direct message to the bot's owner. `only_events` / `exclude_events`
//! (JSON lists of shell patterns) filter by the integration's event type.

use actix_web::{web, HttpMessage, HttpRequest};
use serde_json::Map;

use super::error::not_found_error;
use super::middleware::logging::LoggedUser;
use super::{ApiRequest, ApiResponse, Credentials};
use crate::error::{ApiError, ErrorCode};
use crate::integrations::{self, glob_match, HookError, HookOutcome, HookRequest, Integration};
use crate::realm::messages::send::{normalize_body, normalize_topic, Addressee, ChannelRef};
use crate::realm::Realm;

/// # `POST /api/v1/external/{integration_name}`
pub async fn incoming(
    mut req: ApiRequest,
    http: HttpRequest,
    path: web::Path<String>,
) -> ApiResponse {
    // An unknown integration is an unknown URL, whatever the credentials.
    let integration = integrations::find(&path).ok_or_else(not_found_error)?;
    authenticate(&mut req, &http)?;
    let store = req.message_store().await?;

    let p = &req.params;
    let unquote = |v: String| {
        if integration.unquote_params {
            percent_encoding::percent_decode_str(&v)
                .decode_utf8_lossy()
                .into_owned()
        } else {
            v
        }
    };
    let stream = p.opt_str("stream").map(unquote);
    let user_topic = p.opt_str("topic").map(unquote);
    // The service's headers, its credentials aside: an integration has no use for them.
    let headers: Vec<(String, String)> = http
        .headers()
        .iter()
        .filter(|(name, _)| {
            *name != actix_web::http::header::AUTHORIZATION
                && *name != actix_web::http::header::COOKIE
        })
        .filter_map(|(name, value)| {
            value
                .to_str()
                .ok()
                .map(|v| (name.as_str().to_owned(), v.to_owned()))
        })
        .collect();
    let body = req.raw_body.as_deref().unwrap_or_default();
    let param = |name: &str| p.opt_str(name);
    let hook = HookRequest {
        headers: &headers,
        body,
        param: &param,
    };
    let outcome = (integration.handle)(&hook).map_err(|e| {
        if let HookError::MissingHeader(header) = &e {
            let (display, header) = (integration.display, header.to_string());
            super::messages::notify_bot_owner(&req, |bot_email| {
                missing_header_notice(bot_email, display, &path, &header)
            });
        }
        hook_error(e, integration)
    })?;
    let only = p.opt_str_list("only_events")?;
    let exclude = p.opt_str_list("exclude_events")?;
    let messages = match outcome {
        HookOutcome::Send(message) => vec![message],
        HookOutcome::SendAll(messages) => messages,
        HookOutcome::Nothing => Vec::new(),
    };
    let wanted = |event: &Option<String>| match event {
        Some(event) => {
            only.as_ref()
                .is_none_or(|only| only.iter().any(|pat| glob_match(pat, event)))
                && !exclude
                    .as_ref()
                    .is_some_and(|ex| ex.iter().any(|pat| glob_match(pat, event)))
        }
        None => true,
    };
    let client = format!("Zulip{}Webhook", integration.display);
    for message in messages.into_iter().filter(|m| wanted(&m.event)) {
        let topic = user_topic.clone().unwrap_or(message.topic);
        let content = message.content;
        let stream = stream.clone();
        let client = client.clone();
        let store = store.clone();
        let sent = req
            .write(
                move |version, me, _| {
                    let to = match &stream {
                        Some(s) => Addressee::Channel {
                            channel: channel_ref(s),
                            topic: normalize_topic(version, &topic)?,
                        },
                        // Zulip's webhooks tell the bot's owner when no channel is
                        // named (a user's own key: the user).
                        None => Addressee::Direct {
                            ids: vec![me.bot_owner_id.unwrap_or(me.id) as i64],
                            emails: Vec::new(),
                        },
                    };
                    let content = normalize_body(&content)?;
                    // Messages from integrations are unread for their sender, too.
                    version.send_request(&store, to, content, client, false)
                },
                Realm::decide_send,
            )
            .await;
        match sent {
            Ok(_) => {}
            // Zulip answers success: the service cannot create the channel, and
            // retrying would not help. The bot's owner is told.
            Err(e) if e.code == ErrorCode::StreamDoesNotExist => {
                super::messages::remind_bot_owner(&req, &e);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    req.reply(Map::new())
}

/// The key in the URL (`api_key`), else Basic credentials, else Zulip's
/// `Missing 'api_key' argument`. A key in the URL is looked up as Zulip's
/// `access_user_by_api_key` does, with its `INVALID_API_KEY` answers.
fn authenticate(req: &mut ApiRequest, http: &HttpRequest) -> Result<(), ApiError> {
    match req.params.opt_str("api_key") {
        Some(key) => {
            let version = req.hub.current();
            let user = version.user_by_api_key(&key)?;
            let logged = LoggedUser::default();
            http.extensions_mut().insert(logged.clone());
            req.credentials = Ok(Credentials {
                email: user.delivery_email.clone(),
                api_key: key.trim().to_owned(),
                session: None,
                logged,
            });
        }
        None if http
            .headers()
            .contains_key(actix_web::http::header::AUTHORIZATION) => {}
        None => return Err(ApiError::missing("api_key")),
    }
    req.caller().map(|_| ())
}

/// The notice to a bot's owner when a post to `/api/v1/external/<name>` lacked the
/// service's event header (Zulip's `MISSING_EVENT_HEADER_MESSAGE`, in hearth's words).
fn missing_header_notice(bot_email: &str, display: &str, name: &str, header: &str) -> String {
    format!(
        "Your bot `{bot_email}` was sent a request at `/api/v1/external/{name}` without the \
         HTTP header `{header}`, which is how {display} names its events, so nothing was \
         posted. The service is likely set up with another integration's URL, or is a \
         version that does not send that header."
    )
}

/// `stream=`: an id when it is all digits, else a name (Zulip's `isdecimal` test).
fn channel_ref(raw: &str) -> ChannelRef {
    match raw.parse::<i64>() {
        Ok(id) if raw.bytes().all(|b| b.is_ascii_digit()) => ChannelRef::Id(id),
        _ => ChannelRef::Name(raw.to_owned()),
    }
}

/// Zulip's answers to an integration's refusal (`zerver/lib/exceptions.py`,
/// `zerver/lib/webhooks/common.py`).
fn hook_error(e: HookError, integration: &Integration) -> ApiError {
    match e {
        HookError::MissingHeader(header) => ApiError::new(
            400,
            ErrorCode::MissingHttpEventHeader,
            format!("Missing the HTTP event header '{header}'"),
        )
        .with("header", header),
        // A 200: the service did nothing wrong, and must not retry.
        HookError::Unsupported(event) => ApiError::new(
            200,
            ErrorCode::UnsupportedWebhookEventType,
            format!(
                "The '{event}' event isn't currently supported by the {} webhook; ignoring",
                integration.display
            ),
        )
        .with("webhook_name", integration.display)
        .with("event_type", event),
        HookError::Anomalous => ApiError::new(
            400,
            ErrorCode::AnomalousWebhookPayload,
            format!(
                "Unable to parse request: Did {} generate this event?",
                integration.display
            ),
        )
        .with("webhook_name", integration.display),
        HookError::MalformedJson => ApiError::new(400, ErrorCode::InvalidJson, "Malformed JSON"),
        HookError::MissingParam(name) => ApiError::missing(name),
        HookError::Invalid(msg) => ApiError::bad_request(msg),
    }
}

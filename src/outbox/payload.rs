//! What an outgoing webhook sends and how its answer is read: Zulip's formats
//! (`zerver/lib/outgoing_webhook.py`), as pure functions of the published realm.
//!
//! - Zulip's own interface (1): a JSON body `{data, message, bot_email, bot_full_name,
//!   token, trigger}`, `message` as Zulip's `MessageDict` with raw Markdown content and
//!   `rendered_content`. The answer is a JSON object: `response_not_required: true`
//!   sends nothing, `content` (or the older `response_string`) is sent as the bot's
//!   reply; `""` is the older botservers' "nothing to say".
//! - Slack's interface (2): the form body of Slack's outgoing webhooks; the answer's
//!   `text` is the reply. Direct messages are not delivered in this format.

use serde_json::{json, Value};

use crate::realm::bot_services::{Delivery, OutgoingService, SLACK_INTERFACE};
use crate::realm::messages::json::MessageView;
use crate::realm::messages::{Message, Recipient};
use crate::realm::{Realm, User};

/// The request a delivery makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Json(Value),
    Form(Vec<(String, String)>),
    /// No request: the failure notice to post instead.
    NotSent(&'static str),
}

/// The request for `d` of message `m` to `bot`'s service.
pub fn request(
    realm: &Realm,
    d: &Delivery,
    m: &Message,
    bot: &User,
    service: &OutgoingService,
) -> Request {
    let view = MessageView {
        apply_markdown: false,
        client_gravatar: false,
        allow_empty_topic_name: true,
    };
    if service.interface == SLACK_INTERFACE {
        let Recipient::Channel { channel_id, .. } = &m.recipient else {
            return Request::NotSent("Slack outgoing webhooks don't support direct messages.");
        };
        let sender_name = realm
            .user(m.sender_id)
            .map(|u| u.full_name.clone())
            .unwrap_or_default();
        let channel_name = realm
            .channel(*channel_id)
            .map(|c| c.name.clone())
            .unwrap_or_default();
        let host = url::Url::parse(&realm.settings.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| realm.settings.fake_email_domain.clone());
        let pairs = [
            ("token", service.token.clone()),
            ("team_id", format!("T{}", realm.settings.subdomain)),
            ("team_domain", host),
            ("channel_id", format!("C{channel_id}")),
            ("channel_name", channel_name),
            ("thread_ts", m.timestamp.to_string()),
            ("timestamp", m.timestamp.to_string()),
            ("user_id", format!("U{}", m.sender_id)),
            ("user_name", sender_name),
            ("text", m.content.clone()),
            ("trigger_word", d.trigger.name().to_owned()),
            ("service_id", d.bot_id.to_string()),
        ];
        return Request::Form(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    }
    let mut message = realm.message_json(m, view, None);
    message.insert("rendered_content".into(), m.rendered_content.clone().into());
    Request::Json(json!({
        "data": m.content,
        "message": message,
        "bot_email": realm.api_email(bot),
        "bot_full_name": bot.full_name,
        "token": service.token,
        "trigger": d.trigger.name(),
    }))
}

/// What a service's successful (2xx) answer asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Nothing to send.
    Nothing,
    /// The bot's reply (Markdown, not blank).
    Reply(String),
    /// The answer cannot be read: Zulip's error text.
    Invalid(&'static str),
}

/// Reads a 2xx answer's body (Zulip's `process_success_response`).
pub fn answer(interface: u8, body: &str) -> Answer {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return Answer::Invalid("Invalid JSON in response");
    };
    if v == Value::String(String::new()) {
        return Answer::Nothing;
    }
    let Value::Object(o) = v else {
        return Answer::Invalid("Invalid response format");
    };
    let content = if interface == SLACK_INTERFACE {
        o.get("text").map(text_of)
    } else if o
        .get("response_not_required")
        .is_some_and(|v| v.as_bool().unwrap_or(!v.is_null()))
    {
        None
    } else if let Some(s) = o.get("response_string") {
        Some(text_of(s))
    } else {
        o.get("content").map(text_of)
    };
    match content {
        Some(c) if !c.trim().is_empty() => Answer::Reply(c),
        _ => Answer::Nothing,
    }
}

/// Python's `str()` of a JSON value: strings as they are, the rest as JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Python's `repr()` of a response's bytes (`b'...'`), as Zulip quotes a payload in the
/// owner's notice; at most 1,000 bytes of it.
pub fn bytes_repr(body: &[u8]) -> String {
    let cut = &body[..body.len().min(1000)];
    let quote = if cut.contains(&b'\'') && !cut.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = format!("b{quote}");
    for &b in cut {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            b if b as char == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_zulip_reads_them() {
        let g = crate::realm::bot_services::GENERIC_INTERFACE;
        assert_eq!(
            answer(g, r#"{"content": "hi"}"#),
            Answer::Reply("hi".into())
        );
        assert_eq!(
            answer(g, r#"{"response_string": 5}"#),
            Answer::Reply("5".into())
        );
        assert_eq!(
            answer(g, r#"{"response_not_required": true, "content": "x"}"#),
            Answer::Nothing
        );
        assert_eq!(answer(g, r#"{"content": "  "}"#), Answer::Nothing);
        assert_eq!(answer(g, r#""""#), Answer::Nothing);
        assert_eq!(answer(g, "{}"), Answer::Nothing);
        assert_eq!(
            answer(g, "nope"),
            Answer::Invalid("Invalid JSON in response")
        );
        assert_eq!(answer(g, "[1]"), Answer::Invalid("Invalid response format"));
        assert_eq!(
            answer(SLACK_INTERFACE, r#"{"text": "pong", "content": "no"}"#),
            Answer::Reply("pong".into())
        );
    }

    #[test]
    fn payloads_are_quoted_as_python_bytes() {
        assert_eq!(bytes_repr(b"oops\n"), "b'oops\\n'");
        assert_eq!(bytes_repr(b"it's"), "b\"it's\"");
        assert_eq!(bytes_repr(&[0xff, b'a']), "b'\\xffa'");
    }
}

//! Incoming webhooks: what a service's notification becomes as a message.
//!
//! `POST /api/v1/external/<name>` (`api/webhooks.rs`) authenticates the bot, then hands
//! the request's headers, body and parameters to the integration named `<name>` in
//! `INTEGRATIONS`. Each integration is a pure function in a module of its own: it
//! reads the service's payload and answers a topic and Markdown, nothing to send, or
//! a `HookError`. It knows nothing of the realm, of HTTP or of storage; the handler
//! sends what it answers as an ordinary message.
//!
//! The topics are the ones Zulip's integrations use (people mute and filter by them);
//! the bodies carry the same facts in the same layout: who did what, links, commit
//! lists with short ids, alert states.

pub mod alertmanager;
pub mod generic_json;
pub mod gitea;
pub mod github;
pub mod gitlab;
pub mod grafana;
pub mod jira;
pub mod sentry;
pub mod slack_incoming;
pub mod uptimerobot;

mod git;

use serde_json::Value;

/// What an integration is given: the request as the service sent it.
pub struct HookRequest<'a> {
    /// Header names in lower case, values as sent (those that are not visible ASCII
    /// left out).
    pub headers: &'a [(String, String)],
    /// The body, unparsed.
    pub body: &'a [u8],
    /// A parameter of the query string or of a form body, by name.
    pub param: &'a dyn Fn(&str) -> Option<String>,
}

impl HookRequest<'_> {
    /// A header's value, by name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The header that names the event, which the service always sends.
    pub fn event_header(&self, name: &'static str) -> Result<&str, HookError> {
        self.header(name).ok_or(HookError::MissingHeader(name))
    }

    /// The body as JSON (`Malformed JSON` otherwise).
    pub fn json(&self) -> Result<Value, HookError> {
        serde_json::from_slice(self.body).map_err(|_| HookError::MalformedJson)
    }

    /// The topic the webhook URL names (`topic=`), if any.
    pub fn user_topic(&self) -> Option<String> {
        (self.param)("topic")
    }

    /// Whether the `Content-Type` is this media type (parameters aside).
    pub fn content_type_is(&self, media: &str) -> bool {
        self.header("content-type").is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
        })
    }
}

/// A message to send: its topic (used when the URL names a channel), its Markdown,
/// and the event type `only_events` / `exclude_events` are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMessage {
    pub topic: String,
    pub content: String,
    pub event: Option<String>,
}

/// What an integration answers for a request it understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    Send(HookMessage),
    /// Several messages, sent in order (an alert notification that groups alerts of
    /// several hosts or states).
    SendAll(Vec<HookMessage>),
    /// A valid notification that is not worth a message (an ignored action, a branch
    /// the URL filters out, an empty Slack message).
    Nothing,
}

impl HookOutcome {
    pub fn send(topic: impl Into<String>, content: impl Into<String>, event: &str) -> Self {
        HookOutcome::Send(HookMessage {
            topic: topic.into(),
            content: content.into(),
            event: Some(event.to_owned()),
        })
    }
}

/// Why an integration sends nothing; the handler renders Zulip's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookError {
    /// The HTTP header that names the event is missing.
    MissingHeader(&'static str),
    /// An event the service sends that this integration does not handle.
    Unsupported(String),
    /// The payload lacks what the service always sends.
    Anomalous,
    /// The body is not JSON.
    MalformedJson,
    /// A required parameter is missing (`Missing 'payload' argument`).
    MissingParam(&'static str),
    /// A body the integration cannot use, with Zulip's message for it.
    Invalid(&'static str),
}

/// An integration: its URL name, the name its errors and client use, its function,
/// and the event types it turns into messages (for the README and the tests).
pub struct Integration {
    /// `<name>` of `/api/v1/external/<name>`.
    pub name: &'static str,
    /// Zulip's name for it: `webhook_name` in errors, `Zulip<display>Webhook` as client.
    pub display: &'static str,
    pub handle: fn(&HookRequest<'_>) -> Result<HookOutcome, HookError>,
    pub events: &'static [&'static str],
    /// The service escapes the URL's parameters twice (Jira): `stream` and `topic` are
    /// percent-decoded once more.
    pub unquote_params: bool,
}

/// Every integration hearth serves.
pub static INTEGRATIONS: &[Integration] = &[
    Integration {
        name: "json",
        display: "JSON",
        handle: generic_json::handle,
        events: &["any JSON body"],
        unquote_params: false,
    },
    Integration {
        name: "slack_incoming",
        display: "SlackIncoming",
        handle: slack_incoming::handle,
        events: &["text", "blocks", "attachments"],
        unquote_params: false,
    },
    Integration {
        name: "github",
        display: "GitHub",
        handle: github::handle,
        events: github::EVENTS,
        unquote_params: false,
    },
    Integration {
        name: "gitlab",
        display: "GitLab",
        handle: gitlab::handle,
        events: gitlab::EVENTS,
        unquote_params: false,
    },
    Integration {
        name: "gitea",
        display: "Gitea",
        handle: gitea::handle_gitea,
        events: gitea::EVENTS,
        unquote_params: false,
    },
    Integration {
        name: "forgejo",
        display: "Forgejo",
        handle: gitea::handle_forgejo,
        events: gitea::EVENTS,
        unquote_params: false,
    },
    Integration {
        name: "alertmanager",
        display: "Alertmanager",
        handle: alertmanager::handle,
        events: &["firing", "resolved"],
        unquote_params: false,
    },
    Integration {
        name: "grafana",
        display: "Grafana",
        handle: grafana::handle,
        events: &[
            "firing", "resolved", "alerting", "ok", "no_data", "pending", "paused",
        ],
        unquote_params: false,
    },
    Integration {
        name: "sentry",
        display: "Sentry",
        handle: sentry::handle,
        events: &[
            "issue_created",
            "issue_resolved",
            "issue_assigned",
            "issue_ignored",
            "issue_unresolved",
            "issue_archived",
            "event",
            "legacy",
        ],
        unquote_params: false,
    },
    Integration {
        name: "jira",
        display: "Jira",
        handle: jira::handle,
        events: jira::EVENTS,
        unquote_params: true,
    },
    Integration {
        name: "uptimerobot",
        display: "UptimeRobot",
        handle: uptimerobot::handle,
        events: &["down", "up"],
        unquote_params: false,
    },
];

/// The integration a URL names.
pub fn find(name: &str) -> Option<&'static Integration> {
    INTEGRATIONS.iter().find(|i| i.name == name)
}

/// Whether `name` matches a shell-style pattern (`*`, `?`, `[...]`, `[!...]`), as
/// `only_events` and `exclude_events` are matched.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    glob_at(&p, &n)
}

fn glob_at(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|skip| glob_at(&p[1..], &n[skip..])),
        Some('?') => !n.is_empty() && glob_at(&p[1..], &n[1..]),
        Some('[') => match (class_end(p), n.first()) {
            (Some(end), Some(c)) => {
                class_matches(&p[1..end], *c) && glob_at(&p[end + 1..], &n[1..])
            }
            (Some(_), None) => false,
            // An unclosed `[` is a literal.
            (None, Some('[')) => glob_at(&p[1..], &n[1..]),
            (None, _) => false,
        },
        Some(c) => n.first() == Some(c) && glob_at(&p[1..], &n[1..]),
    }
}

/// Where the class that starts at `p[0] == '['` closes (a `]` right after `[` or
/// `[!` is a member).
fn class_end(p: &[char]) -> Option<usize> {
    let mut i = 1;
    if p.get(i) == Some(&'!') {
        i += 1;
    }
    if p.get(i) == Some(&']') {
        i += 1;
    }
    (i..p.len()).find(|&j| p[j] == ']')
}

fn class_matches(class: &[char], c: char) -> bool {
    let (negated, members) = match class.split_first() {
        Some(('!', rest)) => (true, rest),
        _ => (false, class),
    };
    let mut found = false;
    let mut i = 0;
    while i < members.len() {
        if i + 2 < members.len() && members[i + 1] == '-' {
            found |= members[i] <= c && c <= members[i + 2];
            i += 3;
        } else {
            found |= members[i] == c;
            i += 1;
        }
    }
    found != negated
}

// ---- reading payloads ----------------------------------------------------------------

/// The string at a JSON pointer; a payload without it is not the service's.
pub(crate) fn s<'v>(v: &'v Value, pointer: &str) -> Result<&'v str, HookError> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .ok_or(HookError::Anomalous)
}

/// The string at a JSON pointer, if there is one (absent, null or another type: none).
pub(crate) fn opt_s<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A non-empty string at a JSON pointer, if there is one.
pub(crate) fn nonempty<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    opt_s(v, pointer).filter(|t| !t.trim().is_empty())
}

/// The integer at a JSON pointer.
pub(crate) fn int(v: &Value, pointer: &str) -> Result<i64, HookError> {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .ok_or(HookError::Anomalous)
}

/// The boolean at a JSON pointer (absent: false).
pub(crate) fn flag(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).and_then(Value::as_bool).unwrap_or(false)
}

/// The items of the list at a JSON pointer (absent or not a list: none).
pub(crate) fn items<'v>(v: &'v Value, pointer: &str) -> &'v [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Text quoted as a block (`~~~ quote`), after a blank line.
pub(crate) fn quoted(text: &str) -> String {
    format!("\n\n~~~ quote\n{}\n~~~", text.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_fnmatch_does() {
        for (pattern, name, want) in [
            ("push_commits", "push_commits", true),
            ("push_*", "push_commits", true),
            ("push_*", "push_tags", true),
            ("*pull_request", "opened_pull_request", true),
            ("*pull_request", "pull_request_review", false),
            ("issue?", "issues", true),
            ("issue?", "issue", false),
            ("[io]ssues", "issues", true),
            ("[!io]ssues", "issues", false),
            ("[a-j]ssues", "issues", true),
            ("push", "push_commits", false),
            ("[", "[", true),
        ] {
            assert_eq!(glob_match(pattern, name), want, "{pattern} {name}");
        }
    }

    #[test]
    fn every_integration_is_found_by_its_name_once() {
        for i in INTEGRATIONS {
            assert!(std::ptr::eq(find(i.name).unwrap(), i), "{}", i.name);
        }
        assert!(find("nonexistent").is_none());
    }
}

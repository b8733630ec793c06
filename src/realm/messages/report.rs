//! `POST /messages/{message_id}/report` (Zulip's `report_message_backend` and
//! `send_message_report`): a user asks the moderators to look at a message. The
//! Notification Bot posts the report to the realm's `moderation_request_channel`, in
//! the reported user's topic. The wording of the report is hearth's own; what it says
//! is what Zulip's says: who reported, which message and where, who sent it, the
//! reason, the reporter's notes and the message's text.

use super::moves::{silent_mention, NOTIFICATION_BOT_ID};
use super::{MessageChange, Recipient};
use crate::error::{ApiError, ApiResult};
use crate::realm::{Change, Cx, Decided, Realm, User};

/// Zulip's `Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH`.
pub const MAX_REPORT_DESCRIPTION_LENGTH: usize = 1000;

/// Zulip's `MAX_MESSAGE_LENGTH`.
const MAX_MESSAGE_LENGTH: usize = 10_000;

/// The most of the reported message's text the report quotes (Zulip's
/// `MAX_REPORT_MESSAGE_SNIPPET_LENGTH`: room for the notes and the rest).
const MAX_REPORT_SNIPPET_LENGTH: usize = MAX_MESSAGE_LENGTH - MAX_REPORT_DESCRIPTION_LENGTH - 500;

/// Zulip's `Realm.REPORT_MESSAGE_REASONS`: the `report_type`s and their labels.
pub const REPORT_TYPES: [(&str, &str); 5] = [
    ("spam", "Spam"),
    ("harassment", "Harassment"),
    ("inappropriate", "Inappropriate content"),
    ("norms", "Violates community norms"),
    ("other", "Other reason"),
];

/// A report, parsed on the worker: `report_type` is one of `REPORT_TYPES`, the
/// description within its limit.
#[derive(Debug, Clone)]
pub struct ReportMessage {
    pub message_id: i64,
    pub report_type: String,
    pub description: String,
}

/// The report's topic: one per reported user (Zulip's `MESSAGE_REPORT_TOPIC_NAME`).
pub fn report_topic(reported: &User) -> String {
    format!("{}'s moderation requests", reported.full_name)
}

/// Zulip's `truncate_content`: at most `max` characters, the end marked.
fn truncate(content: &str, max: usize, marker: &str) -> String {
    if content.chars().count() <= max {
        return content.to_owned();
    }
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = content.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

impl Realm {
    /// `POST /messages/{message_id}/report`: Zulip's checks in its order (an `other`
    /// report needs a description, the realm needs a moderation channel, the message
    /// must be one `me` may read), then the Notification Bot's report.
    pub fn decide_report_message(
        &self,
        me: &User,
        q: ReportMessage,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        if q.report_type == "other" && q.description.is_empty() {
            return Err(ApiError::bad_request("An explanation is required."));
        }
        let channel = self
            .properties
            .moderation_request_channel
            .and_then(|id| self.channel(id))
            .ok_or_else(|| {
                ApiError::bad_request("Message reporting is not enabled in this organization.")
            })?;
        let rows = cx.rows()?;
        let (m, _) = self.access_message(rows, me, q.message_id)?;
        let reported = self
            .user(m.sender_id)
            .cloned()
            .unwrap_or_else(|| super::moves::NOTIFICATION_BOT.clone());
        let label = REPORT_TYPES
            .iter()
            .find(|(k, _)| *k == q.report_type)
            .map_or(q.report_type.as_str(), |(_, l)| l);
        let sender = silent_mention(&reported);
        let whence = match &m.recipient {
            Recipient::Channel { channel_id, topic } => {
                let name = self.channel(*channel_id).map_or("", |c| c.name.as_str());
                format!("#**{name}>{topic}@{}**, sent by {sender}", m.id)
            }
            Recipient::Direct { users } => {
                let others: Vec<String> = users
                    .iter()
                    .filter(|u| **u != m.sender_id)
                    .filter_map(|u| self.user(*u))
                    .map(silent_mention)
                    .collect();
                let to = match others.len() {
                    0 => sender.clone(),
                    1 => others[0].clone(),
                    n => format!("{} and {}", others[..n - 1].join(", "), others[n - 1]),
                };
                format!("a direct message from {sender} to {to}")
            }
        };
        let quoted = truncate(
            &m.content,
            MAX_REPORT_SNIPPET_LENGTH,
            "\n[message truncated]",
        );
        let notes = if q.description.is_empty() {
            "*None.*".to_owned()
        } else {
            let fence = fence_for(&q.description);
            format!("\n{fence}quote\n{}\n{fence}", q.description)
        };
        let fence = fence_for(&m.content);
        let content = format!(
            "{} asks the moderators to review {whence}.\n\
             - Reason: **{label}**\n\
             - Notes: {notes}\n\n\
             {fence} spoiler **The reported message**\n{quoted}\n{fence}",
            silent_mention(me),
        );
        let message = self.bot_message(
            self.messages.next_id,
            channel.id,
            report_topic(&reported),
            content,
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

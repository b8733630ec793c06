//! `jira`: Jira's (Cloud and Server) system webhooks. The event is the payload's
//! `webhookEvent`: `jira:issue_created`, `jira:issue_updated` (edits, transitions,
//! comments, told apart by `issue_event_type_name` and the changelog),
//! `jira:issue_deleted`, `comment_created`, `comment_updated`, `comment_deleted`; the
//! types `only_events` / `exclude_events` match. Topic (Zulip's): `KEY-1: summary`.
//! Jira escapes URL parameters twice, so `stream` and `topic` are decoded once more.

use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

use super::{items, nonempty, opt_s, s, HookError, HookOutcome, HookRequest};

/// The event types this integration sends messages for.
pub const EVENTS: &[&str] = &[
    "jira:issue_created",
    "jira:issue_updated",
    "jira:issue_deleted",
    "comment_created",
    "comment_updated",
    "comment_deleted",
];

/// Events Jira sends that are not worth a message.
const IGNORED_EVENTS: &[&str] = &[
    "attachment_created",
    "issuelink_created",
    "issuelink_deleted",
    "jira:version_released",
    "jira:worklog_updated",
    "sprint_closed",
    "sprint_started",
    "worklog_created",
    "worklog_updated",
];

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    let event = match opt_s(&p, "/webhookEvent") {
        Some(e) => e,
        None if p.get("transition").is_some() => "jira:issue_updated",
        None => return Err(HookError::Anomalous),
    };
    if IGNORED_EVENTS.contains(&event) {
        return Ok(HookOutcome::Nothing);
    }
    let j = Jira { p: &p };
    let content = match event {
        "jira:issue_created" => j.created()?,
        "jira:issue_deleted" => j.deleted(),
        "jira:issue_updated" => j.updated()?,
        "comment_created" => j.comment("commented on")?,
        "comment_updated" => j.comment("edited a comment on")?,
        "comment_deleted" => j.comment("deleted a comment from")?,
        other => return Err(HookError::Unsupported(other.to_owned())),
    };
    Ok(HookOutcome::send(
        format!("{}: {}", j.key(), j.summary()),
        content,
        event,
    ))
}

struct Jira<'a> {
    p: &'a Value,
}

impl Jira<'_> {
    /// `KEY-1`; for the old comment events without an issue, Jira's internal number.
    fn key(&self) -> String {
        match opt_s(self.p, "/issue/key") {
            Some(key) => key.to_owned(),
            None => opt_s(self.p, "/comment/self")
                .and_then(|url| url.rsplit('/').nth(2))
                .unwrap_or("?")
                .to_owned(),
        }
    }

    fn summary(&self) -> String {
        match self.p.get("issue") {
            Some(_) => opt_s(self.p, "/issue/fields/summary")
                .unwrap_or_default()
                .to_owned(),
            None => "Upgrade Jira to get the issue title here.".to_owned(),
        }
    }

    fn author(&self) -> &str {
        opt_s(self.p, "/user/displayName").unwrap_or("Someone")
    }

    /// `[KEY-1: summary](https://jira/browse/KEY-1)`: the page is guessed from the
    /// issue's REST address.
    fn issue_link(&self) -> String {
        let key = self.key();
        let text = format!("{key}: {}", self.summary());
        let base = opt_s(self.p, "/issue/self")
            .and_then(|url| url.find("/rest/api/").map(|at| &url[..at]));
        match base {
            Some(base) => format!("[{text}]({base}/browse/{key})"),
            None => text,
        }
    }

    fn assignee(&self) -> Option<&str> {
        nonempty(self.p, "/issue/fields/assignee/displayName")
            .or_else(|| nonempty(self.p, "/issue/fields/assignee/emailAddress"))
    }

    fn created(&self) -> Result<String, HookError> {
        let priority = opt_s(self.p, "/issue/fields/priority/name").unwrap_or("none");
        Ok(format!(
            "{} created {}:\n\n* **Priority**: {priority}\n* **Assignee**: {}",
            self.author(),
            self.issue_link(),
            self.assignee().unwrap_or("no one")
        ))
    }

    fn deleted(&self) -> String {
        let link = self.issue_link();
        let stop = if self.summary().ends_with(|c: char| c.is_ascii_punctuation()) {
            ""
        } else {
            "."
        };
        format!("{} deleted {link}{stop}", self.author())
    }

    fn assignee_blurb(&self) -> String {
        self.assignee()
            .map(|a| format!(" (assigned to **{a}**)"))
            .unwrap_or_default()
    }

    fn updated(&self) -> Result<String, HookError> {
        let p = self.p;
        let sub_event = match opt_s(p, "/issue_event_type_name").filter(|e| !e.is_empty()) {
            Some(e) => e,
            None if p.get("comment").is_some() => "issue_commented",
            None if p.get("transition").is_some() => "issue_transited",
            None => "",
        };
        if sub_event.contains("comment") {
            let verb = match sub_event {
                "issue_commented" => "commented on",
                "issue_comment_edited" => "edited a comment on",
                _ => "deleted a comment from",
            };
            let author = nonempty(p, "/comment/author/displayName").unwrap_or(self.author());
            let head = format!(
                "{author} {verb} {}{}",
                self.issue_link(),
                self.assignee_blurb()
            );
            return Ok(match nonempty(p, "/comment/body") {
                Some(body) => format!("{head}:\n\n``` quote\n{}\n```", jira_markup(body)),
                None => format!("{head}."),
            });
        }
        let mut out = format!(
            "{} updated {}{}:\n",
            self.author(),
            self.issue_link(),
            self.assignee_blurb()
        );
        let changes = items(p, "/changelog/items");
        if !changes.is_empty() {
            for item in changes {
                let field = opt_s(item, "/field").unwrap_or("a field");
                out.push_str(&change_line(
                    field,
                    nonempty(item, "/fromString"),
                    nonempty(item, "/toString"),
                ));
            }
        } else if sub_event == "issue_transited" {
            out.push_str(&change_line(
                "status",
                nonempty(p, "/transition/from_status"),
                nonempty(p, "/transition/to_status"),
            ));
        }
        Ok(out.trim_end().to_owned())
    }

    fn comment(&self, verb: &str) -> Result<String, HookError> {
        let author = s(self.p, "/comment/author/displayName")?;
        let body = s(self.p, "/comment/body")?.replace("\\!", "!");
        Ok(format!(
            "{author} {verb} {}:\n\n``` quote\n{}\n```",
            self.issue_link(),
            jira_markup(&body)
        ))
    }
}

/// `* Changed status from **To Do** to **Done**`.
fn change_line(field: &str, from: Option<&str>, to: Option<&str>) -> String {
    let mut line = format!("\n* Changed {field}");
    if let Some(from) = from {
        line.push_str(&format!(" from **{from}**"));
    }
    if let Some(to) = to {
        line.push_str(&format!(" to **{to}**"));
    }
    line
}

/// Jira's wiki markup, the common part, as Markdown: `*bold*`, `{{mono}}`, `bq.`,
/// `{quote}`, `{noformat}` and `{code}` blocks, `[title|url]` and `[url]` links,
/// `[~user]` mentions (as the name, in bold).
fn jira_markup(text: &str) -> String {
    static RULES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            (r"\*([^*\n]+)\*", "**$1**"),
            (r"\{\{(.+?)\}\}", "`$1`"),
            (r"(?m)^bq\. (.*)$", "> $1"),
            (r"(?s)\{quote\}(.*?)\{quote\}", "~~~ quote\n$1\n~~~"),
            (r"(?s)\{noformat\}(.*?)\{noformat\}", "~~~\n$1\n~~~"),
            (r"(?s)\{code[^}\n]*\}(.*?)\{code\}", "~~~\n$1\n~~~"),
            (r"\[~([^\]]+)\]", "**$1**"),
            (r"\[([^|\]~]+)\|([^\]]+)\]", "[$1]($2)"),
            (r"\[(https?://[^|\]]+)\]", "[$1]($1)"),
        ]
        .into_iter()
        .filter_map(|(pattern, with)| Regex::new(pattern).ok().map(|re| (re, with)))
        .collect()
    });
    let mut out = text.to_owned();
    for (re, with) in RULES.iter() {
        out = re.replace_all(&out, *with).into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::jira_markup;

    #[test]
    fn jira_markup_becomes_markdown() {
        assert_eq!(
            jira_markup("*bold* and {{code}}, see [docs|https://example.com] or [~admin]"),
            "**bold** and `code`, see [docs](https://example.com) or **admin**"
        );
        assert_eq!(
            jira_markup("{code:java}int x;{code}\nbq. quoted"),
            "~~~\nint x;\n~~~\n> quoted"
        );
    }
}

//! `sentry`: Sentry's internal-integration webhooks (issue changes and alert-rule
//! events) and the legacy Webhooks plugin. Topics (Zulip's): the issue's or the
//! event's title; for the legacy plugin, the project's name. Event types:
//! `issue_created`, `issue_resolved`, `issue_assigned`, `issue_ignored`,
//! `issue_unresolved`, `issue_archived`, `event`, `legacy`.

use serde_json::Value;

use super::{nonempty, opt_s, s, HookError, HookOutcome, HookRequest};

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    let Some(data) = p.get("data").filter(|d| !d.is_null()) else {
        return legacy(&p);
    };
    if let Some(issue) = data.get("issue") {
        return issue_change(&p, issue);
    }
    if let Some(event) = data.get("event").or_else(|| data.get("error")) {
        return event_alert(data, event);
    }
    // Zulip names the event by the data's keys as Python prints a list of them.
    let keys: Vec<String> = data
        .as_object()
        .map(|m| m.keys().map(|k| format!("'{k}'")).collect())
        .unwrap_or_default();
    Err(HookError::Unsupported(format!("[{}]", keys.join(", "))))
}

/// Sentry's time (`2019-08-19T20:58:37.391000Z`) as `2019-08-19 20:58:37`.
fn plain_time(t: &str) -> String {
    t.split('.')
        .next()
        .unwrap_or(t)
        .trim_end_matches('Z')
        .replace('T', " ")
}

fn issue_change(p: &Value, issue: &Value) -> Result<HookOutcome, HookError> {
    let title = s(issue, "/title")?;
    let action = s(p, "/action")?;
    let actor = opt_s(p, "/actor/name").unwrap_or("Sentry");
    let assignee = match issue.get("assignedTo").filter(|a| !a.is_null()) {
        Some(a) if opt_s(a, "/type") == Some("team") => format!("team {}", s(a, "/name")?),
        Some(a) => s(a, "/name")?.to_owned(),
        None => "No one".to_owned(),
    };
    let linked = match nonempty(issue, "/web_url").or_else(|| nonempty(issue, "/permalink")) {
        Some(url) => format!("[{title}]({url})"),
        None => format!("**{title}**"),
    };
    let content = match action {
        "created" => {
            let mut lines = vec![
                format!("**level:** {}", s(issue, "/level")?),
                format!("**first seen:** {}", plain_time(s(issue, "/firstSeen")?)),
                format!("**assignee:** {assignee}"),
            ];
            if let Some(culprit) = nonempty(issue, "/culprit") {
                lines.insert(1, format!("**culprit:** {culprit}"));
            }
            format!(
                "New issue {linked} in {}:\n```quote\n{}\n```",
                opt_s(issue, "/project/name").unwrap_or("Sentry"),
                lines.join("\n")
            )
        }
        "resolved" => format!("Issue {linked} was resolved by **{actor}**."),
        "assigned" => format!("Issue {linked} was assigned to **{assignee}** by **{actor}**."),
        "ignored" | "archived" => format!("Issue {linked} was {action} by **{actor}**."),
        "unresolved" => format!("Issue {linked} was marked as unresolved by **{actor}**."),
        other => return Err(HookError::Unsupported(format!("issue {other}"))),
    };
    Ok(HookOutcome::send(
        title,
        content,
        &format!("issue_{action}"),
    ))
}

/// An event an alert rule (`data.triggered_rule`) or an error subscription sent.
fn event_alert(data: &Value, event: &Value) -> Result<HookOutcome, HookError> {
    let title = s(event, "/title")?;
    let linked = match nonempty(event, "/web_url") {
        Some(url) => format!("[{title}]({url})"),
        None => format!("**{title}**"),
    };
    let mut lines = vec![format!("**level:** {}", s(event, "/level")?)];
    if let Some(time) = nonempty(event, "/datetime") {
        lines.push(format!("**timestamp:** {}", plain_time(time)));
    }
    let kind = if event.get("exception").is_some() {
        if let Some(file) = nonempty(event, "/metadata/filename") {
            lines.push(format!("**filename:** {file}"));
        }
        if let Some(culprit) = nonempty(event, "/culprit") {
            lines.push(format!("**culprit:** {culprit}"));
        }
        "exception"
    } else {
        "message"
    };
    let rule = nonempty(data, "/triggered_rule");
    let mut content = format!(
        "**New {kind}:** {linked}\n```quote\n{}\n```",
        lines.join("\n")
    );
    if let Some(rule) = rule {
        content.push_str(&format!("\nAlert rule: {rule}"));
    }
    Ok(HookOutcome::send(title, content, "event"))
}

fn legacy(p: &Value) -> Result<HookOutcome, HookError> {
    let project = s(p, "/project_name")?;
    let level = s(p, "/level")?.to_uppercase();
    let message = opt_s(p, "/message").unwrap_or_default();
    let content = match nonempty(p, "/url") {
        Some(url) => format!("New [issue]({url}) (level: {level}):\n\n``` quote\n{message}\n```"),
        None => format!("New issue (level: {level}):\n\n``` quote\n{message}\n```"),
    };
    Ok(HookOutcome::send(project, content, "legacy"))
}

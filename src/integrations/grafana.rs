//! `grafana`: Grafana's webhook contact point. Grafana 8 and later (unified alerting)
//! post `alerts`, each a message in topic `[alertname]` (the alert's fingerprint
//! without a name): its state, times, labels, values, annotations and links. Grafana
//! 7's legacy alerts are one message in the rule's `title` topic: state, rule (linked),
//! message and the metrics that matched. Event types: `firing`, `resolved` (unified),
//! `alerting`, `ok`, `no_data`, `pending`, `paused` (legacy).

use serde_json::{Map, Value};

use super::{nonempty, opt_s, s, HookError, HookMessage, HookOutcome, HookRequest};

/// Grafana's `endsAt` of an alert that has not ended.
const NOT_ENDED: &str = "0001-01-01T00:00:00Z";

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    match p.get("alerts").and_then(Value::as_array) {
        Some(alerts) => alerts
            .iter()
            .map(unified_alert)
            .collect::<Result<Vec<_>, _>>()
            .map(HookOutcome::SendAll),
        None => legacy_alert(&p).map(HookOutcome::Send),
    }
}

fn unified_alert(alert: &Value) -> Result<HookMessage, HookError> {
    let status = s(alert, "/status")?;
    let heading = match status {
        "firing" => ":alert: **FIRING**",
        "resolved" => ":checkbox: **RESOLVED**",
        _ => return Err(HookError::Anomalous),
    };
    // Sections, a blank line between them.
    let mut sections = vec![heading.to_owned()];
    let topic = match nonempty(alert, "/labels/alertname") {
        Some(name) => {
            sections.push(format!("**{name}**"));
            format!("[{name}]")
        }
        None => format!("[{}]", s(alert, "/fingerprint")?),
    };
    sections.push(format!("Fired at {}.", global_time(s(alert, "/startsAt")?)));
    if let Some(end) = opt_s(alert, "/endsAt").filter(|e| *e != NOT_ENDED) {
        sections.push(format!("Resolved at {}.", global_time(end)));
    }
    let listing = |title: &str, map: &Map<String, Value>| {
        let items: Vec<String> = map
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => format!("- {key}: {text}"),
                other => format!("- {key}: {other}"),
            })
            .collect();
        format!("{title}:\n{}", items.join("\n"))
    };
    let object = |pointer: &str| {
        alert
            .pointer(pointer)
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
    };
    if let Some(labels) = object("/labels") {
        sections.push(listing("Labels", labels));
    }
    match object("/values") {
        Some(values) => sections.push(listing("Values", values)),
        None => {
            if let Some(values) = nonempty(alert, "/valueString") {
                sections.push(format!("Values:\n{values}"));
            }
        }
    }
    if let Some(notes) = object("/annotations") {
        sections.push(listing("Annotations", notes));
    }
    let links: Vec<String> = [
        ("/generatorURL", "Generator"),
        ("/silenceURL", "Silence"),
        ("/imageURL", "Image"),
    ]
    .iter()
    .filter_map(|(pointer, label)| nonempty(alert, pointer).map(|url| format!("[{label}]({url})")))
    .collect();
    if !links.is_empty() {
        sections.push(links.join("\n"));
    }
    Ok(HookMessage {
        topic,
        content: sections.join("\n\n"),
        event: Some(status.to_owned()),
    })
}

fn legacy_alert(p: &Value) -> Result<HookMessage, HookError> {
    let state = s(p, "/state")?;
    let icon = match state {
        "alerting" => ":alert:",
        "ok" => ":squared_ok:",
        "no_data" | "paused" | "pending" | "unknown" => ":info:",
        _ => return Err(HookError::Anomalous),
    };
    let mut body = format!(
        "{icon} **{}**\n\n[{}]({})",
        state.to_uppercase(),
        s(p, "/ruleName")?,
        s(p, "/ruleUrl")?
    );
    let mut details = String::new();
    if let Some(message) = opt_s(p, "/message") {
        details.push_str(&format!("{message}\n\n"));
    }
    for m in super::items(p, "/evalMatches") {
        let value = m.get("value").map_or_else(String::new, |v| match v {
            Value::Null => "None".to_owned(),
            other => other.to_string(),
        });
        details.push_str(&format!("**{}:** {value}\n", s(m, "/metric")?));
    }
    if !details.is_empty() {
        body.push_str(&format!("\n\n{details}"));
    }
    if let Some(image) = opt_s(p, "/imageUrl") {
        body.push_str(&format!("\n[Click to view visualization]({image})"));
    }
    Ok(HookMessage {
        topic: s(p, "/title")?.to_owned(),
        content: body.trim().to_owned(),
        event: Some(state.to_owned()),
    })
}

/// A time every reader sees in their own time zone (Zulip's `<time:...>`).
fn global_time(iso: &str) -> String {
    format!("<time:{iso}>")
}

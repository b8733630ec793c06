//! `alertmanager`: Prometheus Alertmanager's webhook receiver. One message per topic
//! and state: the topic is each alert's `name` label or annotation (`name=` in the
//! URL chooses which, `instance` by default), the line of an alert its `desc` one
//! (`alertname` by default) with a link to its graph. Firing and resolved alerts of
//! one topic are separate messages. Event types: `firing`, `resolved`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{opt_s, HookError, HookMessage, HookOutcome, HookRequest};

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    let name_field = (r.param)("name").unwrap_or_else(|| "instance".to_owned());
    let desc_field = (r.param)("desc").unwrap_or_else(|| "alertname".to_owned());
    let alerts = p
        .get("alerts")
        .and_then(Value::as_array)
        .ok_or(HookError::Anomalous)?;
    // Topic -> (firing lines, resolved lines), topics in the order they came.
    let mut order: Vec<String> = Vec::new();
    let mut lines: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for alert in alerts {
        let field = |name: &str| {
            opt_s(alert, &format!("/labels/{}", pointer_escape(name)))
                .or_else(|| opt_s(alert, &format!("/annotations/{}", pointer_escape(name))))
        };
        let topic = field(&name_field).unwrap_or("(unknown)").to_owned();
        let desc = field(&desc_field)
            .map_or_else(|| format!("<missing field: {desc_field}>"), str::to_owned);
        // Prometheus links the graph's console tab; the graph tab is the useful one.
        let line = match super::nonempty(alert, "/generatorURL") {
            Some(url) => format!("{desc} ([graph]({}))", url.replace("tab=1", "tab=0")),
            None => desc,
        };
        if !lines.contains_key(&topic) {
            order.push(topic.clone());
        }
        let entry = lines.entry(topic).or_default();
        match opt_s(alert, "/status") {
            Some("resolved") => entry.1.push(line),
            Some("firing") => entry.0.push(line),
            _ => return Err(HookError::Anomalous),
        }
    }
    let mut messages = Vec::new();
    for topic in order {
        let Some((firing, resolved)) = lines.remove(&topic) else {
            continue;
        };
        for (state, heading, found) in [
            ("firing", ":alert: **Firing**", firing),
            ("resolved", ":squared_ok: **Resolved**", resolved),
        ] {
            let content = match found.as_slice() {
                [] => continue,
                [one] => format!("{heading} {one}"),
                many => {
                    let list: Vec<String> = many.iter().map(|l| format!("* {l}")).collect();
                    format!("{heading}\n{}", list.join("\n"))
                }
            };
            messages.push(HookMessage {
                topic: topic.clone(),
                content,
                event: Some(state.to_owned()),
            });
        }
    }
    Ok(HookOutcome::SendAll(messages))
}

/// A name as one JSON pointer segment (`~` and `/` escaped).
fn pointer_escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

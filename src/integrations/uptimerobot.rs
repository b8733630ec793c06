//! `uptimerobot`: UptimeRobot's webhook alert contact, whose post body is set in
//! UptimeRobot to the JSON below (its `*monitorFriendlyName*`-style variables):
//!
//! ```json
//! {"monitor_url": "*monitorURL*", "monitor_friendly_name": "*monitorFriendlyName*",
//!  "alert_type": "*alertType*", "alert_type_friendly_name": "*alertTypeFriendlyName*",
//!  "alert_details": "*alertDetails*", "alert_friendly_duration": "*alertFriendlyDuration*"}
//! ```
//!
//! Topic: the monitor's name. Event types: `down`, `up`.

use super::{s, HookError, HookOutcome, HookRequest};

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    // A body without the fields means the alert contact was set up without them.
    let field = |name: &str| s(&p, &format!("/{name}")).map_err(|_| invalid());
    let name = field("monitor_friendly_name")?;
    let url = field("monitor_url")?;
    let details = field("alert_details")?;
    let (event, content) = match field("alert_type_friendly_name")? {
        "Down" => (
            "down",
            format!(":red_circle: {name} ({url}) is **DOWN**: {details}."),
        ),
        "Up" => (
            "up",
            format!(
                ":check: {name} ({url}) is back **UP**: {details}. It was down for {}.",
                field("alert_friendly_duration")?
            ),
        ),
        other => return Err(HookError::Unsupported(other.to_owned())),
    };
    Ok(HookOutcome::send(name, content, event))
}

/// Zulip's answer to a body without UptimeRobot's fields.
fn invalid() -> HookError {
    HookError::Invalid("Invalid payload")
}

//! `json`: any JSON body, shown as a code block (for services without an
//! integration of their own). Topic `JSON`.

use super::{HookError, HookMessage, HookOutcome, HookRequest};

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let payload = r.json()?;
    let pretty = serde_json::to_string_pretty(&payload).map_err(|_| HookError::MalformedJson)?;
    // No event type: `only_events` and `exclude_events` have nothing to match.
    Ok(HookOutcome::Send(HookMessage {
        topic: "JSON".to_owned(),
        content: format!("```json\n{pretty}\n```"),
        event: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_shown_indented_in_its_own_order() {
        let headers = Vec::new();
        let none = |_: &str| None;
        let r = HookRequest {
            headers: &headers,
            body: br#"{"b":1,"a":[true,null]}"#,
            param: &none,
        };
        let HookOutcome::Send(m) = handle(&r).unwrap() else {
            panic!("nothing sent")
        };
        assert_eq!(m.topic, "JSON");
        assert_eq!(
            m.content,
            "```json\n{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}\n```"
        );
        let bad = HookRequest {
            headers: &headers,
            body: b"{not json",
            param: &none,
        };
        assert_eq!(handle(&bad), Err(HookError::MalformedJson));
    }
}

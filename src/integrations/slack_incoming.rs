//! `slack_incoming`: Slack's incoming-webhook format, for tools that can post to
//! Slack. The message is a JSON body, or a form whose `payload` field holds the JSON.
//! Its `text`, Block Kit `blocks` and legacy `attachments` become Markdown (Slack's
//! `<url|label>` links, `*bold*` and `_italic_` turned into Zulip's). Topic: the URL's
//! `topic`, else the payload's `channel` without its `#` or `@`, else no topic.

use serde_json::Value;

use super::{opt_s, HookError, HookOutcome, HookRequest};

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let raw = if r.content_type_is("application/json") {
        String::from_utf8(r.body.to_vec()).map_err(|_| HookError::MalformedJson)?
    } else {
        (r.param)("payload").ok_or(HookError::MissingParam("payload"))?
    };
    let payload: Value = serde_json::from_str(&raw).map_err(|_| HookError::MalformedJson)?;
    let topic = r
        .user_topic()
        .or_else(|| {
            opt_s(&payload, "/channel").map(|c| c.strip_prefix(['#', '@']).unwrap_or(c).to_owned())
        })
        .unwrap_or_else(|| "(no topic)".to_owned());

    let mut pieces: Vec<String> = Vec::new();
    for block in super::items(&payload, "/blocks") {
        pieces.push(block_markdown(block));
    }
    for attachment in super::items(&payload, "/attachments") {
        pieces.push(attachment_markdown(attachment));
    }
    let mut body = join_pieces(pieces);
    if body.is_empty() {
        if let Some(text) = super::nonempty(&payload, "/text") {
            body = match super::nonempty(&payload, "/icon_emoji") {
                Some(emoji) => format!("{emoji} {text}"),
                None => text.to_owned(),
            };
            body = body.trim().to_owned();
        }
    }
    if body.is_empty() {
        return Ok(HookOutcome::Nothing);
    }
    let content = slack_emphasis(slack_links(&body).trim());
    Ok(HookOutcome::Send(super::HookMessage {
        topic,
        content,
        event: None,
    }))
}

/// Pieces trimmed, the empty ones left out, a blank line between the others.
fn join_pieces(pieces: Vec<String>) -> String {
    pieces
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The text of a `{type: plain_text|mrkdwn, text}` object.
fn text_of(v: &Value) -> String {
    opt_s(v, "/text").unwrap_or_default().to_owned()
}

/// A Block Kit block (`section`, `header`, `divider`, `image`, `context`); the
/// interactive ones (`actions`, `input`) have nothing to show.
fn block_markdown(block: &Value) -> String {
    match opt_s(block, "/type").unwrap_or_default() {
        "section" => {
            let mut pieces = Vec::new();
            if let Some(text) = block.get("text") {
                pieces.push(text_of(text));
            }
            if let Some(accessory) = block.get("accessory") {
                pieces.push(element_markdown(accessory));
            }
            let fields = super::items(block, "/fields");
            match fields {
                [] => {}
                [one] => pieces.push(text_of(one)),
                many => {
                    // Slack shows fields in two columns: a table whose header is blank.
                    // A cell holds neither a line break nor a pipe.
                    let cells: Vec<String> = many
                        .iter()
                        .map(|f| text_of(f).replace(['\n', '|'], " "))
                        .collect();
                    let mut table = String::from("| | |\n|-|-|\n");
                    for pair in cells.chunks(2) {
                        let right = pair.get(1).map_or("", String::as_str);
                        table.push_str(&format!("| {} | {} |\n", pair[0], right));
                    }
                    pieces.push(table);
                }
            }
            join_pieces(pieces)
        }
        "header" => block
            .get("text")
            .map_or_else(String::new, |t| format!("## {}", text_of(t))),
        "divider" => "----".to_owned(),
        "image" => {
            let alt = block
                .get("title")
                .map(text_of)
                .or_else(|| opt_s(block, "/alt_text").map(str::to_owned))
                .unwrap_or_default();
            format!(
                "[{alt}]({})",
                opt_s(block, "/image_url").unwrap_or_default()
            )
        }
        "context" => join_pieces(
            super::items(block, "/elements")
                .iter()
                .map(|e| match opt_s(e, "/type") {
                    Some("image") => element_markdown(e),
                    _ => text_of(e),
                })
                .collect(),
        ),
        _ => String::new(),
    }
}

/// A block element: images only (the others are buttons and inputs).
fn element_markdown(element: &Value) -> String {
    if opt_s(element, "/type") != Some("image") {
        return String::new();
    }
    format!(
        "[{}]({})",
        opt_s(element, "/alt_text").unwrap_or_default(),
        opt_s(element, "/image_url").unwrap_or_default()
    )
}

/// A legacy attachment: title (linked), pretext, text, fields, blocks, image, footer
/// and time, each optional.
fn attachment_markdown(a: &Value) -> String {
    let mut pieces = Vec::new();
    if let Some(title) = super::nonempty(a, "/title") {
        pieces.push(match super::nonempty(a, "/title_link") {
            Some(link) => format!("## [{title}]({link})"),
            None => format!("## {title}"),
        });
    }
    for key in ["/pretext", "/text"] {
        if let Some(t) = super::nonempty(a, key) {
            pieces.push(t.to_owned());
        }
    }
    let fields: Vec<String> = super::items(a, "/fields")
        .iter()
        .filter_map(
            |f| match (super::nonempty(f, "/title"), super::nonempty(f, "/value")) {
                (Some(t), Some(v)) => Some(format!("*{t}*: {v}")),
                (Some(t), None) => Some(format!("*{t}*")),
                (None, Some(v)) => Some(v.to_owned()),
                (None, None) => None,
            },
        )
        .collect();
    pieces.push(fields.join("\n"));
    for block in super::items(a, "/blocks") {
        pieces.push(block_markdown(block));
    }
    if let Some(url) = super::nonempty(a, "/image_url") {
        pieces.push(format!("[]({url})"));
    }
    if let Some(footer) = super::nonempty(a, "/footer") {
        pieces.push(footer.to_owned());
    }
    if let Some(ts) = a.get("ts").and_then(Value::as_i64) {
        pieces.push(format!("<time:{ts}>"));
    }
    join_pieces(pieces)
}

/// Slack's `<https://url|label>` links as Markdown links.
fn slack_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let link = after.find('>').and_then(|close| {
            let inner = &after[..close];
            let (url, label) = inner.split_once('|')?;
            let scheme_ok = url
                .split_once("://")
                .is_some_and(|(scheme, _)| !scheme.is_empty() && scheme.chars().all(is_word));
            scheme_ok.then(|| (format!("[{label}]({url})"), close))
        });
        match link {
            Some((markdown, close)) => {
                out.push_str(&markdown);
                rest = &after[close + 1..];
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Slack's `*bold*` is Zulip's `**bold**`, its `_italic_` Zulip's `*italic*`: a marker
/// pair counts when it stands outside words, encloses no marker and no line break,
/// and its text neither starts nor ends with a space.
fn slack_emphasis(text: &str) -> String {
    let text = convert_marker(text, '*', "**");
    convert_marker(&text, '_', "*")
}

fn convert_marker(text: &str, marker: char, replacement: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == marker && (i == 0 || !is_word(chars[i - 1])) {
            if let Some(end) = closing_marker(&chars, i, marker) {
                out.push_str(replacement);
                out.extend(&chars[i + 1..end]);
                out.push_str(replacement);
                i = end + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Where the marker opened at `open` closes, if the pair qualifies.
fn closing_marker(chars: &[char], open: usize, marker: char) -> Option<usize> {
    let first = *chars.get(open + 1)?;
    if first.is_whitespace() || first == marker {
        return None;
    }
    let end = (open + 1..chars.len()).find(|&j| chars[j] == marker || chars[j] == '\n')?;
    if chars[end] != marker || chars[end - 1].is_whitespace() {
        return None;
    }
    match chars.get(end + 1) {
        Some(&next) if is_word(next) => None,
        _ => Some(end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_markup_becomes_markdown() {
        assert_eq!(
            slack_links("see <https://example.com|Overlook> and <nope>"),
            "see [Overlook](https://example.com) and <nope>"
        );
        assert_eq!(
            slack_emphasis("*Average Rating*\n1.0"),
            "**Average Rating**\n1.0"
        );
        assert_eq!(slack_emphasis("a _quiet_ word"), "a *quiet* word");
        assert_eq!(
            slack_emphasis("snake_case_name stays"),
            "snake_case_name stays"
        );
        assert_eq!(slack_emphasis("* not bold*"), "* not bold*");
        assert_eq!(slack_emphasis("2*3*4"), "2*3*4");
    }
}

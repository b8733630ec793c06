//! Edit history (seed 4.6, `GET /messages/{id}/history`) and Zulip's HTML diff of two
//! renderings (`content_html_diff`).
//!
//! Zulip diffs with lxml's `htmldiff`: the HTML is split into words, each carrying the
//! tags before and after it; the word texts are diffed; inserted words are wrapped in
//! `<ins>`, deleted words in `<del>` (insertions first), then both become `<span>`s
//! with Zulip's highlight classes, inside one `<div>`. This is that algorithm, with the
//! word diff done by `similar`.

use serde_json::{Map, Value};
use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::Message;
use crate::realm::Realm;

/// A word of an HTML text with the markup around it.
#[derive(Debug, Clone, Default)]
struct Token {
    pre_tags: Vec<String>,
    text: String,
    trailing: String,
    post_tags: Vec<String>,
}

/// Splits HTML into words (tags attach to the following word, or to the last word
/// when nothing follows them).
fn tokenize(html: &str) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
    let mut pending_tags: Vec<String> = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            pending_tags.push(rest[..end].to_owned());
            rest = &rest[end..];
            continue;
        }
        let end = rest.find('<').unwrap_or(rest.len());
        let mut text = &rest[..end];
        rest = &rest[end..];
        // Leading whitespace belongs to the previous word.
        let lead = text.len() - text.trim_start().len();
        if lead > 0 {
            if let Some(last) = tokens.last_mut().filter(|_| pending_tags.is_empty()) {
                last.trailing.push_str(&text[..lead]);
            }
            text = &text[lead..];
        }
        let mut words = text.split_inclusive(char::is_whitespace).peekable();
        while let Some(w) = words.next() {
            let word = w.trim_end();
            let trailing = &w[word.len()..];
            if word.is_empty() {
                if let Some(last) = tokens.last_mut() {
                    last.trailing.push_str(trailing);
                }
                continue;
            }
            let mut trailing = trailing.to_owned();
            // Whitespace runs stay with the word before them.
            while let Some(next) = words.peek() {
                if next.trim().is_empty() {
                    trailing.push_str(next);
                    words.next();
                } else {
                    break;
                }
            }
            tokens.push(Token {
                pre_tags: std::mem::take(&mut pending_tags),
                text: word.to_owned(),
                trailing,
                post_tags: Vec::new(),
            });
        }
    }
    if let Some(last) = tokens.last_mut() {
        last.post_tags.append(&mut pending_tags);
    } else if !pending_tags.is_empty() {
        tokens.push(Token {
            post_tags: pending_tags,
            ..Token::default()
        });
    }
    tokens
}

fn expand(tokens: &[Token]) -> Vec<String> {
    let mut out = Vec::new();
    for t in tokens {
        out.extend(t.pre_tags.iter().cloned());
        if !t.text.is_empty() {
            out.push(format!("{}{}", t.text, t.trailing));
        }
        out.extend(t.post_tags.iter().cloned());
    }
    out
}

fn is_open(tag: &str) -> bool {
    tag.starts_with('<') && !tag.starts_with("</") && !tag.ends_with("/>") && tag != "<br>"
}

fn is_close(tag: &str) -> bool {
    tag.starts_with("</")
}

/// lxml's `split_unbalanced`: opening tags not closed inside the chunks, the balanced
/// middle, and closing tags not opened inside them.
fn split_unbalanced(chunks: Vec<String>) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut start = Vec::new();
    let mut end = Vec::new();
    let mut balanced = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for chunk in chunks {
        if is_open(&chunk) {
            stack.push(balanced.len());
            balanced.push(chunk);
        } else if is_close(&chunk) {
            if stack.pop().is_some() {
                balanced.push(chunk);
            } else {
                end.push(chunk);
            }
        } else {
            balanced.push(chunk);
        }
    }
    // Opening tags still on the stack were never closed: they lead the chunk.
    for i in stack.into_iter().rev() {
        start.insert(0, balanced.remove(i));
    }
    (start, balanced, end)
}

fn merge_insert(chunks: Vec<String>, doc: &mut Vec<String>) {
    let (start, mut balanced, end) = split_unbalanced(chunks);
    doc.extend(start);
    if let Some(last) = doc.last_mut() {
        if !last.ends_with(' ') {
            last.push(' ');
        }
    }
    if let Some(last) = balanced.last_mut() {
        if last.ends_with(' ') {
            last.pop();
        }
    }
    if balanced.iter().any(|c| !c.is_empty()) {
        doc.push("<ins>".into());
        doc.extend(balanced);
        doc.push("</ins> ".into());
    }
    doc.extend(end);
}

/// Deleted words: their text only (the markup of deleted words is not kept).
fn merge_delete(tokens: &[Token], doc: &mut Vec<String>) {
    let mut words: Vec<String> = tokens
        .iter()
        .filter(|t| !t.text.is_empty())
        .map(|t| format!("{}{}", t.text, t.trailing))
        .collect();
    if words.is_empty() {
        return;
    }
    let mut after = String::new();
    if let Some(last) = words.last_mut() {
        if last.ends_with(' ') {
            last.pop();
            after.push(' ');
        }
    }
    doc.push("<del>".into());
    doc.extend(words);
    doc.push(format!("</del>{after}"));
}

/// Zulip's `highlight_html_differences`.
pub fn html_diff(old: &str, new: &str) -> String {
    let a = tokenize(old);
    let b = tokenize(new);
    let a_words: Vec<&str> = a.iter().map(|t| t.text.as_str()).collect();
    let b_words: Vec<&str> = b.iter().map(|t| t.text.as_str()).collect();
    let mut doc: Vec<String> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &a_words, &b_words) {
        match op {
            DiffOp::Equal { new_index, len, .. } => {
                doc.extend(expand(&b[new_index..new_index + len]))
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => merge_insert(expand(&b[new_index..new_index + new_len]), &mut doc),
            DiffOp::Delete {
                old_index, old_len, ..
            } => merge_delete(&a[old_index..old_index + old_len], &mut doc),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                merge_insert(expand(&b[new_index..new_index + new_len]), &mut doc);
                merge_delete(&a[old_index..old_index + old_len], &mut doc);
            }
        }
    }
    let html = doc
        .concat()
        .replace("<ins>", "<span class=\"highlight_text_inserted\">")
        .replace("</ins>", "</span>")
        .replace("<del>", "<span class=\"highlight_text_deleted\">")
        .replace("</del>", "</span>");
    format!("<div>{}</div>", html.trim_end())
}

impl Realm {
    /// `message_history`: the original first, then the state after each edit, with
    /// `prev_*` fields only where they changed (seed 2.8).
    pub fn message_history(&self, m: &Message, allow_empty_topic_name: bool) -> Vec<Value> {
        // Zulip's `maybe_rename_empty_topic_to_general_chat`: only a channel message's
        // empty topic has a display name; a direct message's topic stays "".
        let is_channel = m.recipient.channel().is_some();
        let topic = |t: &str| self.topic_for_client(t, allow_empty_topic_name || !is_channel);
        let mut content = m.content.clone();
        let mut rendered = m.rendered_content.clone();
        let mut topic_now = m.recipient.topic().unwrap_or_default().to_owned();
        let mut channel_now = m.recipient.channel();
        let mut out: Vec<Map<String, Value>> = Vec::new();
        for e in m.edits.iter().rev() {
            let mut o = Map::new();
            o.insert("content".into(), content.clone().into());
            o.insert("rendered_content".into(), rendered.clone().into());
            o.insert("timestamp".into(), e.timestamp.into());
            o.insert("topic".into(), topic(&topic_now).into());
            o.insert("user_id".into(), e.user_id.into());
            if let Some(prev) = &e.prev_topic {
                o.insert("prev_topic".into(), topic(prev).into());
                topic_now = prev.clone();
            }
            if let (Some(prev), Some(prev_rendered)) = (&e.prev_content, &e.prev_rendered_content) {
                o.insert("prev_content".into(), prev.clone().into());
                o.insert("prev_rendered_content".into(), prev_rendered.clone().into());
                o.insert(
                    "content_html_diff".into(),
                    html_diff(prev_rendered, &rendered).into(),
                );
                content = prev.clone();
                rendered = prev_rendered.clone();
            }
            // Last, as in Zulip's `fill_edit_history_entries`.
            if let Some(prev) = e.prev_channel {
                o.insert("prev_stream".into(), prev.into());
                o.insert("stream".into(), channel_now.into());
                channel_now = Some(prev);
            }
            out.push(o);
        }
        let mut first = Map::new();
        first.insert("content".into(), content.into());
        first.insert("rendered_content".into(), rendered.into());
        first.insert("timestamp".into(), m.timestamp.into());
        first.insert("topic".into(), topic(&topic_now).into());
        first.insert("user_id".into(), m.sender_id.into());
        out.push(first);
        out.reverse();
        out.into_iter().map(Value::Object).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::html_diff;

    #[test]
    fn zulips_recorded_diff() {
        assert_eq!(
            html_diff("<p>original content</p>", "<p>edited content</p>"),
            "<div><p> <span class=\"highlight_text_inserted\">edited</span> <span class=\"highlight_text_deleted\">original</span> content</p></div>"
        );
    }

    #[test]
    fn additions_and_removals() {
        let d = html_diff("<p>one two</p>", "<p>one two three</p>");
        assert!(
            d.starts_with("<div><p>one two <span class=\"highlight_text_inserted\">three</span>"),
            "{d}"
        );
        let d = html_diff("<p>one two three</p>", "<p>one three</p>");
        assert!(
            d.contains("<span class=\"highlight_text_deleted\">two</span>"),
            "{d}"
        );
        assert_eq!(
            html_diff("<p>same</p>", "<p>same</p>"),
            "<div><p>same</p></div>"
        );
    }
}

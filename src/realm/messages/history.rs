//! Edit history (seed 4.6, `GET /messages/{id}/history`), with Zulip's HTML diff of
//! two renderings (`content_html_diff`, `html_diff.rs`).

use serde_json::{Map, Value};

use super::html_diff::html_diff;
use super::Message;
use crate::realm::Realm;

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

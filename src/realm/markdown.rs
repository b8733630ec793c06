//! Zulip-flavoured Markdown for the texts hearth renders (channel and folder
//! descriptions now, messages later), on `pulldown-cmark`.
//!
//! Zulip's dialect differs from CommonMark where clients would notice: raw HTML is
//! shown as text, never passed through; a single newline is a line break (`<br>`);
//! headings, tables and images are not rendered. Emoji, mentions, linkifiers and
//! Zulip's link attributes are not done yet.

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

/// Renders `text` as Zulip renders a description: `""` for a blank text.
pub fn render_description(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let parser = Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH).map(|event| match event {
        // Raw HTML is text in Zulip.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::SoftBreak => Event::HardBreak,
        // Zulip's dialect has no headings: their text stays a paragraph.
        Event::Start(Tag::Heading { .. }) => Event::Start(Tag::Paragraph),
        Event::End(TagEnd::Heading(_)) => Event::End(TagEnd::Paragraph),
        other => other,
    });
    let mut out = String::with_capacity(text.len() + 16);
    html::push_html(&mut out, parser);
    // Zulip writes `<br>`, and no newline after the last block.
    out.replace("<br />", "<br>").trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::render_description;

    #[test]
    fn zulip_shapes() {
        assert_eq!(render_description(""), "");
        assert_eq!(render_description("  "), "");
        assert_eq!(
            render_description("For convenient *channel folder* testing!"),
            "<p>For convenient <em>channel folder</em> testing!</p>"
        );
        assert_eq!(
            render_description("**Bold** and `code`"),
            "<p><strong>Bold</strong> and <code>code</code></p>"
        );
        assert_eq!(render_description("a < b"), "<p>a &lt; b</p>");
        assert_eq!(
            render_description("<b>no html</b>"),
            "<p>&lt;b&gt;no html&lt;/b&gt;</p>"
        );
        assert_eq!(render_description("one\ntwo"), "<p>one<br>\ntwo</p>");
    }
}

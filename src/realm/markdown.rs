//! Zulip-flavoured Markdown for the texts hearth renders (channel and folder
//! descriptions now, messages later), on `pulldown-cmark`.
//!
//! Zulip's dialect differs from CommonMark where clients would notice: raw HTML is
//! shown as text, never passed through; a single newline is a line break (`<br>`);
//! headings, tables and images are not rendered. Linkifiers apply to plain text (not
//! inside code or links) when the caller passes the realm's
//! (`Realm::compiled_linkifiers`). Emoji, mentions and Zulip's link attributes are not
//! done yet.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd, TextMergeStream};

use super::linkifiers::{linkify, CompiledLinkifier, Piece};

/// Renders `text` as Zulip renders a description: `""` for a blank text.
pub fn render_description(text: &str) -> String {
    render_description_with(text, &[])
}

/// Renders `text` as Zulip renders a description or a profile field value, with the
/// realm's linkifiers applied: `""` for a blank text.
pub fn render_description_with(text: &str, linkifiers: &[CompiledLinkifier]) -> String {
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
    if linkifiers.is_empty() {
        html::push_html(&mut out, parser);
    } else {
        html::push_html(&mut out, Linkified::new(parser, linkifiers));
    }
    // Zulip writes `<br>`, and no newline after the last block.
    out.replace("<br />", "<br>").trim_end().to_owned()
}

/// Escapes text for HTML content and double-quoted attributes.
fn escape_html(s: &str) -> String {
    crate::escape::with(s, crate::escape::DOUBLE_QUOTED)
}

/// Runs the linkifiers over the text of an event stream, outside code and links.
struct Linkified<'a, I: Iterator<Item = Event<'a>>> {
    inner: TextMergeStream<'a, I>,
    linkifiers: &'a [CompiledLinkifier],
    /// Open links, images and code blocks: their text is left alone.
    verbatim: usize,
    pending: std::collections::VecDeque<Event<'a>>,
}

impl<'a, I: Iterator<Item = Event<'a>>> Linkified<'a, I> {
    fn new(inner: I, linkifiers: &'a [CompiledLinkifier]) -> Self {
        Linkified {
            inner: TextMergeStream::new(inner),
            linkifiers,
            verbatim: 0,
            pending: std::collections::VecDeque::new(),
        }
    }
}

impl<'a, I: Iterator<Item = Event<'a>>> Iterator for Linkified<'a, I> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if let Some(e) = self.pending.pop_front() {
            return Some(e);
        }
        let event = self.inner.next()?;
        match &event {
            Event::Start(Tag::Link { .. } | Tag::Image { .. } | Tag::CodeBlock(_)) => {
                self.verbatim += 1
            }
            Event::End(TagEnd::Link | TagEnd::Image | TagEnd::CodeBlock) => {
                self.verbatim = self.verbatim.saturating_sub(1)
            }
            Event::Text(t) if self.verbatim == 0 => {
                let pieces = linkify(t, self.linkifiers);
                if pieces.iter().any(|p| matches!(p, Piece::Link { .. })) {
                    for p in pieces {
                        self.pending.push_back(match p {
                            Piece::Text(t) => Event::Text(CowStr::from(t)),
                            Piece::Link { url, text } => Event::InlineHtml(CowStr::from(format!(
                                "<a href=\"{}\">{}</a>",
                                escape_html(&url),
                                escape_html(&text)
                            ))),
                        });
                    }
                    return self.pending.pop_front();
                }
            }
            _ => {}
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::{render_description, render_description_with};
    use crate::realm::linkifiers::{CompiledLinkifier, Linkifier};

    fn linkifiers() -> Vec<CompiledLinkifier> {
        [
            (
                "#D(?P<id>[0-9]{2,8})",
                "https://github.com/zulip/zulip-desktop/pull/{id}",
            ),
            ("ZUL-(?P<id>[0-9]+)", "https://example.com/a?b=1&id={id}"),
        ]
        .iter()
        .enumerate()
        .filter_map(|(i, (p, t))| {
            CompiledLinkifier::new(&Linkifier {
                id: i as u64 + 1,
                pattern: (*p).to_owned(),
                url_template: (*t).to_owned(),
                order: i as i64,
            })
        })
        .collect()
    }

    #[test]
    fn linkifiers_in_plain_text_only() {
        let l = linkifiers();
        assert_eq!(l.len(), 2);
        assert_eq!(
            render_description_with("Fixed in #D123, see **ZUL-7**.", &l),
            "<p>Fixed in <a href=\"https://github.com/zulip/zulip-desktop/pull/123\">#D123</a>, \
             see <strong><a href=\"https://example.com/a?b=1&amp;id=7\">ZUL-7</a></strong>.</p>"
        );
        assert_eq!(
            render_description_with("`#D123` and [#D45](https://x.com) and\n\n    #D67", &l),
            "<p><code>#D123</code> and <a href=\"https://x.com\">#D45</a> and</p>\n<pre><code>#D67</code></pre>"
        );
        assert_eq!(
            render_description_with("no #D1 match", &l),
            "<p>no #D1 match</p>"
        );
        assert_eq!(
            render_description_with("a < #D12", &l),
            "<p>a &lt; <a href=\"https://github.com/zulip/zulip-desktop/pull/12\">#D12</a></p>"
        );
    }

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

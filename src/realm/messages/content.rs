//! Message Markdown: Zulip's dialect on `pulldown-cmark`, with user, wildcard and
//! channel mentions, Zulip's code blocks and quote blocks, and links for bare URLs.
//!
//! Mentions are found before parsing and replaced by placeholders (private-use
//! characters), so Markdown never sees their `**`; after parsing, a placeholder in text
//! becomes the mention's HTML, and one inside code becomes its source text again.
//! Raw HTML is shown as text, never passed through.

use std::sync::LazyLock;

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use regex::Regex;

use super::Wildcard;
use crate::realm::linkifiers::{linkify, sanitize_url, CompiledLinkifier, Piece};
use crate::realm::{Realm, UserId};

/// What rendering found besides the HTML.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    pub html: String,
    /// Users mentioned (not silently), by name or through a group.
    pub mentioned: Vec<UserId>,
    pub wildcard: Wildcard,
    /// Groups mentioned (not silently), in order of appearance: the sender must be
    /// allowed to mention each (`can_mention_group`).
    pub mentioned_groups: Vec<crate::realm::groups::GroupId>,
}

const OPEN: char = '\u{F8F0}';
const CLOSE: char = '\u{F8F1}';

/// A pattern of this file; each is a literal covered by the tests below, so building it
/// cannot fail at run time.
fn pattern(re: &str) -> Regex {
    #[allow(clippy::expect_used)]
    Regex::new(re).expect("a literal pattern")
}

static MENTION: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"(@_?)\*\*([^*\n]+?)\*\*|#\*\*([^*\n>]+?)(?:>([^*\n]+?))?\*\*|(@_?)\*([^*\n]+?)\*")
});
static EMOJI: LazyLock<Regex> = LazyLock::new(|| pattern(r":([a-z0-9_+-]+):"));
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| pattern("\u{F8F0}([0-9]+)\u{F8F1}"));
static URL: LazyLock<Regex> = LazyLock::new(|| pattern(r#"https?://[^\s<>"']*[^\s<>"'.,;:!?)\]]"#));
static QUOTE_FENCE: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"(?ms)^(`{3,}|~{3,})quote[ \t]*\n(.*?)\n?^(?:`{3,}|~{3,})[ \t]*$"));

/// Zulip's `escape_html`: text for HTML content and attributes.
pub(crate) use crate::escape::html as escape;

/// Zulip's narrow URL fragment for a channel: `id-name` with the name hash-encoded.
fn channel_slug(id: u64, name: &str) -> String {
    format!("{id}-{}", hash_encode(name))
}

/// Zulip's `hash_util_encode`: URL-encoding with `.` for `%`.
fn hash_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => out.push(*b as char),
            b' ' => out.push_str(".20"),
            _ => out.push_str(&format!(".{b:02X}")),
        }
    }
    out
}

struct Mention {
    source: String,
    html: String,
}

impl Realm {
    /// Finds the user a mention names: `Name|id`, or a unique active full name.
    fn mentioned_user(&self, text: &str) -> Option<UserId> {
        if let Some((_, id)) = text.rsplit_once('|') {
            let id: UserId = id.trim().parse().ok()?;
            return self.user(id).filter(|u| u.is_active).map(|u| u.id);
        }
        let mut found = self
            .users
            .values()
            .filter(|u| u.is_active && u.full_name.eq_ignore_ascii_case(text.trim()));
        let first = found.next()?;
        found.next().is_none().then_some(first.id)
    }

    /// Renders a message's Markdown for this realm.
    pub fn render_message(&self, text: &str) -> Rendered {
        let mut out = Rendered::default();
        let mut mentions: Vec<Mention> = Vec::new();
        let text = QUOTE_FENCE.replace_all(text, |c: &regex::Captures| {
            c[2].lines()
                .map(|l| format!("> {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        });
        let text = MENTION.replace_all(&text, |c: &regex::Captures| {
            let source = c[0].to_owned();
            let html = if let Some(name) = c.get(6) {
                // `@*group*`: a named group that is not a role's and not deactivated
                // (Zulip's `UserGroupMentionPattern`); anything else stays text.
                let silent = c.get(5).is_some_and(|m| m.as_str() == "@_");
                self.group_by_name(name.as_str())
                    .filter(|g| g.system.is_none() && !self.is_group_deactivated(g.id))
                    .map(|g| {
                        if !silent {
                            if !out.mentioned_groups.contains(&g.id) {
                                out.mentioned_groups.push(g.id);
                            }
                            for id in self.group_members_recursive(g) {
                                if !out.mentioned.contains(&id) {
                                    out.mentioned.push(id);
                                }
                            }
                        }
                        if silent {
                            format!(
                                "<span class=\"user-group-mention silent\" data-user-group-id=\"{}\">{}</span>",
                                g.id,
                                escape(&g.name)
                            )
                        } else {
                            format!(
                                "<span class=\"user-group-mention\" data-user-group-id=\"{}\">@{}</span>",
                                g.id,
                                escape(&g.name)
                            )
                        }
                    })
            } else if let Some(name) = c.get(2) {
                let silent = &c[1] == "@_";
                let name = name.as_str();
                match name {
                    "all" | "everyone" | "channel" | "stream" => {
                        if !silent && out.wildcard == Wildcard::None {
                            out.wildcard = Wildcard::Channel;
                        }
                        let class = if silent { " silent" } else { "" };
                        Some(format!(
                            "<span class=\"user-mention channel-wildcard-mention{class}\" data-user-id=\"*\">{}{}</span>",
                            if silent { "" } else { "@" },
                            escape(name)
                        ))
                    }
                    "topic" => {
                        if !silent {
                            out.wildcard = Wildcard::Topic;
                        }
                        let class = if silent { " silent" } else { "" };
                        Some(format!(
                            "<span class=\"topic-mention{class}\">{}topic</span>",
                            if silent { "" } else { "@" }
                        ))
                    }
                    _ => self.mentioned_user(name).and_then(|id| {
                        let user = self.user(id)?;
                        if !silent && !out.mentioned.contains(&id) {
                            out.mentioned.push(id);
                        }
                        Some(if silent {
                            format!(
                                "<span class=\"user-mention silent\" data-user-id=\"{id}\">{}</span>",
                                escape(&user.full_name)
                            )
                        } else {
                            format!(
                                "<span class=\"user-mention\" data-user-id=\"{id}\">@{}</span>",
                                escape(&user.full_name)
                            )
                        })
                    }),
                }
            } else {
                let name = c.get(3).map_or("", |m| m.as_str());
                self.channel_by_name(name).map(|ch| match c.get(4) {
                    Some(topic) => format!(
                        "<a class=\"stream-topic\" data-stream-id=\"{}\" href=\"/#narrow/channel/{}/topic/{}\">#{} &gt; {}</a>",
                        ch.id,
                        channel_slug(ch.id, &ch.name),
                        hash_encode(topic.as_str()),
                        escape(&ch.name),
                        escape(topic.as_str())
                    ),
                    None => format!(
                        "<a class=\"stream\" data-stream-id=\"{}\" href=\"/#narrow/channel/{}\">#{}</a>",
                        ch.id,
                        channel_slug(ch.id, &ch.name),
                        escape(&ch.name)
                    ),
                })
            };
            match html {
                Some(html) => {
                    mentions.push(Mention { source, html });
                    format!("{OPEN}{}{CLOSE}", mentions.len() - 1)
                }
                None => source,
            }
        });
        // `:name:` emoji, Unicode or the realm's own, as Zulip renders them.
        let text = EMOJI.replace_all(&text, |c: &regex::Captures| {
            let name = &c[1];
            let title = escape(&name.replace('_', " "));
            let html = if let Some(e) = self.active_realm_emoji(name) {
                Some(format!(
                    "<img alt=\":{name}:\" class=\"emoji\" src=\"{}\" title=\"{title}\">",
                    escape(&self.emoji_url(&e.file_name))
                ))
            } else {
                crate::realm::emoji::unicode_emoji_code(name).map(|code| {
                    format!(
                        "<span aria-label=\"{title}\" class=\"emoji emoji-{code}\" role=\"img\" title=\"{title}\">:{name}:</span>"
                    )
                })
            };
            match html {
                Some(html) => {
                    mentions.push(Mention {
                        source: c[0].to_owned(),
                        html,
                    });
                    format!("{OPEN}{}{CLOSE}", mentions.len() - 1)
                }
                None => c[0].to_owned(),
            }
        });
        out.html = render(&text, &mentions, &self.compiled_linkifiers());
        out
    }
}

/// Puts mentions' sources back (inside code).
fn restore(text: &str, mentions: &[Mention]) -> String {
    PLACEHOLDER
        .replace_all(text, |c: &regex::Captures| {
            c[1].parse::<usize>()
                .ok()
                .and_then(|i| mentions.get(i))
                .map_or_else(String::new, |m| m.source.clone())
        })
        .into_owned()
}

/// Text as HTML: mentions as their HTML, linkifier matches and bare URLs as links, the
/// rest escaped.
fn text_html(
    text: &str,
    mentions: &[Mention],
    in_link: bool,
    linkifiers: &[CompiledLinkifier],
) -> String {
    let mut out = String::new();
    let mut last = 0;
    for c in PLACEHOLDER.captures_iter(text) {
        let m = c.get(0).map_or(0..0, |m| m.range());
        out.push_str(&linkified_html(&text[last..m.start], in_link, linkifiers));
        if let Some(mention) = c[1].parse::<usize>().ok().and_then(|i| mentions.get(i)) {
            out.push_str(&mention.html);
        }
        last = m.end;
    }
    out.push_str(&linkified_html(&text[last..], in_link, linkifiers));
    out
}

/// The realm's linkifiers first (outside links), then bare URLs.
fn linkified_html(text: &str, in_link: bool, linkifiers: &[CompiledLinkifier]) -> String {
    if in_link || linkifiers.is_empty() {
        return plain_html(text, in_link);
    }
    linkify(text, linkifiers)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(t) => plain_html(&t, false),
            Piece::Link { url, text } => {
                format!("<a href=\"{}\">{}</a>", escape(&url), escape(&text))
            }
        })
        .collect()
}

fn plain_html(text: &str, in_link: bool) -> String {
    if in_link {
        return escape(text);
    }
    let mut out = String::new();
    let mut last = 0;
    for m in URL.find_iter(text) {
        out.push_str(&escape(&text[last..m.start()]));
        let url = escape(m.as_str());
        out.push_str(&format!("<a href=\"{url}\">{url}</a>"));
        last = m.end();
    }
    out.push_str(&escape(&text[last..]));
    out
}

fn render(text: &str, mentions: &[Mention], linkifiers: &[CompiledLinkifier]) -> String {
    let text = text.trim_end();
    if text.trim().is_empty() {
        return String::new();
    }
    let mut in_code = false;
    let mut in_link = 0usize;
    // Lines of the raw-HTML block being shown as a paragraph.
    let mut html_lines: Option<usize> = None;
    // Nesting depth inside a link whose URL Zulip would not link (its source is shown
    // as text instead, and its inner events are dropped).
    let mut refused = 0usize;
    let parser = Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH)
        .into_offset_iter()
        .filter_map(|(event, range)| {
            if refused > 0 {
                match event {
                    Event::Start(_) => refused += 1,
                    Event::End(_) => refused -= 1,
                    _ => {}
                }
                return None;
            }
            Some(match event {
                // Zulip has no raw HTML blocks: their lines are a paragraph of text.
                Event::Start(Tag::HtmlBlock) => {
                    html_lines = Some(0);
                    Event::Html(CowStr::from("<p>"))
                }
                Event::End(TagEnd::HtmlBlock) => {
                    html_lines = None;
                    Event::Html(CowStr::from("</p>\n"))
                }
                Event::Html(raw) | Event::InlineHtml(raw) => {
                    let line = text_html(&raw, mentions, true, linkifiers);
                    match html_lines.as_mut() {
                        Some(n) => {
                            let line = line.trim_end_matches('\n');
                            *n += 1;
                            Event::Html(CowStr::from(if *n == 1 {
                                line.to_owned()
                            } else {
                                format!("<br>\n{line}")
                            }))
                        }
                        None => Event::Html(CowStr::from(line)),
                    }
                }
                Event::SoftBreak => Event::HardBreak,
                Event::Start(Tag::Heading { .. }) => Event::Start(Tag::Paragraph),
                Event::End(TagEnd::Heading(_)) => Event::End(TagEnd::Paragraph),
                Event::Start(Tag::Image { dest_url, .. }) => {
                    match sanitize_url(&restore(&dest_url, mentions)) {
                        Some(url) => {
                            in_link += 1;
                            Event::Html(CowStr::from(format!("<a href=\"{}\">", escape(&url))))
                        }
                        None => {
                            refused = 1;
                            Event::Html(CowStr::from(text_html(
                                &text[range],
                                mentions,
                                true,
                                linkifiers,
                            )))
                        }
                    }
                }
                Event::End(TagEnd::Image) => {
                    in_link = in_link.saturating_sub(1);
                    Event::Html(CowStr::from("</a>"))
                }
                // Zulip's `sanitize_url`: a link to a URL it refuses is no link at all,
                // its source stays as text.
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }) => match sanitize_url(&restore(&dest_url, mentions)) {
                    Some(url) => {
                        in_link += 1;
                        Event::Start(Tag::Link {
                            link_type,
                            dest_url: CowStr::from(url),
                            title,
                            id,
                        })
                    }
                    None => {
                        refused = 1;
                        Event::Html(CowStr::from(text_html(
                            &text[range],
                            mentions,
                            true,
                            linkifiers,
                        )))
                    }
                },
                Event::End(TagEnd::Link) => {
                    in_link = in_link.saturating_sub(1);
                    Event::End(TagEnd::Link)
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    in_code = true;
                    let lang = match &kind {
                        CodeBlockKind::Fenced(l) => l.split_whitespace().next().unwrap_or(""),
                        CodeBlockKind::Indented => "",
                    };
                    let attr = if lang.is_empty() {
                        String::new()
                    } else {
                        format!(" data-code-language=\"{}\"", escape(lang))
                    };
                    Event::Html(CowStr::from(format!(
                        "<div class=\"codehilite\"{attr}><pre><span></span><code>"
                    )))
                }
                Event::End(TagEnd::CodeBlock) => {
                    in_code = false;
                    Event::Html(CowStr::from("</code></pre></div>\n"))
                }
                Event::Code(code) => Event::Code(CowStr::from(restore(&code, mentions))),
                Event::Text(t) if in_code => {
                    Event::Html(CowStr::from(escape(&restore(&t, mentions))))
                }
                Event::Text(t) => Event::Html(CowStr::from(text_html(
                    &t,
                    mentions,
                    in_link > 0,
                    linkifiers,
                ))),
                other => other,
            })
        });
    let mut out = String::with_capacity(text.len() + 16);
    html::push_html(&mut out, parser);
    out.replace("<br />", "<br>").trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use crate::realm::dev;
    use crate::realm::{Cx, ManualClock, Realm};

    fn realm() -> Realm {
        let clock = ManualClock::new(1_700_000_000_000);
        dev::testing::dev_realm(&mut Cx::new(&clock))
    }

    #[test]
    fn paragraphs_code_and_quotes() {
        let r = realm();
        assert_eq!(
            r.render_message("original content").html,
            "<p>original content</p>"
        );
        assert_eq!(
            r.render_message("Peace!\n```quote\nI've learned that\nfeel.\n```")
                .html,
            "<p>Peace!</p>\n<blockquote>\n<p>I&#39;ve learned that<br>\nfeel.</p>\n</blockquote>"
        );
        assert_eq!(
            r.render_message("```\nlet x = 1 < 2;\n```").html,
            "<div class=\"codehilite\"><pre><span></span><code>let x = 1 &lt; 2;\n</code></pre></div>"
        );
        assert_eq!(
            r.render_message("<b>x</b>").html,
            "<p>&lt;b&gt;x&lt;/b&gt;</p>"
        );
        // Raw HTML blocks are paragraphs of text, as Zulip has no HTML blocks.
        assert_eq!(
            r.render_message("<script>x</script>").html,
            "<p>&lt;script&gt;x&lt;/script&gt;</p>"
        );
        assert_eq!(
            r.render_message("<div>\nhello\n</div>\n\nafter").html,
            "<p>&lt;div&gt;<br>\nhello<br>\n&lt;/div&gt;</p>\n<p>after</p>"
        );
        assert_eq!(
            r.render_message("see https://zulip.com.").html,
            "<p>see <a href=\"https://zulip.com\">https://zulip.com</a>.</p>"
        );
    }

    #[test]
    fn group_mentions_render_and_mention_the_members() {
        use crate::realm::groups::UserGroup;
        use crate::realm::{GroupChange, UserId};
        let mut r = realm();
        let members: Vec<UserId> = r
            .users
            .values()
            .filter(|u| !u.is_bot())
            .take(2)
            .map(|u| u.id)
            .collect();
        let id = r.groups.keys().max().copied().unwrap_or_default() + 1;
        r.apply(&crate::realm::Change::Group(GroupChange::UserGroupCreated(
            UserGroup {
                id,
                name: "hamletcharacters".into(),
                description: String::new(),
                system: None,
                members,
                subgroups: Vec::new(),
                date_created: 0,
                creator_id: None,
            },
        )));
        let g = r.group_by_name("hamletcharacters").expect("group").clone();
        let out = r.render_message("@*hamletcharacters* look");
        assert_eq!(
            out.html,
            format!(
                "<p><span class=\"user-group-mention\" data-user-group-id=\"{}\">@hamletcharacters</span> look</p>",
                g.id
            )
        );
        assert_eq!(out.mentioned_groups, vec![g.id]);
        let mut members = out.mentioned.clone();
        members.sort_unstable();
        assert_eq!(members, r.group_members_recursive(&g));
        // Silently: rendered, nobody mentioned.
        let out = r.render_message("@_*hamletcharacters*");
        assert_eq!(
            out.html,
            format!(
                "<p><span class=\"user-group-mention silent\" data-user-group-id=\"{}\">hamletcharacters</span></p>",
                g.id
            )
        );
        assert!(out.mentioned.is_empty() && out.mentioned_groups.is_empty());
        // A role's group, or no group: text (and emphasis), as before.
        for text in ["@*role:members*", "@*nobody here*"] {
            let out = r.render_message(text);
            assert!(!out.html.contains("user-group-mention"), "{}", out.html);
            assert!(out.mentioned.is_empty());
        }
    }

    #[test]
    fn links_to_refused_urls_stay_text() {
        let r = realm();
        for (source, html) in [
            (
                "[a](javascript:alert(1))",
                "<p>[a](javascript:alert(1))</p>",
            ),
            ("[a](JavaScript:x) b", "<p>[a](JavaScript:x) b</p>"),
            ("![a](javascript:x)", "<p>![a](javascript:x)</p>"),
            ("<javascript:x>", "<p>&lt;javascript:x&gt;</p>"),
            ("[**a**](itms://x)", "<p>[**a**](itms://x)</p>"),
            (
                "[a](https://x.org/)",
                "<p><a href=\"https://x.org/\">a</a></p>",
            ),
            ("[a](/relative)", "<p><a href=\"/relative\">a</a></p>"),
            ("[a](x.org)", "<p><a href=\"http://x.org\">a</a></p>"),
        ] {
            assert_eq!(r.render_message(source).html, html, "{source}");
        }
    }

    #[test]
    fn mentions() {
        let r = realm();
        let iago = r.user_by_delivery_email("iago@zulip.com").expect("iago");
        let out = r.render_message(&format!(
            "hi @**{}** and @_**{}**",
            iago.full_name, iago.full_name
        ));
        assert_eq!(out.mentioned, vec![iago.id]);
        assert!(out.html.contains(&format!(
            "<span class=\"user-mention\" data-user-id=\"{}\">@{}</span>",
            iago.id, iago.full_name
        )));
        assert!(out.html.contains("user-mention silent"));
        let out = r.render_message("`@**all**` @**all**");
        assert_eq!(out.wildcard, super::Wildcard::Channel);
        assert!(out.html.starts_with("<p><code>@**all**</code> <span"));
        let out = r.render_message("@**nobody at all**");
        assert_eq!(out.html, "<p>@<strong>nobody at all</strong></p>");
        assert!(out.mentioned.is_empty());
        let out = r.render_message("hi :octopus: `:octopus:` :no_such:");
        assert_eq!(
            out.html,
            "<p>hi <span aria-label=\"octopus\" class=\"emoji emoji-1f419\" role=\"img\" title=\"octopus\">:octopus:</span> <code>:octopus:</code> :no_such:</p>"
        );
        let out = r.render_message("#**Verona>lunch**");
        assert!(out.html.contains("class=\"stream-topic\""), "{}", out.html);
    }
}

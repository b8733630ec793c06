//! HTML escaping, in one place. The server writes HTML that must match, byte for byte,
//! what Zulip's several escapers write, and they differ only in the quotes:
//!
//! | Set | `&` `<` `>` | `"` | `'` | Whose |
//! |-----|-------------|-----|-----|-------|
//! | `ZULIP` | yes | `&quot;` | `&#39;` | Zulip's `escape_html` (message HTML, pages) |
//! | `DJANGO` | yes | `&quot;` | `&#x27;` | Django's `escape` (error fields) |
//! | `DOUBLE_QUOTED` | yes | `&quot;` | as is | Python-Markdown's output (text and `"`-quoted attributes) |
//! | `TEXT` | yes | as is | as is | libxml2's text nodes (the edit-history diff) |

/// Which quotes a set escapes, and how.
#[derive(Debug, Clone, Copy)]
pub struct Set {
    quot: bool,
    apos: Option<&'static str>,
}

pub const ZULIP: Set = Set {
    quot: true,
    apos: Some("&#39;"),
};
pub const DJANGO: Set = Set {
    quot: true,
    apos: Some("&#x27;"),
};
pub const DOUBLE_QUOTED: Set = Set {
    quot: true,
    apos: None,
};
pub const TEXT: Set = Set {
    quot: false,
    apos: None,
};

/// Appends `s` to `out`, escaped by `set`.
pub fn push(out: &mut String, s: &str, set: Set) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if set.quot => out.push_str("&quot;"),
            '\'' => match set.apos {
                Some(entity) => out.push_str(entity),
                None => out.push('\''),
            },
            c => out.push(c),
        }
    }
}

/// `s` escaped by `set`.
pub fn with(s: &str, set: Set) -> String {
    let mut out = String::with_capacity(s.len());
    push(&mut out, s, set);
    out
}

/// `s` escaped as Zulip's `escape_html` escapes it (the common case).
pub fn html(s: &str) -> String {
    with(s, ZULIP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sets_differ_only_in_quotes() {
        let s = r#"a&b<c>d"e'f"#;
        assert_eq!(html(s), "a&amp;b&lt;c&gt;d&quot;e&#39;f");
        assert_eq!(with(s, DJANGO), "a&amp;b&lt;c&gt;d&quot;e&#x27;f");
        assert_eq!(with(s, DOUBLE_QUOTED), "a&amp;b&lt;c&gt;d&quot;e'f");
        assert_eq!(with(s, TEXT), "a&amp;b&lt;c&gt;d\"e'f");
    }
}

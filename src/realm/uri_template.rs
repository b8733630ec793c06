//! RFC 6570 URI templates, as Zulip validates and expands linkifier `url_template`s
//! (Zulip uses the `uri_template` Python package; its rules are kept here).
//!
//! A template is literal text and `{...}` expressions. An expression is an optional
//! operator (`+ # . / ; ? &`, or the package's `,` and `,+` extensions) and a
//! comma-separated list of variables, each a name of `[A-Za-z0-9_.]` or `%XX`
//! characters with an optional `:N` prefix modifier (1-999) or `*` explode modifier.
//! Literal text may hold any character but a brace. The reserved operators `= ! @ |`
//! and anything else make the template invalid.
//!
//! Linkifier values are strings, so lists and maps (the explode modifier's purpose)
//! never occur: `*` changes nothing for a string value.

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression { op: Op, vars: Vec<Var> },
}

/// An expression's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    QueryContinuation,
    Comma,
    ReservedComma,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Var {
    /// The name the value is looked up by.
    name: String,
    /// `:N`: at most N characters of the value (0: all).
    max_length: usize,
}

/// A variable's value: `None` when undefined (an optional group that did not match),
/// which RFC 6570 expands to nothing.
pub type Value<'a> = Option<&'a str>;

impl Op {
    fn first(self) -> &'static str {
        match self {
            Op::Simple | Op::Reserved => "",
            Op::Fragment => "#",
            Op::Label => ".",
            Op::Path => "/",
            Op::PathParam => ";",
            Op::Query => "?",
            Op::QueryContinuation => "&",
            Op::Comma | Op::ReservedComma => ",",
        }
    }

    fn separator(self) -> &'static str {
        match self {
            Op::Label => ".",
            Op::Path => "/",
            Op::PathParam => ";",
            Op::Query | Op::QueryContinuation => "&",
            _ => ",",
        }
    }

    fn named(self) -> bool {
        matches!(self, Op::PathParam | Op::Query | Op::QueryContinuation)
    }

    /// What a named variable with an empty value expands to after its name.
    fn if_empty(self) -> &'static str {
        match self {
            Op::Query | Op::QueryContinuation => "=",
            _ => "",
        }
    }

    fn allows_reserved(self) -> bool {
        matches!(self, Op::Reserved | Op::Fragment | Op::ReservedComma)
    }
}

fn is_var_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn parse_var(spec: &str) -> Option<Var> {
    let first = spec.chars().next()?;
    if !(first.is_ascii_alphanumeric() || first == '_' || first == '%') {
        return None;
    }
    let (body, max_length) = match spec.split_once(':') {
        Some((body, digits)) => {
            if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let n: usize = digits.parse().ok()?;
            if n == 0 {
                return None;
            }
            (body, n)
        }
        None => (spec.strip_suffix('*').unwrap_or(spec), 0),
    };
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            i += 3;
        } else if is_var_char(c as char) {
            i += 1;
        } else {
            return None;
        }
    }
    if body.is_empty() {
        return None;
    }
    Some(Var {
        name: body.to_owned(),
        max_length,
    })
}

fn parse_expression(inner: &str) -> Option<Part> {
    let simple = inner
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%');
    let (op, rest) = if simple {
        (Op::Simple, inner)
    } else if let Some(rest) = inner.strip_prefix(",+") {
        (Op::ReservedComma, rest)
    } else {
        let mut chars = inner.chars();
        let op = match chars.next()? {
            '+' => Op::Reserved,
            '#' => Op::Fragment,
            '.' => Op::Label,
            '/' => Op::Path,
            ';' => Op::PathParam,
            '?' => Op::Query,
            '&' => Op::QueryContinuation,
            ',' => Op::Comma,
            _ => return None,
        };
        (op, chars.as_str())
    };
    let vars = rest
        .split(',')
        .map(parse_var)
        .collect::<Option<Vec<Var>>>()?;
    Some(Part::Expression { op, vars })
}

impl UriTemplate {
    /// Parses a template; `None` when Zulip would answer "Invalid URL template.".
    pub fn parse(template: &str) -> Option<UriTemplate> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(open) => {
                    let literal = &rest[..open];
                    if literal.contains('}') {
                        return None;
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(literal.to_owned()));
                    }
                    let after = &rest[open + 1..];
                    let close = after.find('}')?;
                    let inner = &after[..close];
                    if inner.contains('{') {
                        return None;
                    }
                    parts.push(parse_expression(inner)?);
                    rest = &after[close + 1..];
                }
                None => {
                    if rest.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Some(UriTemplate { parts })
    }

    /// The distinct variable names, in order of first use.
    pub fn variable_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in &self.parts {
            if let Part::Expression { vars, .. } = part {
                for v in vars {
                    if !out.contains(&v.name) {
                        out.push(v.name.clone());
                    }
                }
            }
        }
        out
    }

    /// Expands the template; `lookup` gives each variable's value.
    pub fn expand<'a>(&self, lookup: impl Fn(&str) -> Value<'a>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(s) => out.push_str(s),
                Part::Expression { op, vars } => {
                    let mut first = true;
                    for var in vars {
                        let Some(value) = lookup(&var.name) else {
                            continue;
                        };
                        out.push_str(if first { op.first() } else { op.separator() });
                        first = false;
                        let value: String = if var.max_length > 0 {
                            value.chars().take(var.max_length).collect()
                        } else {
                            value.to_owned()
                        };
                        if op.named() {
                            out.push_str(&encode(&var.name, true));
                            if value.is_empty() {
                                out.push_str(op.if_empty());
                                continue;
                            }
                            out.push('=');
                        }
                        out.push_str(&encode(&value, op.allows_reserved()));
                    }
                }
            }
        }
        out
    }
}

/// Percent-encodes a value: unreserved characters stay; with `reserved`, RFC 3986
/// reserved characters and existing `%XX` triplets stay too.
fn encode(value: &str, reserved: bool) -> String {
    const RESERVED: &[u8] = b":/?#[]@!$&'()*+,;=";
    let bytes = value.as_bytes();
    let mut out = String::with_capacity(value.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        if unreserved || (reserved && RESERVED.contains(&b)) {
            out.push(b as char);
        } else if reserved
            && b == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            out.push_str(&value[i..i + 3]);
            i += 3;
            continue;
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(t: &str) -> bool {
        UriTemplate::parse(t).is_some()
    }

    #[test]
    fn zulip_valid_and_invalid_templates() {
        // From Zulip's `test_valid_urls`.
        for t in [
            "http://example.com/",
            "https://example.com/",
            "https://user:password@example.com/",
            "https://example.com/@user/thing",
            "https://example.com/!path",
            "https://example.com/foo.bar",
            "https://example.com/foo[bar]",
            "https://example.com/{foo}",
            "https://example.com/{foo}{bars}",
            "https://example.com/{foo}/and/{bar}",
            "https://example.com/?foo={foo}",
            "https://example.com/%ab",
            "https://example.com/%ba",
            "https://example.com/%21",
            "https://example.com/words%20with%20spaces",
            "https://example.com/back%20to%20{back}",
            "https://example.com/encoded%2fwith%2fletters",
            "https://example.com/encoded%2Fwith%2Fupper%2Fcase%2Fletters",
            "https://example.com/%%",
            "https://example.com/%%(",
            "https://example.com/%%()",
            "https://example.com/%%(foo",
            "https://example.com/%%(foo)",
            "https://example.com/%%(foo)s",
            "https://example.com{/foo,bar,baz}",
            "https://example.com/{?foo*}",
            "https://example.com/{+foo,bar}",
            "https://chat{.domain}.com/{#foo}",
            "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}",
            "$not_a_url$",
            "",
        ] {
            assert!(valid(t), "{t}");
        }
        for t in [
            "https://example.com/{foo",
            "https://example.com/{{}",
            "https://example.com/{//foo}",
            "https://example.com/{bar++}",
            "{id",
            "{}",
            "a}b",
            "{=x}",
            "{x:0}",
            "{x:1000}",
            "{a,}",
        ] {
            assert!(!valid(t), "{t}");
        }
    }

    #[test]
    fn names_and_expansion() {
        let t = UriTemplate::parse(
            "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}",
        )
        .expect("valid");
        assert_eq!(
            t.variable_names(),
            ["zone", "domain", "location", "id", "name", "chapter", "fragment"]
        );
        let values = |n: &str| -> Value<'static> {
            Some(match n {
                "zone" => "z",
                "domain" => "d",
                "location" => "l o",
                "id" => "7",
                "name" => "",
                "chapter" => "12",
                "fragment" => "abcdefgh",
                _ => return None,
            })
        };
        assert_eq!(
            t.expand(values),
            "https://zone_z.d.net/ticket/l%20o/7?name=&chapter=12#abcde"
        );
        let t = UriTemplate::parse("https://github.com/zulip/{repo}/pull/{id}").expect("valid");
        assert_eq!(
            t.expand(|n| if n == "repo" { Some("a/b") } else { Some("1") }),
            "https://github.com/zulip/a%2Fb/pull/1"
        );
        let t = UriTemplate::parse("{+path}/x{;p}{&q}").expect("valid");
        assert_eq!(
            t.expand(|n| match n {
                "path" => Some("/a/b%20c"),
                "p" => Some(""),
                _ => None,
            }),
            "/a/b%20c/x;p"
        );
    }
}

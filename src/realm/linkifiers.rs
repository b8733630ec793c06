//! Linkifiers (seed 2.11, 4.11): realm rules that turn text matching a regular
//! expression into a link built from an RFC 6570 URL template.
//!
//! Validation follows Zulip's `RealmFilter.full_clean()` (`zerver/models/linkifiers.py`):
//! blank fields, the pattern compiled as an RE2 regular expression (texts as RE2 words
//! them: "Bad regular expression: missing ): (foo"), the template parsed as a URI
//! template, the template's variables equal to the pattern's named groups, and the
//! pattern unique in the realm. A failure is Zulip's `ValidationFailureError`: the first
//! message as `msg`, every message by field in `errors`.
//!
//! Patterns are matched with the `regex` crate, whose syntax is RE2's; where the two
//! differ the RE2 reading wins: a brace that opens no valid repetition is a literal,
//! stacked repetition operators (`a**`) are refused, and counts above 1000 too.
//!
//! Rendering (`linkify`): Zulip's `prepare_linkifier_pattern` wraps each pattern so a
//! match starts at the start of the text, after whitespace or after one of `'"(,:<`,
//! and ends at the end of the text or before a character that is not a letter or a
//! digit. Linkifiers run in order; text an earlier one linked is not seen by later ones.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use regex::Regex;
use regex_syntax::ast::{self, Ast, ErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::uri_template::UriTemplate;
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// A linkifier id, unique within a realm.
pub type LinkifierId = u64;

/// RE2's largest repetition count.
const MAX_REPEAT: u32 = 1000;

/// One linkifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Linkifier {
    pub id: LinkifierId,
    /// The pattern as the administrator wrote it (stripped).
    pub pattern: String,
    pub url_template: String,
    /// Processing order: lower first, ties by id.
    pub order: i64,
}

/// Facts about linkifiers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LinkifierChange {
    /// A linkifier was added (last in order).
    Added(Linkifier),
    /// A linkifier's pattern and template changed.
    Updated {
        id: LinkifierId,
        pattern: String,
        url_template: String,
    },
    /// A linkifier was removed.
    Removed { id: LinkifierId },
    /// Linkifiers were reordered: `ids[i]` gets order `i`.
    Reordered { ids: Vec<LinkifierId> },
}

/// A linkifier ready to apply: its wrapped regular expression and its template.
#[derive(Debug, Clone)]
pub struct CompiledLinkifier {
    regex: Regex,
    template: UriTemplate,
    /// Capture index of the match itself (after the leading boundary group).
    outer: usize,
}

/// The realm's linkifiers compiled: by id, and in processing order. Derived from
/// `Realm::linkifiers`, so two caches are always equal. A change compiles only the
/// linkifier it adds or updates (the actor's work stays independent of their number).
#[derive(Debug, Clone, Default)]
pub struct LinkifierCache {
    by_id: imbl::OrdMap<LinkifierId, CompiledLinkifier>,
    ordered: Arc<Vec<CompiledLinkifier>>,
}

impl PartialEq for LinkifierCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

// ---- validation ---------------------------------------------------------------

/// RE2's wording of an error: its code text, then `: ` and the offending text.
fn re2(code: &str, arg: &str) -> String {
    if arg.is_empty() {
        format!("Bad regular expression: {code}")
    } else {
        format!("Bad regular expression: {code}: {arg}")
    }
}

/// Where the group whose option or name starts before `at` opens (`(?`).
fn group_start(pattern: &str, at: usize) -> usize {
    pattern[..at.min(pattern.len())].rfind("(?").unwrap_or(0)
}

/// Stacked repetitions and counts RE2 refuses, found in a parsed pattern.
struct Re2Checks<'p> {
    pattern: &'p str,
}

impl ast::Visitor for Re2Checks<'_> {
    type Output = ();
    type Err = String;

    fn finish(self) -> Result<(), String> {
        Ok(())
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), String> {
        let Ast::Repetition(rep) = node else {
            return Ok(());
        };
        let op = &rep.op.span;
        if let ast::RepetitionKind::Range(range) = &rep.op.kind {
            let too_big = match range {
                ast::RepetitionRange::Exactly(n) | ast::RepetitionRange::AtLeast(n) => {
                    *n > MAX_REPEAT
                }
                ast::RepetitionRange::Bounded(a, b) => *a > MAX_REPEAT || *b > MAX_REPEAT,
            };
            if too_big {
                return Err(re2(
                    "invalid repetition size",
                    &self.pattern[op.start.offset..op.end.offset],
                ));
            }
        }
        if let Ast::Repetition(inner) = rep.ast.as_ref() {
            return Err(re2(
                "bad repetition operator",
                &self.pattern[inner.op.span.start.offset..op.end.offset],
            ));
        }
        Ok(())
    }
}

/// The length of a valid RE2 count (`{n}`, `{n,}`, `{n,m}`) at the start of `s`.
fn repeat_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix('{')?;
    let close = body.find('}')?;
    let inner = &body[..close];
    let (low, high) = inner.split_once(',').unwrap_or((inner, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    (digits(low) && (high.is_empty() || digits(high))).then_some(close + 2)
}

/// Maps a parse error of the `regex` crate to RE2's text, or `None` for a brace the
/// crate reads as a repetition and RE2 as a literal (the caller escapes it).
fn re2_error(pattern: &str, e: &ast::Error) -> Option<String> {
    let span = e.span();
    let (start, end) = (span.start.offset, span.end.offset.min(pattern.len()));
    let text = &pattern[start..end.max(start)];
    Some(match e.kind() {
        ErrorKind::RepetitionCountUnclosed
        | ErrorKind::RepetitionCountDecimalEmpty
        | ErrorKind::DecimalEmpty
        | ErrorKind::DecimalInvalid => return None,
        ErrorKind::GroupUnclosed => re2("missing )", pattern),
        ErrorKind::GroupUnopened => re2("unexpected )", pattern),
        ErrorKind::ClassUnclosed => re2("missing ]", &pattern[start..]),
        ErrorKind::ClassRangeInvalid | ErrorKind::ClassRangeLiteral => {
            re2("invalid character class range", text)
        }
        ErrorKind::UnicodeClassInvalid => re2("invalid character class range", text),
        ErrorKind::EscapeUnexpectedEof => re2("trailing \\", ""),
        ErrorKind::ClassEscapeInvalid
        | ErrorKind::EscapeHexEmpty
        | ErrorKind::EscapeHexInvalid
        | ErrorKind::EscapeHexInvalidDigit
        | ErrorKind::EscapeUnrecognized
        | ErrorKind::UnsupportedBackreference => re2("invalid escape sequence", text),
        ErrorKind::RepetitionMissing => {
            let rest = &pattern[start..];
            let len = if rest.starts_with('{') {
                // RE2 reads a brace that opens no valid count as a literal.
                repeat_len(rest)?
            } else {
                rest.chars().next().map_or(0, char::len_utf8)
            };
            let len = if rest[len..].starts_with('?') {
                len + 1
            } else {
                len
            };
            re2("no argument for repetition operator", &rest[..len])
        }
        ErrorKind::RepetitionCountInvalid => re2("invalid repetition size", text),
        ErrorKind::GroupNameDuplicate { .. }
        | ErrorKind::GroupNameEmpty
        | ErrorKind::GroupNameInvalid => {
            let open = group_start(pattern, start);
            let close = pattern[start..]
                .find('>')
                .map_or(pattern.len(), |i| start + i + 1);
            re2("invalid named capture group", &pattern[open..close])
        }
        ErrorKind::GroupNameUnexpectedEof => re2(
            "invalid named capture group",
            &pattern[group_start(pattern, start)..],
        ),
        ErrorKind::FlagDanglingNegation
        | ErrorKind::FlagDuplicate { .. }
        | ErrorKind::FlagRepeatedNegation { .. }
        | ErrorKind::FlagUnexpectedEof
        | ErrorKind::FlagUnrecognized
        | ErrorKind::UnsupportedLookAround => {
            let open = group_start(pattern, start);
            re2("invalid perl operator", &pattern[open..end.max(open)])
        }
        _ => re2("invalid escape sequence", text),
    })
}

/// Parses `pattern` as RE2 would; returns the pattern in the `regex` crate's syntax
/// (literal braces escaped) and its named groups, or RE2's error text.
pub fn check_pattern(pattern: &str) -> Result<(String, BTreeSet<String>), String> {
    let mut rust = pattern.to_owned();
    // Each round escapes one more brace; a pattern has finitely many.
    for _ in 0..=pattern.len() {
        let parsed = ast::parse::ParserBuilder::new()
            .nest_limit(1000)
            .build()
            .parse(&rust);
        match parsed {
            Ok(tree) => {
                ast::visit(&tree, Re2Checks { pattern: &rust })?;
                let regex = Regex::new(&rust).map_err(|e| match e {
                    regex::Error::CompiledTooBig(_) => {
                        re2("pattern too large - compile failed", "")
                    }
                    _ => re2("invalid escape sequence", ""),
                })?;
                let names = regex.capture_names().flatten().map(str::to_owned).collect();
                return Ok((rust, names));
            }
            Err(e) => match re2_error(&rust, &e) {
                Some(msg) => return Err(msg),
                None => {
                    // The brace that opened the failed repetition becomes a literal.
                    // The span ends on a character boundary; take that character too.
                    let end = e.span().end.offset;
                    let upto = rust
                        .get(end..)
                        .and_then(|rest| rest.chars().next())
                        .map_or(rust.len(), |c| end + c.len_utf8());
                    let at = rust[..upto]
                        .rfind('{')
                        .ok_or_else(|| re2("invalid repetition size", ""))?;
                    rust.insert(at, '\\');
                }
            },
        }
    }
    Err(re2("invalid repetition size", ""))
}

/// Zulip's `ValidationFailureError`: the first message, and all by field.
pub(crate) fn validation_failure(errors: Vec<(&str, String)>) -> ApiError {
    let mut by_field: Map<String, Value> = Map::new();
    for (field, msg) in &errors {
        let entry = by_field
            .entry((*field).to_owned())
            .or_insert_with(|| json!([]));
        if let Value::Array(list) = entry {
            list.push(msg.clone().into());
        }
    }
    let first = errors.first().map(|(_, m)| m.clone()).unwrap_or_default();
    ApiError::bad_request(first).with("errors", Value::Object(by_field))
}

/// `PATCH /realm/filters/{filter_id}`: which linkifier, and its new pattern and URL.
#[derive(Debug, Clone)]
pub struct UpdateLinkifier {
    /// As sent: the lookup (and its error) belongs to the rule.
    pub id: i64,
    pub spec: LinkifierSpec,
}

/// `DELETE /realm/filters/{filter_id}`.
#[derive(Debug, Clone)]
pub struct RemoveLinkifier {
    pub id: i64,
}

/// `PATCH /realm/linkifiers`: every linkifier's id, in the new processing order.
#[derive(Debug, Clone)]
pub struct ReorderLinkifiers {
    pub ids: Vec<i64>,
}

/// A pattern and template checked as far as they can be without the realm (on an
/// HTTP worker): `full_clean()` without the uniqueness check.
#[derive(Debug, Clone)]
pub struct LinkifierSpec {
    pub pattern: String,
    pub url_template: String,
    /// The field errors, in Zulip's order (empty when valid).
    errors: Vec<(&'static str, String)>,
}

impl LinkifierSpec {
    /// Strips both values and runs Zulip's field checks and `RealmFilter.clean()`.
    pub fn check(pattern: &str, url_template: &str) -> LinkifierSpec {
        let pattern = pattern.trim().to_owned();
        let url_template = url_template.trim().to_owned();
        let mut errors = Vec::new();
        const BLANK: &str = "This field cannot be blank.";
        if pattern.is_empty() {
            errors.push(("pattern", BLANK.to_owned()));
        }
        let template = UriTemplate::parse(&url_template);
        if url_template.is_empty() {
            errors.push(("url_template", BLANK.to_owned()));
        } else if template.is_none() {
            errors.push(("url_template", "Invalid URL template.".to_owned()));
        }
        match check_pattern(&pattern) {
            Err(msg) => errors.push(("__all__", msg)),
            Ok((_, groups)) => {
                if let Some(template) = template {
                    let vars: BTreeSet<String> = template.variable_names().into_iter().collect();
                    if let Some(name) = vars.difference(&groups).next() {
                        errors.push((
                            "__all__",
                            format!(
                                "Group '{name}' in URL template is not present in linkifier pattern."
                            ),
                        ));
                    } else if let Some(name) = groups.difference(&vars).next() {
                        errors.push((
                            "__all__",
                            format!(
                                "Group '{name}' in linkifier pattern is not present in URL template."
                            ),
                        ));
                    }
                }
            }
        }
        LinkifierSpec {
            pattern,
            url_template,
            errors,
        }
    }

    /// The full check: the field errors, then uniqueness of the pattern in the realm
    /// (skipped when the pattern itself failed, as Django's `validate_unique`).
    fn validate(&self, realm: &Realm, except: Option<LinkifierId>) -> ApiResult<()> {
        let mut errors = self.errors.clone();
        let pattern_failed = errors.iter().any(|(f, _)| *f == "pattern");
        if !pattern_failed
            && realm
                .linkifiers
                .values()
                .any(|l| Some(l.id) != except && l.pattern == self.pattern)
        {
            errors.push((
                "__all__",
                "Realm filter with this Realm and Pattern already exists.".to_owned(),
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(validation_failure(errors))
        }
    }
}

fn not_found() -> ApiError {
    ApiError::bad_request("Linkifier not found.")
}

// ---- compiling and applying ----------------------------------------------------

impl CompiledLinkifier {
    /// Compiles a stored linkifier for rendering; `None` if it no longer compiles
    /// (it was valid when stored).
    pub fn new(l: &Linkifier) -> Option<CompiledLinkifier> {
        let (rust, _) = check_pattern(&l.pattern).ok()?;
        let template = UriTemplate::parse(&l.url_template)?;
        let wrapped = format!(r#"(^|[\t\n\x0C\r ]|['"(,:<])({rust})($|[^\pL\pN])"#);
        let regex = Regex::new(&wrapped).ok()?;
        Some(CompiledLinkifier {
            regex,
            template,
            outer: 2,
        })
    }
}

/// A piece of linkified text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Link { url: String, text: String },
}

/// Marks text right after a link: no match may start there.
const AFTER_LINK: char = '\u{3}';
/// Marks text right before a link: a match may end there.
const BEFORE_LINK: char = '\u{2}';

/// Applies the linkifiers, in order, to plain text (never inside code or links: the
/// Markdown renderer only hands plain text here).
pub fn linkify(text: &str, linkifiers: &[CompiledLinkifier]) -> Vec<Piece> {
    let mut pieces = vec![Piece::Text(text.to_owned())];
    for l in linkifiers {
        let mut out = Vec::with_capacity(pieces.len());
        for i in 0..pieces.len() {
            let Piece::Text(t) = &pieces[i] else {
                out.push(pieces[i].clone());
                continue;
            };
            let link_before = i > 0 && matches!(pieces[i - 1], Piece::Link { .. });
            let link_after = matches!(pieces.get(i + 1), Some(Piece::Link { .. }));
            out.extend(apply_one(t, l, link_before, link_after));
        }
        pieces = out;
    }
    pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    pieces
}

fn apply_one(text: &str, l: &CompiledLinkifier, link_before: bool, link_after: bool) -> Vec<Piece> {
    let mut hay = String::with_capacity(text.len() + 2);
    if link_before {
        hay.push(AFTER_LINK);
    }
    let offset = hay.len();
    hay.push_str(text);
    let end = hay.len();
    if link_after {
        hay.push(BEFORE_LINK);
    }
    let mut out = Vec::new();
    let (mut pos, mut copied) = (offset, offset);
    while pos <= end {
        let Some(caps) = l.regex.captures_at(&hay, pos) else {
            break;
        };
        let Some(m) = caps.get(l.outer) else {
            break;
        };
        if m.start() < offset || m.end() > end || m.is_empty() {
            // Only a match inside this text counts; look again one character on.
            let next = hay[m.start().max(pos)..]
                .chars()
                .next()
                .map_or(hay.len() + 1, |c| m.start().max(pos) + c.len_utf8());
            pos = next;
            continue;
        }
        let url = l
            .template
            .expand(|name| caps.name(name).map(|g| g.as_str()));
        // A URL Zulip would not link leaves the text as it is.
        if let Some(url) = sanitize_url(&url) {
            out.push(Piece::Text(hay[copied..m.start()].to_owned()));
            out.push(Piece::Link {
                url,
                text: m.as_str().to_owned(),
            });
            copied = m.end();
        }
        pos = m.end();
    }
    out.push(Piece::Text(hay[copied..end].to_owned()));
    out
}

/// Zulip's `sanitize_url`: relative and fragment links pass, a URL without a scheme is
/// read as `http://`, and only a few schemes are linked.
pub fn sanitize_url(url: &str) -> Option<String> {
    const ALLOWED: [&str; 5] = ["http", "https", "ftp", "file", "mailto"];
    let url = url.replace(' ', "%20");
    let scheme = url.split_once(':').and_then(|(s, _)| {
        let mut chars = s.chars();
        let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        ok.then(|| s.to_ascii_lowercase())
    });
    match scheme {
        Some(s) if ALLOWED.contains(&s.as_str()) => Some(url),
        Some(_) => None,
        None if url.starts_with("//") => Some(format!("http:{url}")),
        None if url.starts_with('/') || url.starts_with('#') => Some(url),
        None if url
            .split(['/', '?', '#'])
            .next()
            .is_some_and(|p| p.contains('@')) =>
        {
            Some(format!("mailto:{url}"))
        }
        None => Some(format!("http://{url}")),
    }
}

// ---- the realm's rules ------------------------------------------------------------

impl Realm {
    /// Linkifiers in processing order.
    pub fn linkifiers_ordered(&self) -> Vec<&Linkifier> {
        let mut list: Vec<&Linkifier> = self.linkifiers.values().collect();
        list.sort_by_key(|l| (l.order, l.id));
        list
    }

    /// The realm's linkifiers, compiled, in order, for the Markdown renderer.
    pub fn compiled_linkifiers(&self) -> Arc<Vec<CompiledLinkifier>> {
        self.linkifier_cache.ordered.clone()
    }

    /// Compiles every linkifier (after loading a snapshot).
    pub(crate) fn rebuild_linkifier_cache(&mut self) {
        let by_id = self
            .linkifiers
            .values()
            .filter_map(|l| Some((l.id, CompiledLinkifier::new(l)?)))
            .collect();
        self.linkifier_cache.by_id = by_id;
        self.order_linkifier_cache();
    }

    /// Recompiles one linkifier (or drops it from the cache when it is gone).
    fn recompile_linkifier(&mut self, id: LinkifierId) {
        match self.linkifiers.get(&id).and_then(CompiledLinkifier::new) {
            Some(c) => {
                self.linkifier_cache.by_id.insert(id, c);
            }
            None => {
                self.linkifier_cache.by_id.remove(&id);
            }
        }
    }

    /// Puts the compiled linkifiers in processing order (regexes are shared, not copied).
    fn order_linkifier_cache(&mut self) {
        let ordered = self
            .linkifiers_ordered()
            .into_iter()
            .filter_map(|l| self.linkifier_cache.by_id.get(&l.id).cloned())
            .collect();
        self.linkifier_cache.ordered = Arc::new(ordered);
    }

    /// `[{pattern, url_template, id}]`, in processing order (`linkifiers_for_realm`).
    pub fn view_linkifiers(&self) -> Vec<Value> {
        self.linkifiers_ordered()
            .into_iter()
            .map(|l| json!({"pattern": l.pattern, "url_template": l.url_template, "id": l.id}))
            .collect()
    }

    /// `POST /realm/filters`: administrators only; answers the new linkifier's id.
    pub fn decide_add_linkifier(
        &self,
        me: &User,
        spec: LinkifierSpec,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<u64>> {
        self.require_admin(me)?;
        spec.validate(self, None)?;
        let id = self.next_linkifier_id.max(1);
        let order = self
            .linkifiers
            .values()
            .map(|l| l.order + 1)
            .max()
            .unwrap_or(0);
        let l = Linkifier {
            id,
            pattern: spec.pattern,
            url_template: spec.url_template,
            order,
        };
        Ok(Decided::new(
            vec![Change::Linkifier(LinkifierChange::Added(l))],
            id,
        ))
    }

    /// `PATCH /realm/filters/{filter_id}`: administrators only, the lookup first.
    pub fn decide_update_linkifier(
        &self,
        me: &User,
        q: UpdateLinkifier,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let l = self.linkifier(q.id).ok_or_else(not_found)?;
        q.spec.validate(self, Some(l.id))?;
        Ok(Decided::changes(vec![Change::Linkifier(
            LinkifierChange::Updated {
                id: l.id,
                pattern: q.spec.pattern,
                url_template: q.spec.url_template,
            },
        )]))
    }

    /// `DELETE /realm/filters/{filter_id}`: administrators only.
    pub fn decide_remove_linkifier(
        &self,
        me: &User,
        q: RemoveLinkifier,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let l = self.linkifier(q.id).ok_or_else(not_found)?;
        Ok(Decided::changes(vec![Change::Linkifier(
            LinkifierChange::Removed { id: l.id },
        )]))
    }

    /// `PATCH /realm/linkifiers`: administrators only; every linkifier exactly once.
    pub fn decide_reorder_linkifiers(
        &self,
        me: &User,
        q: ReorderLinkifiers,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let ids = q.ids;
        let set: BTreeSet<i64> = ids.iter().copied().collect();
        if set.len() < ids.len() {
            return Err(ApiError::bad_request(
                "The ordered list must not contain duplicated linkifiers",
            ));
        }
        let existing: BTreeSet<i64> = self.linkifiers.keys().map(|id| *id as i64).collect();
        if existing != set {
            return Err(ApiError::bad_request(
                "The ordered list must enumerate all existing linkifiers exactly once",
            ));
        }
        if ids.is_empty() {
            return Ok(Decided::changes(Vec::new()));
        }
        Ok(Decided::changes(vec![Change::Linkifier(
            LinkifierChange::Reordered {
                ids: ids.iter().map(|id| *id as u64).collect(),
            },
        )]))
    }

    fn linkifier(&self, id: i64) -> Option<&Linkifier> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.linkifiers.get(&id))
    }

    pub(crate) fn apply_linkifier_change(&mut self, change: &LinkifierChange) {
        match change {
            LinkifierChange::Added(l) => {
                self.next_linkifier_id = self.next_linkifier_id.max(l.id + 1);
                self.linkifiers.insert(l.id, l.clone());
                self.recompile_linkifier(l.id);
            }
            LinkifierChange::Updated {
                id,
                pattern,
                url_template,
            } => {
                if let Some(l) = self.linkifiers.get_mut(id) {
                    l.pattern = pattern.clone();
                    l.url_template = url_template.clone();
                }
                self.recompile_linkifier(*id);
            }
            LinkifierChange::Removed { id } => {
                self.linkifiers.remove(id);
                self.recompile_linkifier(*id);
            }
            LinkifierChange::Reordered { ids } => {
                let order: BTreeMap<u64, i64> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| (*id, i as i64))
                    .collect();
                for (id, o) in order {
                    if let Some(l) = self.linkifiers.get_mut(&id) {
                        l.order = o;
                    }
                }
            }
        }
        self.order_linkifier_cache();
    }

    /// Every change sends the whole list, as `realm_linkifiers`, to the active users
    /// whose queue declared `linkifier_url_template`.
    pub(crate) fn linkifier_events(&self, _change: &LinkifierChange) -> Vec<Event> {
        vec![Event::new(
            json!({"type": "realm_linkifiers", "realm_linkifiers": self.view_linkifiers()}),
            Audience::users(self.active_user_ids()),
        )
        .for_capability("linkifier_url_template", true)]
    }

    /// Ids of the active users (events for everyone who is logged in).
    pub(crate) fn active_user_ids(&self) -> Vec<UserId> {
        self.users
            .values()
            .filter(|u| u.is_active)
            .map(|u| u.id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(p: &str) -> String {
        check_pattern(p).expect_err(p)
    }

    #[test]
    fn a_brace_before_a_multibyte_character_is_literal() {
        // Found by tests/properties.rs: the failed repetition's span ends before a
        // character of more than one byte.
        for p in ["a{é", "x{🐙}", "{ﷺ", "(?P<id>\\d+){\u{202e}"] {
            let _ = check_pattern(p);
        }
        assert!(check_pattern("a{é").is_ok());
    }

    #[test]
    fn re2_texts() {
        // Zulip's test_create / test_update.
        assert_eq!(err("(foo"), "Bad regular expression: missing ): (foo");
        assert_eq!(
            err(r"ZUL-(?P<id>\d????)"),
            "Bad regular expression: bad repetition operator: ????"
        );
        assert_eq!(
            err("a**"),
            "Bad regular expression: bad repetition operator: **"
        );
        assert_eq!(err("foo)"), "Bad regular expression: unexpected ): foo)");
        assert_eq!(err("x[a-"), "Bad regular expression: missing ]: [a-");
        assert_eq!(
            err("[z-a]"),
            "Bad regular expression: invalid character class range: z-a"
        );
        assert_eq!(
            err("*a"),
            "Bad regular expression: no argument for repetition operator: *"
        );
        assert_eq!(
            err(r"a\q"),
            r"Bad regular expression: invalid escape sequence: \q"
        );
        assert_eq!(err("ab\\"), "Bad regular expression: trailing \\");
        assert_eq!(
            err("a{1001}"),
            "Bad regular expression: invalid repetition size: {1001}"
        );
        assert_eq!(
            err("(?P<x>a)(?P<x>b)"),
            "Bad regular expression: invalid named capture group: (?P<x>"
        );
        assert_eq!(
            err("(?=a)"),
            "Bad regular expression: invalid perl operator: (?="
        );
    }

    #[test]
    fn re2_literal_braces_and_groups() {
        let (rust, names) = check_pattern("{id}-(?P<id>[0-9]{2,8})").expect("valid");
        assert_eq!(rust, r"\{id}-(?P<id>[0-9]{2,8})");
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["id"]);
        assert!(check_pattern("a{,3}").is_ok());
        assert!(check_pattern("#(?P<id>[123])").is_ok());
    }

    fn spec_err(p: &str, t: &str) -> Option<String> {
        LinkifierSpec::check(p, t)
            .errors
            .first()
            .map(|(_, m)| m.clone())
    }

    #[test]
    fn zulip_clean_rules() {
        let t = "https://realm.com/my_realm_filter/{id}";
        assert_eq!(
            spec_err("", t).as_deref(),
            Some("This field cannot be blank.")
        );
        assert_eq!(
            spec_err(r"ZUL-(?P<id>\d+)", "$fgfg").as_deref(),
            Some("Group 'id' in linkifier pattern is not present in URL template.")
        );
        assert_eq!(
            spec_err(
                r"ZUL-(?P<id>\d+)",
                "https://realm.com/my_realm_filter/{hello}"
            )
            .as_deref(),
            Some("Group 'hello' in URL template is not present in linkifier pattern.")
        );
        assert_eq!(
            spec_err(r"ZUL-(?P<id>\d+)-(?P<hello>\d+)", "https://r.com/{hello}").as_deref(),
            Some("Group 'id' in linkifier pattern is not present in URL template.")
        );
        assert_eq!(
            spec_err("#(?P<id>[123])", "{id").as_deref(),
            Some("Invalid URL template.")
        );
        assert_eq!(
            spec_err(
                r"ZUL-(?P<id>\d+)",
                "https://realm.com/my_realm_filter/#hashtag/{id}"
            ),
            None
        );
        let s = LinkifierSpec::check("", "");
        assert_eq!(
            s.errors.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
            ["pattern", "url_template"]
        );
    }

    fn compiled(pairs: &[(&str, &str)]) -> Vec<CompiledLinkifier> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, (p, t))| {
                CompiledLinkifier::new(&Linkifier {
                    id: i as u64 + 1,
                    pattern: (*p).to_owned(),
                    url_template: (*t).to_owned(),
                    order: i as i64,
                })
                .expect("compiles")
            })
            .collect()
    }

    fn html(pieces: &[Piece]) -> String {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Link { url, text } => format!("<a href=\"{url}\">{text}</a>"),
            })
            .collect()
    }

    #[test]
    fn linkify_as_zulip() {
        let l = compiled(&[(
            "#(?P<id>[0-9]{2,8})",
            "https://trac.example.com/ticket/{id}",
        )]);
        // Zulip's test_realm_patterns.
        assert_eq!(
            html(&linkify("We should fix #224 #336 #446 and #115, but not issue#124 or #1124z today.", &l)),
            "We should fix <a href=\"https://trac.example.com/ticket/224\">#224</a> \
             <a href=\"https://trac.example.com/ticket/336\">#336</a> \
             <a href=\"https://trac.example.com/ticket/446\">#446</a> and \
             <a href=\"https://trac.example.com/ticket/115\">#115</a>, but not issue#124 or #1124z today."
        );
        assert_eq!(
            html(&linkify("(#12)", &l)),
            "(<a href=\"https://trac.example.com/ticket/12\">#12</a>)"
        );
        assert_eq!(
            linkify("nothing here", &l),
            vec![Piece::Text("nothing here".into())]
        );
    }

    #[test]
    fn linkifiers_in_order() {
        let l = compiled(&[
            (
                "zulip-mobile#(?P<id>[0-9]{2,8})",
                "https://github.com/zulip/zulip-mobile/pull/{id}",
            ),
            (
                "zulip-(?P<repo>[a-zA-Z-_0-9]+)#(?P<id>[0-9]{2,8})",
                "https://github.com/zulip/{repo}/pull/{id}",
            ),
        ]);
        assert_eq!(
            html(&linkify("see zulip-mobile#123 and zulip-terminal#45", &l)),
            "see <a href=\"https://github.com/zulip/zulip-mobile/pull/123\">zulip-mobile#123</a> and \
             <a href=\"https://github.com/zulip/terminal/pull/45\">zulip-terminal#45</a>"
        );
    }

    #[test]
    fn urls_are_sanitized() {
        assert_eq!(sanitize_url("javascript:alert(1)"), None);
        assert_eq!(
            sanitize_url("/user_uploads/x").as_deref(),
            Some("/user_uploads/x")
        );
        assert_eq!(
            sanitize_url("example.com/a").as_deref(),
            Some("http://example.com/a")
        );
        assert_eq!(
            sanitize_url("HTTPS://a b").as_deref(),
            Some("HTTPS://a%20b")
        );
    }
}

//! What a `search` narrow operand means, as Zulip's full-text search (PostgreSQL's
//! `zulip.english_us_search` configuration) decides it: the pure half of search, shared
//! by the message-store's index (`storage::messages::search`), the check of each
//! candidate row, and the highlighting of `match_content` / `match_subject`.
//!
//! - The operand's words are English lexemes: lower-cased, Zulip's stop words
//!   (`zulip_english.stop`) dropped, Snowball-stemmed ("deploying" and "deployed" are
//!   both `deploy`), and ANDed (Zulip's `plainto_tsquery`). An operand of stop words
//!   alone has no lexeme and matches nothing (PostgreSQL's `@@` with an empty query).
//! - A quoted phrase must also occur, case-insensitively, in the message's Markdown
//!   source or its topic (Zulip's `content ILIKE '%phrase%' OR topic ILIKE ...`).
//! - A message's words are its topic's and those of its rendered HTML outside tags and
//!   character references (PostgreSQL's parser reads tags and entities as tokens that
//!   are no words), so `&amp;` never matches `amp` and an attribute never matches.
//! - Highlighting (`match_locs` then `highlight`) wraps each word of the HTML (or of the
//!   HTML-escaped topic) whose lexeme is one of the query's, as Zulip's
//!   `ts_match_locs_array` finds them and its `highlight_string` wraps them.
//!
//! Zulip runs a Hunspell dictionary before the stemmer; hearth stems alone, so a few
//! irregular forms (`ran` / `run`) do not meet.

use std::sync::OnceLock;

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenStream,
};

use super::{Message, Recipient};

/// Zulip's stop words (`puppet/zulip/files/postgresql/zulip_english.stop`): Snowball's
/// English list and single letters.
pub const STOP_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "should",
    "now",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "o",
    "p",
    "q",
    "r",
    "u",
    "v",
    "w",
    "x",
    "y",
    "z",
];

/// Words longer than this many bytes are not indexed (nor searched): PostgreSQL drops
/// words over 2 KiB; a shorter bound keeps the term dictionary small.
const LONGEST_WORD: usize = 100;

/// The analyzer of message text and of search operands (the index's tokenizer too).
pub fn analyzer() -> TextAnalyzer {
    static STOP: OnceLock<StopWordFilter> = OnceLock::new();
    let stop = STOP
        .get_or_init(|| StopWordFilter::remove(STOP_WORDS.iter().map(|w| (*w).to_owned())))
        .clone();
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_WORD))
        .filter(LowerCaser)
        .filter(stop)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Each lexeme of `text` with the byte range of its word.
pub fn lexemes(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        let t = stream.token();
        out.push((t.text.clone(), t.offset_from, t.offset_to));
    }
    out
}

/// `html` with every tag (`<...>`) and character reference (`&...;`) turned into spaces
/// of the same length: byte offsets into the result are offsets into `html`.
pub fn mask_html(html: &str) -> String {
    let bytes = html.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b == b'>')
                    .map_or(bytes.len(), |p| i + p + 1);
                out[i..end].fill(b' ');
                i = end;
            }
            b'&' => {
                let entity = bytes[i + 1..]
                    .iter()
                    .take(32)
                    .position(|&b| b == b';')
                    .filter(|&p| {
                        p > 0
                            && bytes[i + 1..i + 1 + p]
                                .iter()
                                .all(|b| b.is_ascii_alphanumeric() || *b == b'#')
                    });
                match entity {
                    Some(p) => {
                        out[i..i + p + 2].fill(b' ');
                        i += p + 2;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes (whole tags and references, which start and end in ASCII) were
    // replaced by ASCII, so the result is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// The text of a message that its words are read from: topic, then rendered content.
pub fn indexed_text(m: &Message) -> String {
    let topic = m.recipient.topic().unwrap_or_default();
    let mut text = String::with_capacity(topic.len() + 1 + m.rendered_content.len());
    text.push_str(topic);
    text.push('\n');
    text.push_str(&mask_html(&m.rendered_content));
    text
}

/// One `search` operand, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The lexemes that must all occur, sorted, without repeats.
    pub lexemes: Vec<String>,
    /// Quoted phrases, lower-cased: each must occur in the content or the topic.
    pub phrases: Vec<String>,
}

impl SearchQuery {
    /// Zulip's `_by_search_tsearch`: `plainto_tsquery` over the whole operand, and a
    /// substring condition per quoted phrase (`"[^"]+"|\S+`).
    pub fn parse(operand: &str) -> SearchQuery {
        let mut analyzer = analyzer();
        let mut lexemes: Vec<String> = lexemes(&mut analyzer, operand)
            .into_iter()
            .map(|(l, _, _)| l)
            .collect();
        lexemes.sort_unstable();
        lexemes.dedup();
        let mut phrases = Vec::new();
        let mut rest = operand;
        while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
            rest = &rest[start..];
            let quoted = rest.strip_prefix('"').and_then(|r| {
                r.find('"')
                    .filter(|&n| n > 0)
                    .map(|n| (&r[..n], &r[n + 1..]))
            });
            match quoted {
                Some((phrase, after)) => {
                    phrases.push(phrase.to_lowercase());
                    rest = after;
                }
                None => {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    rest = &rest[end..];
                }
            }
        }
        SearchQuery { lexemes, phrases }
    }

    /// Whether `m` matches (as Zulip's query would select it).
    pub fn matches(&self, m: &Message) -> bool {
        if self.lexemes.is_empty() {
            return false;
        }
        if !self.phrases.is_empty() {
            let content = m.content.to_lowercase();
            let topic = m.recipient.topic().unwrap_or_default().to_lowercase();
            if !self
                .phrases
                .iter()
                .all(|p| content.contains(p.as_str()) || topic.contains(p.as_str()))
            {
                return false;
            }
        }
        let mut analyzer = analyzer();
        let mut found: Vec<String> = lexemes(&mut analyzer, &indexed_text(m))
            .into_iter()
            .map(|(l, _, _)| l)
            .filter(|l| self.lexemes.binary_search(l).is_ok())
            .collect();
        found.sort_unstable();
        found.dedup();
        found.len() == self.lexemes.len()
    }
}

/// Where the words of `lexemes` occur in `html` (rendered content, or an escaped
/// topic), as byte ranges in order: Zulip's `ts_match_locs_array`.
pub fn match_locs(html: &str, lexemes: &[String]) -> Vec<(usize, usize)> {
    if lexemes.is_empty() {
        return Vec::new();
    }
    let mut analyzer = analyzer();
    lexemes_of_html(&mut analyzer, html)
        .into_iter()
        .filter(|(l, _, _)| lexemes.iter().any(|q| q == l))
        .map(|(_, from, to)| (from, to))
        .collect()
}

fn lexemes_of_html(analyzer: &mut TextAnalyzer, html: &str) -> Vec<(String, usize, usize)> {
    lexemes(analyzer, &mask_html(html))
}

/// Zulip's `highlight_string`: each match outside an HTML tag wrapped in
/// `<span class="highlight">`.
pub fn highlight(text: &str, locs: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut pos, mut in_tag) = (0, false);
    for &(start, end) in locs {
        if start < pos || end > text.len() {
            continue;
        }
        for c in text[pos..end].chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                _ => {}
            }
        }
        out.push_str(&text[pos..start]);
        if in_tag {
            out.push_str(&text[start..end]);
        } else {
            out.push_str("<span class=\"highlight\">");
            out.push_str(&text[start..end]);
            out.push_str("</span>");
        }
        pos = end;
    }
    out.push_str(&text[pos..]);
    out
}

/// The lexemes of a narrow's search terms that highlight (the not negated ones).
pub fn highlighted_lexemes<'a>(queries: impl Iterator<Item = &'a SearchQuery>) -> Vec<String> {
    let mut out: Vec<String> = queries.flat_map(|q| q.lexemes.iter().cloned()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `match_content` and `match_subject` of a message for a search: its rendered content
/// and its HTML-escaped topic (empty for a direct message), matched words highlighted.
pub fn search_fields(m: &Message, lexemes: &[String]) -> (String, String) {
    let topic = match &m.recipient {
        Recipient::Channel { topic, .. } => topic.as_str(),
        Recipient::Direct { .. } => "",
    };
    let topic = super::content::escape(topic);
    (
        highlight(
            &m.rendered_content,
            &match_locs(&m.rendered_content, lexemes),
        ),
        highlight(&topic, &match_locs(&topic, lexemes)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> SearchQuery {
        SearchQuery::parse(s)
    }

    #[test]
    fn words_are_stemmed_lexemes_without_stop_words() {
        assert_eq!(q("Deploying the servers").lexemes, vec!["deploy", "server"]);
        assert_eq!(q("deployed").lexemes, vec!["deploy"]);
        assert!(q("the and of").lexemes.is_empty());
        assert!(q("").lexemes.is_empty());
    }

    #[test]
    fn quoted_phrases_are_kept_lower_cased() {
        let parsed = q(r#"ship "Blue Whale" now "x"#);
        assert_eq!(parsed.phrases, vec!["blue whale"]);
        // A single letter is a stop word.
        assert_eq!(parsed.lexemes, vec!["blue", "ship", "whale"]);
        assert_eq!(q(r#""""#).phrases, Vec::<String>::new());
    }

    #[test]
    fn tags_and_references_are_no_words() {
        let html = "<p><a href=\"deploy\">R&amp;D</a> &lt;deploy&gt;</p>";
        let masked = mask_html(html);
        assert_eq!(masked.len(), html.len());
        assert!(!masked.contains("amp") && !masked.contains("href"));
        let locs = match_locs(html, &["deploy".to_owned(), "amp".to_owned()]);
        assert_eq!(locs.len(), 1);
        assert_eq!(&html[locs[0].0..locs[0].1], "deploy");
        // An unterminated `&` is text.
        assert_eq!(mask_html("a & b"), "a & b");
    }

    #[test]
    fn highlights_words_outside_tags() {
        let html = "<p>Deployed <code>deploys</code> &amp; deploying</p>";
        let lex = q("deploy").lexemes;
        assert_eq!(
            highlight(html, &match_locs(html, &lex)),
            "<p><span class=\"highlight\">Deployed</span> <code><span class=\"highlight\">\
             deploys</span></code> &amp; <span class=\"highlight\">deploying</span></p>"
        );
        assert_eq!(highlight("plain", &[]), "plain");
    }
}

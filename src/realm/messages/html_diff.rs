//! Zulip's HTML diff of two renderings (`content_html_diff` in a message's edit
//! history): `zerver/lib/html_diff.py` runs lxml's `htmldiff` (`lxml/html/diff.py`),
//! then turns its `<ins>`/`<del>` into `<span>`s with the highlight classes inside one
//! `<div>`. This is that pipeline, step for step, so a client sees the same markup:
//!
//! 1. Each rendering is parsed (without any `<ins>`/`<del>` it holds) and flattened
//!    into chunks: start tags, words with their trailing whitespace, end tags (with one
//!    space when the text after them starts with whitespace), a link's href.
//! 2. Chunks become tokens: a word with the tags before it and the closing tags after
//!    it; a link's href is a token shown only when it changed (" Link: URL").
//! 3. The token texts are diffed by Python's `difflib.SequenceMatcher` (with lxml's
//!    `InsensitiveSequenceMatcher`, which drops equal runs too short to matter).
//! 4. Equal runs are copied from the new rendering, inserted ones wrapped in `<ins>`
//!    (only their balanced part), deleted ones in `<del>` after unbalanced tags are
//!    moved out of them (`cleanup_delete`).
//! 5. The result is parsed again, an `<ins>`/`<del>` around block elements is moved
//!    inside them, and it is serialized as libxml2 writes HTML.
//!
//! Words are escaped with `content::escape` where lxml uses Python's `html.escape`:
//! the two differ only in how they write `'`, which the parse of step 5 reads back the
//! same.
//!
//! Python's `SequenceMatcher` is ported here rather than taken from the `difflib`
//! crate: its 0.4 keeps only the popular elements of a long sequence where Python drops
//! them, so every rendering of 200 words or more would diff differently.

use std::collections::HashMap;

use std::cell::RefCell;

use super::content::escape;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token as HtmlToken, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// An element or a text of a parsed fragment.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Element(Element),
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
}

impl Element {
    fn new(name: &str) -> Element {
        Element {
            name: name.to_owned(),
            attrs: Vec::new(),
            children: Vec::new(),
        }
    }

    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// lxml's `el.text`: the text before the first child element.
    fn text(&self) -> &str {
        match self.children.first() {
            Some(Node::Text(t)) => t,
            _ => "",
        }
    }
}

/// lxml's `defs.empty_tags`: elements without content or end tag.
const EMPTY_TAGS: &[&str] = &[
    "area", "base", "basefont", "br", "col", "frame", "hr", "img", "input", "isindex", "link",
    "meta", "param", "source", "track", "wbr", "embed", "keygen",
];

/// lxml's `block_level_tags` and `block_level_container_tags`.
const BLOCK_TAGS: &[&str] = &[
    "address",
    "blockquote",
    "center",
    "dir",
    "div",
    "dl",
    "fieldset",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "isindex",
    "menu",
    "noframes",
    "noscript",
    "ol",
    "p",
    "pre",
    "table",
    "ul",
    "dd",
    "dt",
    "frameset",
    "li",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
];

/// libxml2's boolean attributes, written as their name alone.
const BOOLEAN_ATTRS: &[&str] = &[
    "checked", "compact", "declare", "defer", "disabled", "ismap", "multiple", "nohref",
    "noresize", "noshade", "nowrap", "readonly", "selected",
];

/// Parses an HTML fragment as the content of an element (lxml's
/// `fragment_fromstring(html, create_parent=True)`): its child nodes.
///
/// html5ever's tokenizer reads the tags, texts and character references; the tree is
/// built leniently, as libxml2's HTML parser builds it (an end tag closes the open
/// element it names, or is ignored; a block closes an open paragraph, a list item
/// the previous one), not with HTML5's tree rules, which would move an `<ins>` out of
/// a table where libxml2 keeps it.
fn parse(html: &str) -> Vec<Node> {
    let builder = TreeBuilder::default();
    let tokenizer = Tokenizer::new(builder, TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from(html));
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.finish()
}

/// The open elements (the first is the fragment's parent) as tokens arrive.
#[derive(Default)]
struct TreeBuilder {
    open: RefCell<Vec<Element>>,
}

/// Which open element a new start tag `new` closes first (libxml2's `htmlAutoClose`
/// for the elements a message holds).
fn closes(new: &str, open: &str) -> bool {
    match open {
        "p" => {
            BLOCK_TAGS.contains(&new)
                && !matches!(
                    new,
                    "dd" | "dt" | "li" | "td" | "th" | "tr" | "tbody" | "thead" | "tfoot"
                )
        }
        "li" => new == "li",
        "dt" | "dd" => matches!(new, "dt" | "dd"),
        "td" | "th" => matches!(new, "td" | "th" | "tr" | "tbody" | "thead" | "tfoot"),
        "tr" => matches!(new, "tr" | "tbody" | "thead" | "tfoot"),
        "thead" | "tbody" | "tfoot" => matches!(new, "tbody" | "thead" | "tfoot"),
        _ => false,
    }
}

impl TreeBuilder {
    fn close_top(open: &mut Vec<Element>) {
        if open.len() > 1 {
            if let Some(el) = open.pop() {
                if let Some(parent) = open.last_mut() {
                    parent.children.push(Node::Element(el));
                }
            }
        }
    }

    fn finish(self) -> Vec<Node> {
        let mut open = self.open.into_inner();
        if open.is_empty() {
            return Vec::new();
        }
        while open.len() > 1 {
            Self::close_top(&mut open);
        }
        open.pop().map(|root| root.children).unwrap_or_default()
    }
}

impl TokenSink for TreeBuilder {
    type Handle = ();

    fn process_token(&self, token: HtmlToken, _line: u64) -> TokenSinkResult<()> {
        let mut open = self.open.borrow_mut();
        if open.is_empty() {
            open.push(Element::new("div"));
        }
        match token {
            HtmlToken::TagToken(tag) => {
                let name = tag.name.to_string();
                match tag.kind {
                    TagKind::StartTag => {
                        while open.len() > 1
                            && open.last().is_some_and(|top| closes(&name, &top.name))
                        {
                            Self::close_top(&mut open);
                        }
                        let mut el = Element::new(&name);
                        el.attrs = tag
                            .attrs
                            .iter()
                            .map(|a| (a.name.local.to_string(), a.value.to_string()))
                            .collect();
                        if EMPTY_TAGS.contains(&name.as_str()) || tag.self_closing {
                            if let Some(parent) = open.last_mut() {
                                parent.children.push(Node::Element(el));
                            }
                        } else {
                            open.push(el);
                        }
                    }
                    TagKind::EndTag => {
                        if let Some(at) = open.iter().skip(1).rposition(|e| e.name == name) {
                            while open.len() > at + 1 {
                                Self::close_top(&mut open);
                            }
                        }
                    }
                }
            }
            HtmlToken::CharacterTokens(text) => {
                if let Some(parent) = open.last_mut() {
                    push_merged(&mut parent.children, Node::Text(text.to_string()));
                }
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

// ---- 1. chunks ----------------------------------------------------------------------

/// What flattening a tree yields.
#[derive(Debug, Clone)]
enum Chunk {
    /// A start tag, an end tag or a word (with its trailing whitespace), as HTML.
    Text(String),
    /// An `<img>`: its `src` and its start tag.
    Img(String, String),
    /// The href of a link, after the link's content.
    Href(String),
}

/// lxml's `split_words`: `\S+(?:\s+|$)`, nothing for blank text.
fn split_words(text: &str) -> Vec<&str> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut words = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let after = &rest[word_end..];
        let ws = after.len() - after.trim_start().len();
        words.push(&rest[..word_end + ws]);
        rest = &rest[word_end + ws..];
    }
    words
}

fn start_tag(el: &Element) -> String {
    let attrs: String = el
        .attrs
        .iter()
        .map(|(n, v)| format!(" {n}=\"{}\"", escape(v)))
        .collect();
    format!("<{}{attrs}>", el.name)
}

/// lxml's `end_tag`: one space after it when its tail starts with whitespace.
fn end_tag(name: &str, tail: &str) -> String {
    let extra = if tail.starts_with([' ', '\t', '\n', '\r']) {
        " "
    } else {
        ""
    };
    format!("</{name}>{extra}")
}

/// lxml's `flatten_el`; `tail` is the text after `el` in its parent.
fn flatten(el: &Element, tail: &str, skip_tag: bool, out: &mut Vec<Chunk>) {
    if !skip_tag {
        if el.name == "img" {
            out.push(Chunk::Img(
                el.attr("src").unwrap_or_default().to_owned(),
                start_tag(el),
            ));
        } else {
            out.push(Chunk::Text(start_tag(el)));
        }
    }
    let has_elements = el.children.iter().any(|c| matches!(c, Node::Element(_)));
    if EMPTY_TAGS.contains(&el.name.as_str())
        && el.text().is_empty()
        && !has_elements
        && tail.is_empty()
    {
        return;
    }
    for w in split_words(el.text()) {
        out.push(Chunk::Text(escape(w)));
    }
    for (i, child) in el.children.iter().enumerate() {
        if let Node::Element(c) = child {
            let tail = match el.children.get(i + 1) {
                Some(Node::Text(t)) => t.as_str(),
                _ => "",
            };
            flatten(c, tail, false, out);
        }
    }
    if el.name == "a" {
        if let Some(href) = el.attr("href").filter(|h| !h.is_empty()) {
            out.push(Chunk::Href(href.to_owned()));
        }
    }
    if !skip_tag {
        out.push(Chunk::Text(end_tag(&el.name, tail)));
        for w in split_words(tail) {
            out.push(Chunk::Text(escape(w)));
        }
    }
}

// ---- 2. tokens ----------------------------------------------------------------------

/// A diffable word with the tags around it (lxml's `token`, `tag_token`, `href_token`).
#[derive(Debug, Clone, Default)]
struct Token {
    /// What the diff compares.
    text: String,
    /// What is written for it.
    html: String,
    pre_tags: Vec<String>,
    post_tags: Vec<String>,
    trailing_whitespace: String,
    /// An href: written only where it changed.
    hide_when_equal: bool,
}

fn split_trailing_whitespace(word: &str) -> (&str, &str) {
    let stripped = word.trim_end();
    (stripped, &word[stripped.len()..])
}

/// lxml's `tokenize`: without `<ins>`/`<del>` tags, parsed, flattened, grouped.
fn tokenize(html: &str) -> Vec<Token> {
    let cleaned = strip_ins_del(html);
    let root = Element {
        name: "div".into(),
        attrs: Vec::new(),
        children: parse(&cleaned),
    };
    let mut chunks = Vec::new();
    flatten(&root, "", true, &mut chunks);
    fixup_chunks(chunks)
}

/// lxml's `cleanup_html`: `</?(ins|del).*?>` removed.
fn strip_ins_del(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tag = &rest[at..];
        let name = tag.strip_prefix("</").unwrap_or(&tag[1..]);
        let lower = name.get(..3).map(str::to_ascii_lowercase);
        if matches!(lower.as_deref(), Some("ins" | "del")) {
            if let Some(end) = tag.find('>') {
                rest = &tag[end + 1..];
                continue;
            }
        }
        out.push('<');
        rest = &tag[1..];
    }
    out.push_str(rest);
    out
}

/// lxml's `fixup_chunks`.
fn fixup_chunks(chunks: Vec<Chunk>) -> Vec<Token> {
    let mut tag_accum: Vec<String> = Vec::new();
    let mut result: Vec<Token> = Vec::new();
    for chunk in chunks {
        match chunk {
            Chunk::Img(src, tag) => {
                let (tag, ws) = split_trailing_whitespace(&tag);
                result.push(Token {
                    text: format!("img: {src}"),
                    html: tag.to_owned(),
                    pre_tags: std::mem::take(&mut tag_accum),
                    trailing_whitespace: ws.to_owned(),
                    ..Token::default()
                });
            }
            Chunk::Href(href) => result.push(Token {
                html: format!(" Link: {href}"),
                text: href,
                pre_tags: std::mem::take(&mut tag_accum),
                trailing_whitespace: " ".into(),
                hide_when_equal: true,
                ..Token::default()
            }),
            Chunk::Text(c) if !c.starts_with('<') => {
                let (word, ws) = split_trailing_whitespace(&c);
                result.push(Token {
                    text: word.to_owned(),
                    html: word.to_owned(),
                    pre_tags: std::mem::take(&mut tag_accum),
                    trailing_whitespace: ws.to_owned(),
                    ..Token::default()
                });
            }
            Chunk::Text(c) if c.starts_with("</") => match result.last_mut() {
                Some(word) if tag_accum.is_empty() => word.post_tags.push(c),
                _ => tag_accum.push(c),
            },
            Chunk::Text(c) => tag_accum.push(c),
        }
    }
    match result.last_mut() {
        None => vec![Token {
            pre_tags: tag_accum,
            ..Token::default()
        }],
        Some(last) => {
            last.post_tags.append(&mut tag_accum);
            result
        }
    }
}

fn expand(tokens: &[Token], equal: bool) -> Vec<String> {
    let mut out = Vec::new();
    for t in tokens {
        out.extend(t.pre_tags.iter().cloned());
        if !equal || !t.hide_when_equal {
            out.push(format!("{}{}", t.html, t.trailing_whitespace));
        }
        out.extend(t.post_tags.iter().cloned());
    }
    out
}

// ---- 3. the diff ----------------------------------------------------------------------

/// One run of equal elements: `a[a..a+size] == b[b..b+size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Match {
    a: usize,
    b: usize,
    size: usize,
}

/// Python's `difflib.SequenceMatcher(None, a, b)` (autojunk on), as far as
/// `get_matching_blocks` goes.
struct SequenceMatcher<'s> {
    a: &'s [&'s str],
    b: &'s [&'s str],
    /// Where each element of `b` occurs, popular elements left out.
    b2j: HashMap<&'s str, Vec<usize>>,
}

impl<'s> SequenceMatcher<'s> {
    fn new(a: &'s [&'s str], b: &'s [&'s str]) -> Self {
        let mut b2j: HashMap<&str, Vec<usize>> = HashMap::new();
        for (j, elt) in b.iter().enumerate() {
            b2j.entry(elt).or_default().push(j);
        }
        // `autojunk`: in a sequence of 200 or more, elements making up more than 1 %
        // of it are not matched on their own.
        if b.len() >= 200 {
            let ntest = b.len() / 100 + 1;
            b2j.retain(|_, idxs| idxs.len() <= ntest);
        }
        SequenceMatcher { a, b, b2j }
    }

    fn find_longest_match(&self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> Match {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut newj2len: HashMap<usize, usize> = HashMap::new();
            if let Some(js) = self.b2j.get(self.a[i]) {
                for &j in js {
                    if j < blo {
                        continue;
                    }
                    if j >= bhi {
                        break;
                    }
                    let k = j
                        .checked_sub(1)
                        .and_then(|p| j2len.get(&p))
                        .copied()
                        .unwrap_or(0)
                        + 1;
                    newj2len.insert(j, k);
                    if k > bestsize {
                        besti = i + 1 - k;
                        bestj = j + 1 - k;
                        bestsize = k;
                    }
                }
            }
            j2len = newj2len;
        }
        // No element is junk (no `isjunk`), so Python's two extension passes are one:
        // equal neighbours (popular ones included) join the match.
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && self.a[besti + bestsize] == self.b[bestj + bestsize]
        {
            bestsize += 1;
        }
        Match {
            a: besti,
            b: bestj,
            size: bestsize,
        }
    }

    fn matching_blocks(&self) -> Vec<Match> {
        let (la, lb) = (self.a.len(), self.b.len());
        let mut queue = vec![(0, la, 0, lb)];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let m = self.find_longest_match(alo, ahi, blo, bhi);
            if m.size > 0 {
                blocks.push(m);
                if alo < m.a && blo < m.b {
                    queue.push((alo, m.a, blo, m.b));
                }
                if m.a + m.size < ahi && m.b + m.size < bhi {
                    queue.push((m.a + m.size, ahi, m.b + m.size, bhi));
                }
            }
        }
        blocks.sort();
        // Adjacent blocks merged into one.
        let mut merged: Vec<Match> = Vec::new();
        for m in blocks {
            match merged.last_mut() {
                Some(last) if last.a + last.size == m.a && last.b + last.size == m.b => {
                    last.size += m.size
                }
                _ => merged.push(m),
            }
        }
        merged.push(Match {
            a: la,
            b: lb,
            size: 0,
        });
        merged
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equal,
    Insert,
    Delete,
    Replace,
}

/// lxml's `InsensitiveSequenceMatcher.get_opcodes`: equal runs no longer than
/// `min(2, len(b) / 4)` are not kept as equal.
fn opcodes(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize, usize, usize)> {
    let threshold = 2.min(b.len() / 4);
    let blocks: Vec<Match> = SequenceMatcher::new(a, b)
        .matching_blocks()
        .into_iter()
        .filter(|m| m.size > threshold || m.size == 0)
        .collect();
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    for m in blocks {
        let op = match (i < m.a, j < m.b) {
            (true, true) => Some(Op::Replace),
            (true, false) => Some(Op::Delete),
            (false, true) => Some(Op::Insert),
            (false, false) => None,
        };
        if let Some(op) = op {
            ops.push((op, i, m.a, j, m.b));
        }
        i = m.a + m.size;
        j = m.b + m.size;
        if m.size > 0 {
            ops.push((Op::Equal, m.a, i, m.b, j));
        }
    }
    ops
}

// ---- 4. merging ---------------------------------------------------------------------

/// A piece of the diffed document: a text chunk, or where a deletion starts or ends.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    DelStart,
    DelEnd,
}

impl Piece {
    fn text(&self) -> Option<&str> {
        match self {
            Piece::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// lxml's `tag_name_of_chunk`.
fn tag_name(chunk: &str) -> &str {
    chunk
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c| c == '<' || c == '>' || c == '/')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Balance {
    Balanced,
    UnbalancedStart,
    UnbalancedEnd,
}

/// lxml's `mark_unbalanced`.
fn mark_unbalanced(chunks: &[String]) -> Vec<(Balance, String)> {
    /// An open start tag: its name, its chunk, and what was marked before it.
    type Open = (String, String, Vec<(Balance, String)>);
    let mut stack: Vec<Open> = Vec::new();
    let mut marked: Vec<(Balance, String)> = Vec::new();
    for chunk in chunks {
        if !chunk.starts_with('<') {
            marked.push((Balance::Balanced, chunk.clone()));
            continue;
        }
        let name = tag_name(chunk).to_owned();
        if EMPTY_TAGS.contains(&name.as_str()) {
            marked.push((Balance::Balanced, chunk.clone()));
            continue;
        }
        if chunk.as_bytes().get(1) == Some(&b'/') {
            let mut closed = false;
            while let Some((start_name, start_chunk, mut parents)) = stack.pop() {
                if start_name == name {
                    parents.push((Balance::Balanced, start_chunk));
                    parents.append(&mut marked);
                    parents.push((Balance::Balanced, chunk.clone()));
                    marked = parents;
                    closed = true;
                    break;
                }
                parents.push((Balance::UnbalancedStart, start_chunk));
                parents.append(&mut marked);
                marked = parents;
            }
            if !closed {
                marked.push((Balance::UnbalancedEnd, chunk.clone()));
            }
        } else {
            stack.push((name, chunk.clone(), std::mem::take(&mut marked)));
        }
    }
    while let Some((_, start_chunk, mut parents)) = stack.pop() {
        parents.push((Balance::UnbalancedStart, start_chunk));
        parents.append(&mut marked);
        marked = parents;
    }
    marked
}

/// lxml's `merge_insert`: each balanced run in `<ins>`, unbalanced tags as they are.
fn merge_insert(chunks: &[String], doc: &mut Vec<Piece>) {
    let marked = mark_unbalanced(chunks);
    let mut i = 0;
    while i < marked.len() {
        let balanced = marked[i].0 == Balance::Balanced;
        let mut run = Vec::new();
        while i < marked.len() && (marked[i].0 == Balance::Balanced) == balanced {
            // `groupby` on the mark: unbalanced starts and ends are separate groups.
            if !balanced && !run.is_empty() && marked[i].0 != marked[i - 1].0 {
                break;
            }
            run.push(marked[i].1.clone());
            i += 1;
        }
        if balanced {
            if let Some(Piece::Text(last)) = doc.last_mut() {
                if !last.ends_with(' ') {
                    last.push(' ');
                }
            }
            doc.push(Piece::Text("<ins>".into()));
            doc.extend(run.into_iter().map(Piece::Text));
            if let Some(Piece::Text(last)) = doc.last_mut() {
                if last.ends_with(' ') {
                    last.pop();
                }
            }
            doc.push(Piece::Text("</ins> ".into()));
        } else {
            doc.extend(run.into_iter().map(Piece::Text));
        }
    }
}

/// lxml's `cleanup_delete`: each `DelStart ... DelEnd` becomes `<del>...</del>`, with
/// unbalanced start tags at its beginning and end tags at its end moved out when the
/// same tags follow (or precede) it.
fn cleanup_delete(chunks: &mut Vec<Piece>) {
    let mut start_pos = 0;
    while let Some(del_start) = chunks[start_pos..]
        .iter()
        .position(|p| *p == Piece::DelStart)
        .map(|p| p + start_pos)
    {
        let del_end = chunks[del_start + 1..]
            .iter()
            .position(|p| *p == Piece::DelEnd)
            .map_or(chunks.len(), |p| p + del_start + 1);
        let inside: Vec<String> = chunks[del_start + 1..del_end]
            .iter()
            .filter_map(|p| p.text().map(str::to_owned))
            .collect();
        let deleted = mark_unbalanced(&inside);
        let (mut shift_start_right, mut shift_end_left) = (0, 0);
        let (mut unbalanced_start, mut unbalanced_end) = (0, 0);
        for (balance, chunk) in &deleted {
            if *balance != Balance::UnbalancedStart {
                break;
            }
            unbalanced_start += 1;
            let name = tag_name(chunk);
            for p in &chunks[del_end + 1..] {
                let Piece::Text(c) = p else { break };
                if !c.starts_with('<') || c.as_bytes().get(1) == Some(&b'/') {
                    break;
                }
                let n = tag_name(c);
                if n == "ins" || n != name {
                    break;
                }
                shift_start_right += 1;
            }
        }
        for (balance, chunk) in deleted.iter().rev() {
            if *balance != Balance::UnbalancedEnd {
                break;
            }
            unbalanced_end += 1;
            let name = tag_name(chunk);
            for p in chunks[..del_start].iter().rev() {
                let Piece::Text(c) = p else { break };
                if c.starts_with('<') && c.as_bytes().get(1) != Some(&b'/') {
                    break;
                }
                let n = tag_name(c);
                if n == "ins" || n == "del" || n != name {
                    break;
                }
                shift_end_left += 1;
            }
        }
        let mut rebuilt: Vec<Piece> = Vec::new();
        rebuilt.extend_from_slice(&chunks[del_start + 1..del_start + shift_start_right + 1]);
        let mut before: Vec<Piece> = chunks[..del_start - shift_end_left].to_vec();
        before.append(&mut rebuilt);
        if let Some(Piece::Text(last)) = before.last_mut() {
            if !last.ends_with(' ') {
                last.push(' ');
            }
        }
        before.push(Piece::Text("<del>".into()));
        let content_from = del_start + unbalanced_start + 1;
        let content_to = del_end.saturating_sub(unbalanced_end).max(content_from);
        before.extend_from_slice(&chunks[content_from..content_to]);
        if let Some(Piece::Text(last)) = before.last_mut() {
            if last.ends_with(' ') {
                last.pop();
            }
        }
        before.push(Piece::Text("</del> ".into()));
        before.extend_from_slice(&chunks[del_end - shift_end_left..del_end]);
        let pos = before.len();
        before.extend_from_slice(&chunks[(del_end + shift_start_right + 1).min(chunks.len())..]);
        *chunks = before;
        start_pos = pos;
    }
}

fn htmldiff_tokens(old: &[Token], new: &[Token]) -> Vec<Piece> {
    let a: Vec<&str> = old.iter().map(|t| t.text.as_str()).collect();
    let b: Vec<&str> = new.iter().map(|t| t.text.as_str()).collect();
    let mut doc: Vec<Piece> = Vec::new();
    for (op, i1, i2, j1, j2) in opcodes(&a, &b) {
        if op == Op::Equal {
            doc.extend(expand(&new[j1..j2], true).into_iter().map(Piece::Text));
            continue;
        }
        if matches!(op, Op::Insert | Op::Replace) {
            merge_insert(&expand(&new[j1..j2], false), &mut doc);
        }
        if matches!(op, Op::Delete | Op::Replace) {
            doc.push(Piece::DelStart);
            doc.extend(expand(&old[i1..i2], false).into_iter().map(Piece::Text));
            doc.push(Piece::DelEnd);
        }
    }
    cleanup_delete(&mut doc);
    doc
}

// ---- 5. the result --------------------------------------------------------------------

fn contains_block(el: &Element) -> bool {
    BLOCK_TAGS.contains(&el.name.as_str())
        || el.children.iter().any(|c| match c {
            Node::Element(e) => contains_block(e),
            Node::Text(_) => false,
        })
}

/// lxml's `_move_el_inside_block`: `tag` wraps the content of `el` inside its block
/// elements instead of around them.
fn move_inside_block(el: &mut Element, tag: &str) {
    let block_below = el.children.iter().any(|c| match c {
        Node::Element(e) => contains_block(e),
        Node::Text(_) => false,
    });
    if !block_below {
        let mut wrapper = Element::new(tag);
        wrapper.children = std::mem::take(&mut el.children);
        el.children = vec![Node::Element(wrapper)];
        return;
    }
    let mut out: Vec<Node> = Vec::new();
    let children = std::mem::take(&mut el.children);
    let mut iter = children.into_iter().peekable();
    // The leading text.
    if let Some(Node::Text(_)) = iter.peek() {
        if let Some(Node::Text(t)) = iter.next() {
            let mut w = Element::new(tag);
            w.children.push(Node::Text(t));
            out.push(Node::Element(w));
        }
    }
    while let Some(child) = iter.next() {
        let Node::Element(mut c) = child else {
            continue;
        };
        let tail = match iter.peek() {
            Some(Node::Text(_)) => match iter.next() {
                Some(Node::Text(t)) => Some(t),
                _ => None,
            },
            _ => None,
        };
        if contains_block(&c) {
            move_inside_block(&mut c, tag);
            out.push(Node::Element(c));
            if let Some(t) = tail {
                let mut w = Element::new(tag);
                w.children.push(Node::Text(t));
                out.push(Node::Element(w));
            }
        } else {
            let mut w = Element::new(tag);
            w.children.push(Node::Element(c));
            out.push(Node::Element(w));
            if let Some(t) = tail {
                out.push(Node::Text(t));
            }
        }
    }
    el.children = out;
}

/// lxml's `_fixup_ins_del_tags` over a list of nodes: an `<ins>`/`<del>` holding block
/// elements is replaced by its content, wrapped inside those blocks.
fn fixup_ins_del(nodes: Vec<Node>) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    for node in nodes {
        match node {
            Node::Element(mut el) => {
                if (el.name == "ins" || el.name == "del") && contains_block(&el) {
                    let tag = el.name.clone();
                    el.children = fixup_ins_del(std::mem::take(&mut el.children));
                    move_inside_block(&mut el, &tag);
                    // `drop_tag`: its content takes its place.
                    for c in el.children {
                        push_merged(&mut out, c);
                    }
                } else {
                    el.children = fixup_ins_del(std::mem::take(&mut el.children));
                    out.push(Node::Element(el));
                }
            }
            text => push_merged(&mut out, text),
        }
    }
    out
}

fn push_merged(out: &mut Vec<Node>, node: Node) {
    match (out.last_mut(), node) {
        (Some(Node::Text(prev)), Node::Text(t)) => prev.push_str(&t),
        (_, node) => out.push(node),
    }
}

/// libxml2's escaping of a text node in HTML.
fn escape_text(s: &str, out: &mut String) {
    crate::escape::push(out, s, crate::escape::TEXT);
}

/// libxml2's URI escaping of `href`/`src`/`action` values (`xmlURIEscapeStr` with
/// `@/:=?;#%&,+<>` kept).
fn escape_uri(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        let c = b as char;
        if c.is_ascii_alphanumeric() || "-_.!~*'()@/:=?;#%&,+<>".contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn write_attr(el: &Element, name: &str, value: &str, out: &mut String) {
    out.push(' ');
    out.push_str(name);
    if BOOLEAN_ATTRS.contains(&name) {
        return;
    }
    let is_uri = matches!(name, "href" | "action" | "src") || (name == "name" && el.name == "a");
    let value = if is_uri {
        escape_uri(value.trim_start())
    } else {
        value.to_owned()
    };
    let (quote, escape_quote) = match (value.contains('"'), value.contains('\'')) {
        (true, false) => ('\'', false),
        (true, true) => ('"', true),
        _ => ('"', false),
    };
    out.push('=');
    out.push(quote);
    let set = if escape_quote {
        crate::escape::DOUBLE_QUOTED
    } else {
        crate::escape::TEXT
    };
    crate::escape::push(out, &value, set);
    out.push(quote);
}

fn serialize(nodes: &[Node], out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(t) => escape_text(t, out),
            Node::Element(el) => {
                out.push('<');
                out.push_str(&el.name);
                for (n, v) in &el.attrs {
                    write_attr(el, n, v, out);
                }
                out.push('>');
                if EMPTY_TAGS.contains(&el.name.as_str()) {
                    continue;
                }
                serialize(&el.children, out);
                out.push_str("</");
                out.push_str(&el.name);
                out.push('>');
            }
        }
    }
}

/// `<ins>` and `<del>` as Zulip shows them.
fn highlight(nodes: &mut [Node]) {
    for node in nodes {
        if let Node::Element(el) = node {
            let class = match el.name.as_str() {
                "ins" => Some("highlight_text_inserted"),
                "del" => Some("highlight_text_deleted"),
                _ => None,
            };
            if let Some(class) = class {
                el.name = "span".into();
                el.attrs.retain(|(n, _)| n != "class");
                el.attrs.push(("class".into(), class.into()));
            }
            highlight(&mut el.children);
        }
    }
}

/// End tags of empty elements, which libxml2 ignores when it parses (lxml writes one
/// after an empty element followed by text, e.g. `</br> `).
fn drop_empty_end_tags(html: &str) -> String {
    let mut out = html.to_owned();
    for tag in EMPTY_TAGS {
        out = out.replace(&format!("</{tag}>"), "");
    }
    out
}

/// Zulip's `highlight_html_differences(old, new)`.
pub fn html_diff(old: &str, new: &str) -> String {
    let pieces = htmldiff_tokens(&tokenize(old), &tokenize(new));
    let joined: String = pieces.iter().filter_map(Piece::text).collect();
    // `fixup_ins_del_tags`: parsed, blocks fixed, written without the wrapper, stripped.
    let fixed = fixup_ins_del(parse(&drop_empty_end_tags(joined.trim())));
    let mut inner = String::new();
    serialize(&fixed, &mut inner);
    // Zulip: parsed again inside a `<div>`, `<ins>`/`<del>` made spans, written.
    let mut nodes = parse(inner.trim());
    highlight(&mut nodes);
    let mut out = String::from("<div>");
    serialize(&nodes, &mut out);
    out.push_str("</div>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs of renderings and what Zulip's `highlight_html_differences` (lxml 6.1)
    /// answers for them: `tests/fixtures/html-diff-corpus.json`, written by
    /// `tests/fixtures/html_diff_corpus.py`.
    #[test]
    fn the_corpus_diffs_as_zulip_does() {
        let corpus: Vec<(String, String, String)> = serde_json::from_str(include_str!(
            "../../../tests/fixtures/html-diff-corpus.json"
        ))
        .expect("the corpus");
        assert!(corpus.len() >= 40, "{} cases", corpus.len());
        let wrong: Vec<String> = corpus
            .iter()
            .filter_map(|(old, new, want)| {
                let got = html_diff(old, new);
                (&got != want).then(|| format!("{old:?} -> {new:?}\n  want {want}\n  got  {got}"))
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} of {}:\n{}",
            wrong.len(),
            corpus.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn python_sequence_matcher_blocks() {
        // difflib.SequenceMatcher(None, "abxcd", "abcd").get_matching_blocks()
        let a: Vec<&str> = "a b x c d".split(' ').collect();
        let b: Vec<&str> = "a b c d".split(' ').collect();
        let blocks = SequenceMatcher::new(&a, &b).matching_blocks();
        assert_eq!(
            blocks,
            vec![
                Match {
                    a: 0,
                    b: 0,
                    size: 2
                },
                Match {
                    a: 3,
                    b: 2,
                    size: 2
                },
                Match {
                    a: 5,
                    b: 4,
                    size: 0
                },
            ]
        );
    }
}

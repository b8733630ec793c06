//! Alert words: `GET`/`POST`/`DELETE /users/me/alert_words`, as Zulip's
//! `zerver/views/alert_words.py` and `zerver/lib/alert_words.py` keep them, and the
//! `has_alert_word` flag a delivered message gets (Zulip's
//! `AlertWordNotificationProcessor`).
//!
//! Words keep the case they were added with and are unique case-insensitively; a
//! removal matches case-insensitively. Matching lower-cases the message's content and
//! finds every occurrence of every word (one Aho-Corasick pass, as Zulip's automaton);
//! an occurrence counts when the character before it is one of Zulip's
//! `allowed_before_punctuation` (or it starts within the first two characters, as
//! Zulip's `index <= 0` check lets it) and the character after it one of
//! `allowed_after_punctuation` (or the content ends).
//!
//! | Change          | Events                                          | Recipients |
//! |-----------------|-------------------------------------------------|------------|
//! | `AlertWordsSet` | `alert_words` `{alert_words}` (the whole list)  | the user   |

use std::collections::BTreeSet;
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use serde_json::json;

use super::events::{Audience, Event};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::ApiResult;

/// Zulip's `AlertWord.MAX_WORD_LENGTH`.
pub const MAX_ALERT_WORD_LENGTH: usize = 100;

const ALLOWED_BEFORE: &[char] = &[' ', '\n', '(', '"', '.', ',', '\'', ';', '[', '*', '`', '>'];
// Zulip's set also holds the two-character string `",`, which no single character
// equals: `"` after a word does not count.
const ALLOWED_AFTER: &[char] = &[
    ' ', '\n', ')', '?', ':', '.', ',', '\'', ';', ']', '!', '*', '`',
];

/// `POST` (`add: true`) and `DELETE /users/me/alert_words`: the words as Zulip's view
/// hands them on (added words stripped, blank ones dropped; removed words as sent).
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeAlertWords {
    pub words: Vec<String>,
    pub add: bool,
}

/// Every user's alert words compiled into one automaton (lower-cased, each pattern
/// with the users who have it).
#[derive(Clone, Default)]
pub struct AlertWordIndex(Option<Arc<(AhoCorasick, Vec<Vec<UserId>>)>>);

impl std::fmt::Debug for AlertWordIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words = self.0.as_ref().map_or(0, |i| i.1.len());
        write!(f, "AlertWordIndex({words} words)")
    }
}

/// Derived state: equal when built from equal words, which `Realm`'s equality compares.
impl PartialEq for AlertWordIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl AlertWordIndex {
    fn build<'a>(all: impl Iterator<Item = (UserId, &'a [String])>) -> Self {
        let mut patterns: Vec<String> = Vec::new();
        let mut users: Vec<Vec<UserId>> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = Default::default();
        for (user, words) in all {
            for w in words {
                let lower = w.to_lowercase();
                let i = *at.entry(lower.clone()).or_insert_with(|| {
                    patterns.push(lower);
                    users.push(Vec::new());
                    patterns.len() - 1
                });
                users[i].push(user);
            }
        }
        if patterns.is_empty() {
            return AlertWordIndex(None);
        }
        match AhoCorasick::new(&patterns) {
            Ok(ac) => AlertWordIndex(Some(Arc::new((ac, users)))),
            Err(e) => {
                tracing::error!("alert words could not be compiled: {e}");
                AlertWordIndex(None)
            }
        }
    }

    /// The users with an alert word in `content`.
    pub fn users_alerted(&self, content: &str) -> BTreeSet<UserId> {
        let mut out = BTreeSet::new();
        let Some(index) = &self.0 else {
            return out;
        };
        let (ac, users) = index.as_ref();
        let content = content.to_lowercase();
        for m in ac.find_overlapping_iter(&content) {
            let before = &content[..m.start()];
            let mut preceding = before.chars().rev();
            let start_ok = match (preceding.next(), preceding.next()) {
                // Zulip checks the character at `start - 1`, and lets any index <= 0
                // through: a word at the very start or one character in.
                (None, _) | (Some(_), None) => true,
                (Some(c), Some(_)) => ALLOWED_BEFORE.contains(&c),
            };
            let end_ok = content[m.end()..]
                .chars()
                .next()
                .is_none_or(|c| ALLOWED_AFTER.contains(&c));
            if start_ok && end_ok {
                out.extend(users[m.pattern().as_usize()].iter().copied());
            }
        }
        out
    }
}

/// Zulip's `clean_alert_words`: stripped, blank ones dropped.
pub fn clean_alert_words(words: Vec<String>) -> Vec<String> {
    words
        .into_iter()
        .map(|w| w.trim().to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

impl Realm {
    /// A user's alert words, in the order added.
    pub fn alert_words_of(&self, user: UserId) -> &[String] {
        self.alert_words
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The users whose alert words occur in a message's content.
    pub fn alert_word_users(&self, content: &str) -> BTreeSet<UserId> {
        self.alert_word_index.users_alerted(content)
    }

    /// `POST` and `DELETE /users/me/alert_words`: Zulip's `add_user_alert_words` (new
    /// words unique case-insensitively, the last spelling of a request winning) and
    /// `remove_user_alert_words`. Answers the list after; the event is sent even when
    /// nothing changed, as Zulip's `notify_alert_words` is.
    pub fn decide_change_alert_words(
        &self,
        me: &User,
        q: ChangeAlertWords,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<Vec<String>>> {
        let mut words: Vec<String> = self.alert_words_of(me.id).to_vec();
        if q.add {
            let mut seen: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
            let existing = seen.len();
            for w in q.words {
                let lower = w.to_lowercase();
                match seen.iter().position(|s| *s == lower) {
                    Some(i) if i < existing => {}
                    Some(i) => words[i] = w,
                    None => {
                        seen.push(lower);
                        words.push(w);
                    }
                }
            }
        } else {
            let gone: BTreeSet<String> = q.words.iter().map(|w| w.to_lowercase()).collect();
            words.retain(|w| !gone.contains(&w.to_lowercase()));
        }
        Ok(Decided::new(
            vec![Change::Personal(PersonalChange::AlertWordsSet {
                user_id: me.id,
                words: words.clone(),
            })],
            words,
        ))
    }

    pub(in crate::realm) fn apply_alert_words(&mut self, user: UserId, words: &[String]) {
        if words.is_empty() {
            self.alert_words.remove(&user);
        } else {
            self.alert_words.insert(user, words.to_vec());
        }
        self.rebuild_alert_word_index();
    }

    pub(in crate::realm) fn rebuild_alert_word_index(&mut self) {
        self.alert_word_index = AlertWordIndex::build(
            self.alert_words
                .iter()
                .map(|(user, words)| (*user, words.as_slice())),
        );
    }

    /// The `alert_words` event of an `AlertWordsSet`.
    pub(in crate::realm) fn alert_word_events(&self, change: &PersonalChange) -> Vec<Event> {
        match change {
            PersonalChange::AlertWordsSet { user_id, words } => vec![Event::new(
                json!({"type": "alert_words", "alert_words": words}),
                Audience::users(vec![*user_id]),
            )],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(words: &[(UserId, &[&str])]) -> AlertWordIndex {
        let owned: Vec<(UserId, Vec<String>)> = words
            .iter()
            .map(|(u, ws)| (*u, ws.iter().map(|w| w.to_string()).collect()))
            .collect();
        AlertWordIndex::build(owned.iter().map(|(u, ws)| (*u, ws.as_slice())))
    }

    fn alerted(i: &AlertWordIndex, content: &str) -> Vec<UserId> {
        i.users_alerted(content).into_iter().collect()
    }

    #[test]
    fn words_match_at_boundaries_case_insensitively() {
        let i = index(&[(1, &["Hello"]), (2, &["how are you"]), (3, &["hey"])]);
        assert_eq!(alerted(&i, "hello there"), vec![1]);
        assert_eq!(alerted(&i, "Well, HELLO!"), vec![1]);
        assert_eq!(alerted(&i, "so how are you?"), vec![2]);
        assert_eq!(alerted(&i, "othello"), Vec::<UserId>::new());
        assert_eq!(alerted(&i, "hellothere"), Vec::<UserId>::new());
        // `"` after a word does not count (Zulip's set holds `",`).
        assert_eq!(alerted(&i, "say \"hello\""), Vec::<UserId>::new());
        // Zulip's start check lets a word one character in through.
        assert_eq!(alerted(&i, "xhello"), vec![1]);
        assert_eq!(alerted(&i, "hey hello"), vec![1, 3]);
    }

    #[test]
    fn shared_words_alert_everyone_who_has_them() {
        let i = index(&[(1, &["hello"]), (2, &["HELLO", "bye"])]);
        assert_eq!(alerted(&i, "hello"), vec![1, 2]);
        assert_eq!(
            alerted(&AlertWordIndex::default(), "hello"),
            Vec::<UserId>::new()
        );
    }

    #[test]
    fn cleaning_strips_and_drops_blanks() {
        assert_eq!(
            clean_alert_words(vec![" a ".into(), "  ".into(), "".into(), "b".into()]),
            vec!["a".to_string(), "b".to_string()]
        );
    }
}

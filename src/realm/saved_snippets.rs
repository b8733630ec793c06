//! Saved snippets: each user's reusable message texts, as Zulip's
//! `zerver/views/saved_snippets.py` and `zerver/actions/saved_snippets.py` check them.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::events::{Audience, Event};
use super::messages::send::MAX_MESSAGE_LENGTH;
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

pub type SnippetId = u64;

/// Zulip's `SavedSnippet.MAX_TITLE_LENGTH`.
pub const MAX_TITLE_LENGTH: usize = 60;

/// One saved snippet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSnippet {
    pub id: SnippetId,
    pub title: String,
    pub content: String,
    /// UNIX seconds.
    pub date_created: i64,
}

impl SavedSnippet {
    /// Zulip's `SavedSnippet.to_api_dict`.
    pub fn json(&self) -> Value {
        json!({"id": self.id, "title": self.title, "content": self.content, "date_created": self.date_created})
    }
}

/// The realm's saved snippets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SnippetState {
    /// Each user's snippets by id.
    pub by_user: OrdMap<UserId, OrdMap<SnippetId, SavedSnippet>>,
    /// The id the next snippet gets (0 reads as 1).
    pub next_id: SnippetId,
}

/// Pydantic's `StringConstraints(min_length=1, max_length=max, strip_whitespace=True)`
/// as Zulip's `typed_endpoint` words its failures: the stripped value.
pub fn snippet_text(param: &str, raw: &str, max: usize) -> ApiResult<String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err(ApiError::bad_request(format!("{param} cannot be blank")));
    }
    if s.chars().count() > max {
        return Err(ApiError::bad_request(format!(
            "{param} is too long (limit: {max} characters)"
        )));
    }
    Ok(s.to_owned())
}

/// The checked `title` of a snippet.
pub fn snippet_title(raw: &str) -> ApiResult<String> {
    snippet_text("title", raw, MAX_TITLE_LENGTH)
}

/// The checked `content` of a snippet.
pub fn snippet_content(raw: &str) -> ApiResult<String> {
    snippet_text("content", raw, MAX_MESSAGE_LENGTH)
}

/// `POST /saved_snippets` (both checked).
#[derive(Debug, Clone)]
pub struct CreateSnippet {
    pub title: String,
    pub content: String,
}

/// `PATCH /saved_snippets/{saved_snippet_id}` (at least one of them given, checked).
#[derive(Debug, Clone)]
pub struct EditSnippet {
    pub id: i64,
    pub title: Option<String>,
    pub content: Option<String>,
}

/// `DELETE /saved_snippets/{saved_snippet_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeleteSnippet {
    pub id: i64,
}

/// Zulip's `ResourceNotFoundError` for snippets (HTTP 404, code `BAD_REQUEST`).
pub fn snippet_missing() -> ApiError {
    ApiError::new(404, ErrorCode::BadRequest, "Saved snippet does not exist.")
}

impl Realm {
    fn snippet_of(&self, me: &User, id: i64) -> ApiResult<&SavedSnippet> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.saved_snippets.by_user.get(&me.id)?.get(&id))
            .ok_or_else(snippet_missing)
    }

    /// `me`'s snippets, by id (`GET /saved_snippets`, `/register`).
    pub fn view_saved_snippets(&self, me: &User) -> Vec<Value> {
        self.saved_snippets
            .by_user
            .get(&me.id)
            .map(|m| m.values().map(SavedSnippet::json).collect())
            .unwrap_or_default()
    }

    /// `POST /saved_snippets`: answers the new snippet's id.
    pub fn decide_create_snippet(
        &self,
        me: &User,
        q: CreateSnippet,
        cx: &mut Cx,
    ) -> ApiResult<Decided<SnippetId>> {
        let snippet = SavedSnippet {
            id: self.saved_snippets.next_id.max(1),
            title: q.title,
            content: q.content,
            date_created: cx.now_secs(),
        };
        let id = snippet.id;
        Ok(Decided::new(
            vec![Change::Personal(PersonalChange::SnippetSaved {
                user_id: me.id,
                snippet,
                created: true,
            })],
            id,
        ))
    }

    /// `PATCH /saved_snippets/{saved_snippet_id}`.
    pub fn decide_edit_snippet(
        &self,
        me: &User,
        q: EditSnippet,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let old = self.snippet_of(me, q.id)?;
        let snippet = SavedSnippet {
            title: q.title.unwrap_or_else(|| old.title.clone()),
            content: q.content.unwrap_or_else(|| old.content.clone()),
            ..old.clone()
        };
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::SnippetSaved {
                user_id: me.id,
                snippet,
                created: false,
            },
        )]))
    }

    /// `DELETE /saved_snippets/{saved_snippet_id}`.
    pub fn decide_delete_snippet(
        &self,
        me: &User,
        q: DeleteSnippet,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let snippet_id = self.snippet_of(me, q.id)?.id;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::SnippetRemoved {
                user_id: me.id,
                snippet_id,
            },
        )]))
    }

    pub(in crate::realm) fn apply_snippet_change(&mut self, change: &PersonalChange) {
        let state = &mut self.saved_snippets;
        match change {
            PersonalChange::SnippetSaved {
                user_id, snippet, ..
            } => {
                state.next_id = state.next_id.max(snippet.id + 1);
                state
                    .by_user
                    .entry(*user_id)
                    .or_default()
                    .insert(snippet.id, snippet.clone());
            }
            PersonalChange::SnippetRemoved {
                user_id,
                snippet_id,
            } => {
                if let Some(mine) = state.by_user.get_mut(user_id) {
                    mine.remove(snippet_id);
                    if mine.is_empty() {
                        state.by_user.remove(user_id);
                    }
                }
            }
            _ => {}
        }
    }

    /// `saved_snippets` events, to the user only.
    pub(in crate::realm) fn snippet_events(&self, change: &PersonalChange) -> Vec<Event> {
        let (user, body) = match change {
            PersonalChange::SnippetSaved {
                user_id,
                snippet,
                created,
            } => {
                let op = if *created { "add" } else { "update" };
                (
                    *user_id,
                    json!({"type": "saved_snippets", "op": op, "saved_snippet": snippet.json()}),
                )
            }
            PersonalChange::SnippetRemoved {
                user_id,
                snippet_id,
            } => (
                *user_id,
                json!({"type": "saved_snippets", "op": "remove", "saved_snippet_id": snippet_id}),
            ),
            _ => return Vec::new(),
        };
        vec![Event::new(body, Audience::users(vec![user]))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_stripped_and_bounded() {
        assert_eq!(snippet_title("  hi ").ok().as_deref(), Some("hi"));
        assert_eq!(
            snippet_title(" ").map_err(|e| e.msg),
            Err("title cannot be blank".into())
        );
        assert_eq!(
            snippet_title(&"é".repeat(61)).map_err(|e| e.msg),
            Err("title is too long (limit: 60 characters)".into())
        );
        assert!(snippet_title(&format!(" {} ", "é".repeat(60))).is_ok());
    }
}

//! Emoji reactions: `POST` and `DELETE /messages/{id}/reactions`, Zulip's
//! `check_add_reaction` and `remove_reaction`, over the emoji table shared with user
//! status (`realm/emoji.rs`).

use super::{Message, MessageChange, Reaction};
use crate::error::{ApiError, ApiResult};
use crate::realm::emoji::ReactionType;
use crate::realm::{Change, Cx, Decided, Realm, User};

/// A reaction added or taken back, as the client named it (parsed on the worker).
#[derive(Debug, Clone, PartialEq)]
pub struct ReactionRequest {
    pub message_id: i64,
    /// Required to add one; to take one back, it or `emoji_code` is.
    pub emoji_name: Option<String>,
    pub emoji_code: Option<String>,
    pub reaction_type: Option<String>,
}

impl Realm {
    /// `POST /messages/{id}/reactions`: on a message `me` may read, in a channel that
    /// is not archived.
    pub fn decide_add_reaction(
        &self,
        me: &User,
        q: ReactionRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let (m, _) = self.access_message(cx.rows()?, me, q.message_id)?;
        if m.recipient
            .channel()
            .and_then(|ch| self.channel(ch))
            .is_some_and(|ch| ch.is_archived)
        {
            return Err(ApiError::bad_request("Invalid message(s)"));
        }
        let change = self.reaction_to_add(
            me,
            &m,
            q.emoji_name.as_deref().unwrap_or_default(),
            q.emoji_code.as_deref(),
            q.reaction_type.as_deref(),
        )?;
        Ok(Decided::changes(vec![change]))
    }

    /// `DELETE /messages/{id}/reactions`.
    pub fn decide_remove_reaction(
        &self,
        me: &User,
        q: ReactionRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let (m, _) = self.access_message(cx.rows()?, me, q.message_id)?;
        let change = self.reaction_to_remove(
            me,
            &m,
            q.emoji_name.as_deref(),
            q.emoji_code.as_deref(),
            q.reaction_type.as_deref(),
        )?;
        Ok(Decided::changes(vec![change]))
    }

    /// Zulip's `check_add_reaction` on a message `me` may read.
    fn reaction_to_add(
        &self,
        me: &User,
        m: &Message,
        emoji_name: &str,
        emoji_code: Option<&str>,
        reaction_type: Option<&str>,
    ) -> ApiResult<Change> {
        let (code, rtype) = match (emoji_code, reaction_type) {
            (Some(c), Some(t)) => (c.to_owned(), t.to_owned()),
            (c, t) => {
                let data = self.emoji_data(emoji_name)?;
                (
                    c.map_or(data.code, str::to_owned),
                    t.map_or_else(|| data.reaction_type.as_str().to_owned(), str::to_owned),
                )
            }
        };
        if m.reactions
            .iter()
            .any(|r| r.user_id == me.id && r.emoji_code == code && r.reaction_type == rtype)
        {
            return Err(ApiError::bad_request("Reaction already exists."));
        }
        // Voting for an existing reaction takes its name; a new one is checked.
        let name = match m
            .reactions
            .iter()
            .find(|r| r.emoji_code == code && r.reaction_type == rtype)
        {
            Some(r) => r.emoji_name.clone(),
            None => {
                self.check_emoji_request(emoji_name, &code, &rtype)?;
                emoji_name.to_owned()
            }
        };
        Ok(Change::Message(MessageChange::ReactionAdded {
            message_id: m.id,
            recipient: m.recipient.clone(),
            reaction: Reaction {
                user_id: me.id,
                emoji_name: name,
                emoji_code: code,
                reaction_type: rtype,
            },
        }))
    }

    /// Zulip's `remove_reaction`.
    fn reaction_to_remove(
        &self,
        me: &User,
        m: &Message,
        emoji_name: Option<&str>,
        emoji_code: Option<&str>,
        reaction_type: Option<&str>,
    ) -> ApiResult<Change> {
        let rtype = reaction_type
            .unwrap_or(ReactionType::UnicodeEmoji.as_str())
            .to_owned();
        let code = match (emoji_code, emoji_name) {
            (Some(c), _) => c.to_owned(),
            (None, Some(name)) => self.emoji_data(name)?.code,
            (None, None) => return Err(ApiError::bad_request(
                "At least one of the following arguments must be present: emoji_name, emoji_code",
            )),
        };
        let Some(r) = m
            .reactions
            .iter()
            .find(|r| r.user_id == me.id && r.emoji_code == code && r.reaction_type == rtype)
        else {
            return Err(ApiError::bad_request("Reaction doesn't exist."));
        };
        Ok(Change::Message(MessageChange::ReactionRemoved {
            message_id: m.id,
            recipient: m.recipient.clone(),
            reaction: r.clone(),
        }))
    }
}

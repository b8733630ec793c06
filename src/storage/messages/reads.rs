//! Reads of the message trees: rows, a user's flags, the ids of a narrow, and the
//! realm's message-rows port (`MessageRows`).

use super::layout::{
    be, bit_in, bits_key, bits_of, chunk_of, conversation_prefix, decode_message, id_at_end,
    ids_in, topic_prefix, user_key, with_id, Trees, CHANNEL, RECEIVED, SENT, UNREAD,
};
use super::store::MessageStore;
use crate::realm::messages::fetch::{MessageRows, RowsError, RowsResult, Source};
use crate::realm::messages::rows::MessageStorePort;
use crate::realm::messages::search::SearchQuery;
use crate::realm::messages::{flags, Message, MessageId};
use crate::realm::UserId;
use crate::storage::StorageError;

/// A user's received messages with their flags (`MessageStore::received`).
pub type Received = Box<dyn Iterator<Item = Result<(MessageId, u32), StorageError>> + Send>;

impl MessageStore {
    /// A message row.
    pub fn get(&self, id: MessageId) -> Result<Option<Message>, StorageError> {
        match self.trees()?.rows.get(be(id))? {
            Some(v) => decode_message(&v).map(Some),
            None => Ok(None),
        }
    }

    /// A user's flags on a message (`None`: they did not receive it).
    pub fn flags(&self, user: UserId, id: MessageId) -> Result<Option<u32>, StorageError> {
        let t = self.trees()?;
        user_flags(&t, user, id)
    }

    /// The messages `user` received with ids in `[from, to]`, ascending, each with the
    /// user's flags on it (deleted messages included: `get` tells them), lazily: a
    /// realm's messages with their per-user flags are those of each of its users.
    pub fn received(
        &self,
        user: UserId,
        from: MessageId,
        to: MessageId,
    ) -> Result<Received, StorageError> {
        let t = self.trees()?;
        let ids = bit_ids(&t.bits, user, RECEIVED, from, to, false);
        Ok(Box::new(ids.map(move |id| {
            let id = id?;
            Ok((id, user_flags(&t, user, id)?.unwrap_or(0)))
        })))
    }

    /// Ids of `source` in `[from, to]`, ascending or (`reverse`) descending, lazily.
    pub fn ids(
        &self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> Result<Box<dyn Iterator<Item = Result<MessageId, StorageError>> + Send>, StorageError>
    {
        let t = self.trees()?;
        if from > to {
            return Ok(Box::new(std::iter::empty()));
        }
        let (tree, prefix): (sled::Tree, Vec<u8>) = match source {
            Source::User(u) => return Ok(bit_ids(&t.bits, *u, RECEIVED, from, to, reverse)),
            Source::Unread(u) => return Ok(bit_ids(&t.bits, *u, UNREAD, from, to, reverse)),
            Source::Channel(c) => return Ok(bit_ids(&t.bits, *c, CHANNEL, from, to, reverse)),
            Source::Topic(c, topic) => (t.idx, topic_prefix(*c, topic)),
            Source::Conversation(users) => (t.idx, conversation_prefix(users)),
            Source::Sender(s) => return Ok(bit_ids(&t.bits, *s, SENT, from, to, reverse)),
        };
        let lo = with_id(prefix.clone(), from);
        let hi = with_id(prefix, to);
        let range = tree.range(lo..=hi);
        let map = |r: sled::Result<(sled::IVec, sled::IVec)>| {
            r.map(|(k, _)| id_at_end(&k)).map_err(StorageError::from)
        };
        Ok(if reverse {
            Box::new(range.rev().map(map))
        } else {
            Box::new(range.map(map))
        })
    }
}

/// A user's flags on a message from its two bits and its exception.
pub(super) fn user_flags(
    t: &Trees,
    user: UserId,
    id: MessageId,
) -> Result<Option<u32>, StorageError> {
    let chunk = chunk_of(id).0;
    if !bit_in(t.bits.get(bits_key(user, RECEIVED, chunk))?.as_deref(), id) {
        return Ok(None);
    }
    let extra = t.flags.get(user_key(user, id))?.map_or(0, |v| bits_of(&v));
    let unread = bit_in(t.bits.get(bits_key(user, UNREAD, chunk))?.as_deref(), id);
    Ok(Some(
        (extra & !flags::READ) | if unread { 0 } else { flags::READ },
    ))
}

/// The ids set in `user`'s `kind` bitmap within `[from, to]`, lazily, a chunk at a time.
pub(super) fn bit_ids(
    bits: &sled::Tree,
    user: UserId,
    kind: u8,
    from: MessageId,
    to: MessageId,
    reverse: bool,
) -> Box<dyn Iterator<Item = Result<MessageId, StorageError>> + Send> {
    let lo = bits_key(user, kind, chunk_of(from).0);
    let hi = bits_key(user, kind, chunk_of(to).0);
    let range = bits.range(lo..=hi);
    let expand = move |item: sled::Result<(sled::IVec, sled::IVec)>| {
        let ids: Vec<Result<MessageId, StorageError>> = match item {
            Ok((k, v)) => {
                let mut ids: Vec<_> = ids_in(id_at_end(&k), &v)
                    .into_iter()
                    .filter(|id| (from..=to).contains(id))
                    .map(Ok)
                    .collect();
                if reverse {
                    ids.reverse();
                }
                ids
            }
            Err(e) => vec![Err(e.into())],
        };
        ids
    };
    if reverse {
        Box::new(range.rev().flat_map(expand))
    } else {
        Box::new(range.flat_map(expand))
    }
}

pub(super) fn rows_error(e: StorageError) -> RowsError {
    RowsError::new(e)
}

impl MessageRows for MessageStore {
    fn row(&self, id: MessageId) -> RowsResult<Option<Message>> {
        self.get(id).map_err(rows_error)
    }

    fn user_flags(&self, user: UserId, id: MessageId) -> RowsResult<Option<u32>> {
        self.flags(user, id).map_err(rows_error)
    }

    fn scan<'a>(
        &'a self,
        source: &Source,
        from: MessageId,
        to: MessageId,
        reverse: bool,
    ) -> RowsResult<Box<dyn Iterator<Item = RowsResult<MessageId>> + 'a>> {
        let ids = self.ids(source, from, to, reverse).map_err(rows_error)?;
        Ok(Box::new(ids.map(|r| r.map_err(rows_error))))
    }

    fn search(&self, q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        self.search_candidates(q)
    }
}

impl MessageStore {
    /// See `MessageRows::search`.
    pub(super) fn search_candidates(&self, q: &SearchQuery) -> RowsResult<Option<Vec<MessageId>>> {
        match self.inner.db.search_index(&self.inner.names) {
            Some(ix) => ix.candidates(q).map_err(RowsError::new),
            None => Ok(None),
        }
    }
}

impl MessageStorePort for MessageStore {
    fn ready(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(MessageStore::ready(self))
    }

    fn is_open(&self) -> bool {
        MessageStore::is_open(self)
    }

    fn generation(&self) -> u64 {
        MessageStore::generation(self)
    }
}

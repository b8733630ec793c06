//! `GET /streams/{stream_id}/email_address`: a channel's address at the email gateway,
//! as Zulip's `get_stream_email_address` builds it (`get_channel_email_token`, then
//! `encode_email_address`). hearth has no email gateway: the address is what Zulip
//! would answer, but mail sent to it reaches nothing. The token is Zulip's
//! `ChannelEmailAddress` row: made once per channel, creator and sender, then kept.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use super::*;
use crate::realm::ChannelChange;

/// Whose address: the channel, the user who asked for it, and who the gateway posts
/// as (`None`: Zulip's Email Gateway bot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EmailTokenKey {
    pub channel_id: ChannelId,
    pub creator: UserId,
    pub sender: Option<UserId>,
}

/// The tokens handed out, by key.
pub type EmailTokens = OrdMap<EmailTokenKey, String>;

/// `GET /streams/{stream_id}/email_address`, parsed on the worker.
#[derive(Debug, Clone)]
pub struct ChannelEmailRequest {
    pub stream_id: i64,
    pub sender_id: Option<i64>,
    /// The realm's host, where the gateway would be.
    pub host: String,
}

/// Zulip's `encode_email_address(name, token, show_sender=True)` at `host`: the name
/// with runs of non-word characters made one `-`, then Django's `slugify`; the name is
/// left out when slugifying would drop letters.
pub fn encode_email_address(name: &str, token: &str, host: &str) -> String {
    let mut dashed = String::new();
    let mut in_run = false;
    for c in name.chars() {
        if c.is_alphanumeric() || c == '_' {
            dashed.push(c);
            in_run = false;
        } else if !in_run {
            dashed.push('-');
            in_run = true;
        }
    }
    let ascii: String = dashed.nfkd().filter(char::is_ascii).collect();
    let kept: String = ascii
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || c.is_whitespace())
        .collect();
    let mut slug = String::new();
    let mut in_dash = false;
    for c in kept.chars() {
        if c == '-' || c.is_whitespace() {
            if !in_dash {
                slug.push('-');
            }
            in_dash = true;
        } else {
            slug.push(c);
            in_dash = false;
        }
    }
    let slug = slug.trim_matches(|c| c == '-' || c == '_');
    let mut local = if slug.chars().count() == dashed.chars().count() && !slug.is_empty() {
        format!("{slug}.{token}")
    } else {
        token.to_owned()
    };
    local.push_str(".show-sender");
    format!("{local}@{host}")
}

impl Realm {
    /// Zulip's `get_stream_email_address`: `access_stream_by_id`, the permission to
    /// post there (feature level 448), then the sender: the gateway (no `sender_id`),
    /// the caller, or a bot the caller administers (`access_bot_by_id`). Answers the
    /// address with the kept token, making one the first time.
    pub fn decide_channel_email(
        &self,
        me: &User,
        q: ChannelEmailRequest,
        cx: &mut Cx,
    ) -> ApiResult<Decided<String>> {
        let ch = self.access_channel(me, q.stream_id)?;
        self.check_can_post(me, ch)?;
        let sender = match q.sender_id {
            None => None,
            Some(id) if id == me.id as i64 => Some(me.id),
            Some(id) => Some(self.access_bot_for_admin(me, id)?.id),
        };
        let key = EmailTokenKey {
            channel_id: ch.id,
            creator: me.id,
            sender,
        };
        if let Some(token) = self.channel_email_tokens.get(&key) {
            return Ok(Decided::new(
                Vec::new(),
                encode_email_address(&ch.name, token, &q.host),
            ));
        }
        let token: String = cx
            .random_bytes::<16>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Decided::new(
            vec![Change::Channel(ChannelChange::EmailTokenCreated {
                key,
                token: token.clone(),
            })],
            encode_email_address(&ch.name, &token, &q.host),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::encode_email_address;

    #[test]
    fn addresses_are_encoded_as_zulip_encodes_them() {
        let a = |name| encode_email_address(name, "0123", "zulip.example");
        assert_eq!(a("test"), "test.0123.show-sender@zulip.example");
        assert_eq!(a("core team"), "core-team.0123.show-sender@zulip.example");
        assert_eq!(
            a("Verona!! & co"),
            "verona-co.0123.show-sender@zulip.example"
        );
        assert_eq!(a("Café"), "cafe.0123.show-sender@zulip.example");
        // Letters slugify cannot keep: the name is left out.
        assert_eq!(a("ビデオゲーム"), "0123.show-sender@zulip.example");
    }
}

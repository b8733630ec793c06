//! The words of a missed-message email: one conversation's messages for one person,
//! as plain text and as HTML, with a link to the conversation in the web client.
//!
//! Everything a person typed (names, channel and topic names, plain-text content) is
//! escaped in the HTML part; message bodies there are the server's own rendering, with
//! its site-relative links made absolute so they work from a mail reader.

use crate::mail::Email;
use crate::realm::messages::content::escape;
use crate::realm::messages::{Message, Recipient};
use crate::realm::missed_mail::MailTrigger;
use crate::realm::{Realm, User};

/// The most messages one email quotes (the newest); the rest are counted.
pub const MAX_QUOTED: usize = 20;

/// One conversation's messages to tell `to` about.
pub struct Conversation<'a> {
    /// Oldest first, each with the reason it deserves an email.
    pub messages: Vec<(&'a Message, MailTrigger)>,
}

/// What the email may say, decided from the person's settings.
pub struct Options<'a> {
    pub realm_url: &'a str,
    /// The realm's name goes into the subject.
    pub realm_name_in_subject: bool,
    /// The messages themselves are quoted.
    pub with_content: bool,
    /// The `Message-ID` to give the email.
    pub message_id: String,
}

fn name_of(realm: &Realm, id: u64) -> String {
    realm
        .user(id)
        .map(|u| u.full_name.clone())
        .unwrap_or_else(|| "Someone".to_owned())
}

/// `#channel > topic`, as a person reads it.
fn channel_topic(realm: &Realm, channel_id: u64, topic: &str) -> String {
    let channel = realm
        .channel(channel_id)
        .map(|c| c.name.clone())
        .unwrap_or_else(|| "unknown channel".to_owned());
    let topic = if topic.is_empty() {
        realm.settings.empty_topic_display_name.clone()
    } else {
        topic.to_owned()
    };
    format!("#{channel} > {topic}")
}

/// Names joined as a sentence: "A", "A and B", "A, B and C".
fn names_sentence(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The time of a message, in UTC.
fn time_of(m: &Message) -> String {
    chrono::DateTime::from_timestamp(m.timestamp, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// The server's rendering with site-relative links made absolute.
fn absolute_links(html: &str, realm_url: &str) -> String {
    let base = realm_url.trim_end_matches('/');
    html.replace("href=\"/", &format!("href=\"{base}/"))
        .replace("src=\"/", &format!("src=\"{base}/"))
}

/// The email about `conv` for `to`. `None`: nothing to say (no messages).
pub fn email(
    realm: &Realm,
    to: &User,
    conv: &Conversation<'_>,
    opts: &Options<'_>,
) -> Option<Email> {
    let (first, _) = conv.messages.first()?;
    let strongest = conv.messages.iter().map(|(_, t)| *t).min()?;
    let senders: Vec<String> = {
        let mut ids: Vec<u64> = Vec::new();
        for (m, _) in &conv.messages {
            if !ids.contains(&m.sender_id) {
                ids.push(m.sender_id);
            }
        }
        ids.into_iter().map(|id| name_of(realm, id)).collect()
    };
    let who = names_sentence(&senders);
    let n = conv.messages.len();
    let (place, intro) = match &first.recipient {
        Recipient::Channel { channel_id, topic } => {
            let place = channel_topic(realm, *channel_id, topic);
            let intro = match strongest {
                MailTrigger::Mention => format!("{who} mentioned you in {place}."),
                MailTrigger::WildcardMention | MailTrigger::WildcardMentionInFollowedTopic => {
                    format!("{who} mentioned everyone in {place}.")
                }
                MailTrigger::FollowedTopic => {
                    format!("{who} wrote in {place}, a topic you follow.")
                }
                _ => format!("{who} wrote in {place}."),
            };
            (place, intro)
        }
        Recipient::Direct { users } => {
            let others: Vec<String> = users
                .iter()
                .filter(|u| **u != to.id)
                .map(|u| name_of(realm, *u))
                .collect();
            if others.len() > 1 {
                let place = format!("Group direct messages with {}", names_sentence(&others));
                let intro = format!(
                    "{who} wrote in your group conversation with {}.",
                    names_sentence(&others)
                );
                (place, intro)
            } else {
                let place = format!("Direct messages from {who}");
                let intro = if n == 1 {
                    format!("{who} sent you a direct message.")
                } else {
                    format!("{who} sent you {n} direct messages.")
                };
                (place, intro)
            }
        }
    };
    let subject = if opts.realm_name_in_subject {
        format!("[{}] {place}", realm.settings.name)
    } else {
        place.clone()
    };
    let link = realm.message_link(first, opts.realm_url);
    let settings_link = format!(
        "{}/#settings/notifications",
        opts.realm_url.trim_end_matches('/')
    );
    let reason = match strongest {
        MailTrigger::DirectMessage | MailTrigger::Mention => {
            "You get this email because you were away when it arrived and your settings ask \
             for email about direct messages and mentions."
        }
        MailTrigger::WildcardMention | MailTrigger::WildcardMentionInFollowedTopic => {
            "You get this email because you were away when it arrived and your settings ask \
             for email about mentions of everyone."
        }
        MailTrigger::FollowedTopic => {
            "You get this email because you were away when it arrived and your settings ask \
             for email about topics you follow."
        }
        MailTrigger::ChannelEmail => {
            "You get this email because you were away when it arrived and your settings ask \
             for email about this channel."
        }
    };
    let skipped = n.saturating_sub(MAX_QUOTED);
    let quoted = &conv.messages[skipped..];

    let mut text = format!("{intro}\n\n");
    let mut html = format!(
        "<!DOCTYPE html><html><body style=\"font-family: sans-serif; line-height: 1.4\">\
         <p>{}</p>",
        escape(&intro)
    );
    if opts.with_content {
        if skipped > 0 {
            let more = format!("({skipped} earlier messages are in the conversation.)");
            text.push_str(&format!("{more}\n\n"));
            html.push_str(&format!("<p><em>{}</em></p>", escape(&more)));
        }
        for (m, _) in quoted {
            let sender = name_of(realm, m.sender_id);
            let when = time_of(m);
            text.push_str(&format!("{sender}, {when}:\n"));
            for line in m.content.lines() {
                text.push_str(&format!("> {line}\n"));
            }
            text.push('\n');
            html.push_str(&format!(
                "<div style=\"margin: 0 0 12px 0\"><div><strong>{}</strong> \
                 <span style=\"color: #777\">{}</span></div><div>{}</div></div>",
                escape(&sender),
                escape(&when),
                absolute_links(&m.rendered_content, opts.realm_url)
            ));
        }
    } else {
        let hidden = if n == 1 {
            "Your settings leave the message itself out of emails.".to_owned()
        } else {
            format!("Your settings leave the {n} messages themselves out of emails.")
        };
        text.push_str(&format!("{hidden}\n\n"));
        html.push_str(&format!("<p>{}</p>", escape(&hidden)));
    }
    text.push_str(&format!(
        "Open the conversation: {link}\n\n--\n{reason}\nChoose which emails you get: \
         {settings_link}\n"
    ));
    html.push_str(&format!(
        "<p><a href=\"{}\">Open the conversation</a></p><hr><p style=\"color: #777; \
         font-size: small\">{}<br><a href=\"{}\">Choose which emails you get</a></p>\
         </body></html>",
        escape(&link),
        escape(reason),
        escape(&settings_link)
    ));
    Some(Email {
        to: to.delivery_email.clone(),
        subject,
        body: text,
        html: Some(html),
        message_id: Some(opts.message_id.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_a_sentence() {
        let n = |v: &[&str]| names_sentence(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(n(&[]), "");
        assert_eq!(n(&["A"]), "A");
        assert_eq!(n(&["A", "B"]), "A and B");
        assert_eq!(n(&["A", "B", "C"]), "A, B and C");
    }

    #[test]
    fn site_relative_links_become_absolute() {
        assert_eq!(
            absolute_links(
                "<a href=\"/user_uploads/1/a.png\"><img src=\"/user_uploads/1/a.png\"></a>\
                 <a href=\"https://x.test/\">x</a>",
                "https://chat.test/"
            ),
            "<a href=\"https://chat.test/user_uploads/1/a.png\"><img \
             src=\"https://chat.test/user_uploads/1/a.png\"></a><a href=\"https://x.test/\">x</a>"
        );
    }
}

//! Outgoing email through an SMTP server (`--smtp-url`), with `lettre`.
//!
//! The URL says how to reach the server, as `lettre`'s `from_url` reads it:
//! `smtp://host:port` plain SMTP (a local relay or a test receiver),
//! `smtp://host:587?tls=required` STARTTLS, `smtps://host:465` TLS from the first byte;
//! credentials as `smtp://user:password@host`. Certificates are checked against the
//! Mozilla roots (rustls). Each send is bounded by Zulip's `EMAIL_TIMEOUT` (15 s).
//!
//! Sending is always off the realm actor, after the write it follows is durable; a
//! failure is logged and told to the caller, who decides what the client sees.

use std::time::Duration;

use lettre::message::{header::ContentType, Mailbox};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// Zulip's `EMAIL_TIMEOUT`.
const TIMEOUT: Duration = Duration::from_secs(15);

/// One plain-text email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub body: String,
}

/// Where email goes.
enum Sink {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// The development server without an SMTP server: emails are written to the log,
    /// as Zulip's development `EmailLogBackEnd` does.
    Log,
}

/// The server's outgoing email.
pub struct Mailer {
    sink: Sink,
    /// The `From` address (`--smtp-from`); default `noreply@<host of the realm URL>`.
    from: Option<String>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sink = match self.sink {
            Sink::Smtp(_) => "smtp",
            Sink::Log => "log",
        };
        f.debug_struct("Mailer")
            .field("sink", &sink)
            .field("from", &self.from)
            .finish()
    }
}

impl Mailer {
    /// A mailer for an SMTP URL; an error names what is wrong with it.
    pub fn smtp(url: &str, from: Option<String>) -> Result<Mailer, String> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("--smtp-url is not a usable SMTP URL: {e}"))?
            .timeout(Some(TIMEOUT))
            .build();
        if let Some(from) = &from {
            from.parse::<Mailbox>()
                .map_err(|e| format!("--smtp-from '{from}' is not an address: {e}"))?;
        }
        Ok(Mailer {
            sink: Sink::Smtp(transport),
            from,
        })
    }

    /// The development server's mailer without SMTP: emails go to the log.
    pub fn log_only(from: Option<String>) -> Mailer {
        Mailer {
            sink: Sink::Log,
            from,
        }
    }

    /// The `From` address for mail about a realm served at `site`.
    fn sender_for(&self, site: &str) -> String {
        self.from.clone().unwrap_or_else(|| {
            let host = site
                .split("://")
                .nth(1)
                .unwrap_or(site)
                .split(['/', ':'])
                .next()
                .filter(|h| !h.is_empty())
                .unwrap_or("localhost");
            format!("noreply@{host}")
        })
    }

    /// Sends `email` for the realm served at `site`.
    pub async fn send(&self, site: &str, email: &Email) -> Result<(), String> {
        let from = self.sender_for(site);
        let message = Message::builder()
            .from(
                from.parse::<Mailbox>()
                    .map_err(|e| format!("bad From address '{from}': {e}"))?,
            )
            .to(email
                .to
                .parse::<Mailbox>()
                .map_err(|e| format!("bad recipient '{}': {e}", email.to))?)
            .subject(email.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(email.body.clone())
            .map_err(|e| format!("cannot build the email: {e}"))?;
        match &self.sink {
            Sink::Smtp(transport) => transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|e| format!("SMTP delivery to {} failed: {e}", email.to)),
            Sink::Log => {
                tracing::info!(
                    to = %email.to,
                    subject = %email.subject,
                    "email (no --smtp-url; development server):\n{}",
                    email.body
                );
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(Mailer::smtp("smtp://127.0.0.1:2525", None).is_ok());
        assert!(Mailer::smtp("smtps://mail.example.com", None).is_ok());
        assert!(Mailer::smtp("smtp://mail.example.com:587?tls=required", None).is_ok());
        assert!(Mailer::smtp("http://mail.example.com", None).is_err());
        assert!(Mailer::smtp("smtp://127.0.0.1", Some("not an address".into())).is_err());
    }

    #[test]
    fn from_defaults_to_the_realm_host() {
        let m = Mailer::log_only(None);
        assert_eq!(
            m.sender_for("https://chat.acme.test/"),
            "noreply@chat.acme.test"
        );
        assert_eq!(m.sender_for("http://127.0.0.1:9991"), "noreply@127.0.0.1");
        for site in [
            "https://chat.acme.test/",
            "http://127.0.0.1:9991",
            "http://localhost",
        ] {
            assert!(m.sender_for(site).parse::<Mailbox>().is_ok(), "{site}");
        }
        let m = Mailer::log_only(Some("Acme <chat@acme.test>".into()));
        assert_eq!(m.sender_for("https://x"), "Acme <chat@acme.test>");
    }
}

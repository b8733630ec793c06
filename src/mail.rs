//! Outgoing email through an SMTP server (`--smtp-url`), with `lettre`.
//!
//! The URL says how to reach the server, as `lettre`'s `from_url` reads it:
//! `smtp://host:port` plain SMTP (a local relay or a test receiver),
//! `smtp://host:587?tls=required` STARTTLS, `smtps://host:465` TLS from the first byte;
//! credentials as `smtp://user:password@host`. Certificates are checked against the
//! Mozilla roots (rustls). Each send is bounded by Zulip's `EMAIL_TIMEOUT` (15 s).
//!
//! Sending is always off the realm actor, after the write it follows is durable, through
//! one bounded queue (`MailQueue`); a failure is logged.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use lettre::message::{header::ContentType, Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// Zulip's `EMAIL_TIMEOUT`.
const TIMEOUT: Duration = Duration::from_secs(15);

/// One email: plain text, with an HTML alternative when `html` is set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub body: String,
    /// The HTML part (`multipart/alternative` with `body`).
    pub html: Option<String>,
    /// The `Message-ID` (without angle brackets); `None`: one is made up. An email
    /// that may be sent again (after a crash between its sending and its record)
    /// names itself the same each time, so that receivers can tell it is one email.
    pub message_id: Option<String>,
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

    /// Whether mail really leaves the server (not only the development log).
    pub fn is_smtp(&self) -> bool {
        matches!(self.sink, Sink::Smtp(_))
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
        let builder = Message::builder()
            .message_id(email.message_id.as_ref().map(|id| format!("<{id}>")))
            .from(
                from.parse::<Mailbox>()
                    .map_err(|e| format!("bad From address '{from}': {e}"))?,
            )
            .to(email
                .to
                .parse::<Mailbox>()
                .map_err(|e| format!("bad recipient '{}': {e}", email.to))?)
            .subject(email.subject.clone());
        let message = match &email.html {
            None => builder
                .header(ContentType::TEXT_PLAIN)
                .body(email.body.clone()),
            Some(html) => builder.multipart(MultiPart::alternative_plain_html(
                email.body.clone(),
                html.clone(),
            )),
        }
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

/// How many emails may wait for the sender: a day's invitations of a realm (Zulip's
/// `max_invites`) several times over. When it is full, an email is logged as not sent.
pub const QUEUE_CAPACITY: usize = 512;

/// Outgoing email in order, through one sender: a bounded channel drained by one task
/// (as Zulip's `email_senders` queue worker), so that no request can start work per
/// address, and a slow SMTP server slows the queue, not the server.
#[derive(Debug, Clone)]
pub struct MailQueue {
    mailer: Arc<Mailer>,
    tx: mpsc::Sender<Queued>,
}

/// One email waiting, with the site it is about (the `From` default).
struct Queued {
    site: String,
    email: Email,
}

impl MailQueue {
    /// The queue of `mailer`, and its sender task on the current runtime.
    pub fn start(mailer: Arc<Mailer>, capacity: usize) -> MailQueue {
        let (tx, mut rx) = mpsc::channel::<Queued>(capacity.max(1));
        let sender = mailer.clone();
        actix_web::rt::spawn(async move {
            while let Some(q) = rx.recv().await {
                deliver(&sender, &q.site, &q.email).await;
            }
        });
        MailQueue { mailer, tx }
    }

    /// The mailer the queue sends through.
    pub fn mailer(&self) -> &Mailer {
        &self.mailer
    }

    /// The mailer the queue sends through, shared (for senders that wait for the
    /// outcome of each email).
    pub fn mailer_arc(&self) -> Arc<Mailer> {
        self.mailer.clone()
    }

    /// Queues `email` at once, never waiting: a request that waited for room could be
    /// dropped with its client, after its write, and its email with it, unseen. A full
    /// queue (its SMTP server slow or gone) or a closed one (the server is stopping)
    /// logs the email as not sent.
    pub async fn send(&self, site: &str, email: Email) {
        let queued = Queued {
            site: site.to_owned(),
            email,
        };
        match self.tx.try_send(queued) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(lost)) => {
                tracing::error!(to = %lost.email.to, "email not sent: the mail queue is full");
            }
            Err(mpsc::error::TrySendError::Closed(lost)) => {
                tracing::error!(to = %lost.email.to, "email not sent: the mail queue is closed");
            }
        }
    }
}

/// One delivery, tried three times (1 s, then 5 s apart); a failure is logged.
/// Answers whether the SMTP server took it.
pub async fn deliver(mailer: &Mailer, site: &str, email: &Email) -> bool {
    let mut waits = [Duration::from_secs(1), Duration::from_secs(5)].into_iter();
    loop {
        match mailer.send(site, email).await {
            Ok(()) => return true,
            Err(why) => match waits.next() {
                Some(wait) => {
                    tracing::warn!("email to {} not sent yet: {why}; trying again", email.to);
                    tokio::time::sleep(wait).await;
                }
                None => {
                    tracing::error!("email to {} not sent: {why}", email.to);
                    return false;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queuing never waits, full queue or not: a request's future may be dropped with
    /// its client at any await, and an email waiting there would go unseen.
    #[actix_rt::test]
    async fn queuing_never_waits_for_room() {
        let queue = MailQueue::start(Arc::new(Mailer::log_only(None)), 1);
        for i in 0..3 {
            let email = Email {
                to: format!("a{i}@example.test"),
                subject: "s".into(),
                body: "b".into(),
                ..Email::default()
            };
            // The sender task has not run yet: the queue is full after the first.
            let queued = futures_util::FutureExt::now_or_never(queue.send("http://x", email));
            assert!(queued.is_some(), "email {i} waited");
        }
    }

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

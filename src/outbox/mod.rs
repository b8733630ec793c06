//! The outbox worker: makes the deliveries realms have promised to outgoing-webhook
//! bots (`realm::bot_services`), off every realm actor.
//!
//! It reads each realm's published (durable) outbox a few times a second, so a
//! delivery is never attempted before the message that triggered it is durable, and
//! after a restart every delivery still pending is attempted again (at least once).
//! Each attempt re-checks what it relies on (the message still exists, the bot is
//! still an active outgoing-webhook bot), POSTs through the guarded client
//! (`guard`), and reports the outcome to the realm as one system write: the bot's
//! answer, a failure notice or the owner's notice, and the delivery's end, together.
//!
//! Outcomes, as Zulip's `do_rest_call`:
//!
//! | Attempt | In the conversation | To the bot's owner |
//! |---------|---------------------|--------------------|
//! | 2xx with content | the content | - |
//! | 2xx unreadable | `Failure! Invalid JSON in response` | the error and the payload |
//! | 4xx (and 5xx after the retries) | `Failure! Third party responded with N` | the status and the payload |
//! | a refused address | `Failure! Third party responded with 407` | "private or disallowed network" |
//! | timeout, refused connection | retried up to `MAX_RETRIES`, then `Failure! Bot is unavailable` | the reason |
//! | another error (a bad URL) | `Failure! An exception of type *T* occurred ...` | the exception |

pub mod guard;
pub mod payload;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::locks::lock;
use crate::realm::bot_services::{Delivery, DeliveryOutcome, DeliveryReport, MAX_RETRIES};
use crate::realm::messages::fetch::MessageRows;
use crate::realm::messages::send::{Addressee, ChannelRef, SendRequest};
use crate::realm::messages::{Message, Recipient};
use crate::realm::Realm;
use crate::registry::RealmHandle;

/// Zulip's `OUTGOING_WEBHOOK_TIMEOUT_SECONDS`.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// How often the published outboxes are read.
const POLL: Duration = Duration::from_millis(200);
/// The wait before the first retry; doubled for each later one.
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The client name of the bots' answers (Zulip's).
const CLIENT: &str = "OutgoingWebhookResponse";

/// The guarded HTTP client and its policy.
struct Http {
    client: reqwest::Client,
    policy: guard::Policy,
}

/// A delivery, by realm and id.
type Key = (String, u64);

/// Deliveries being attempted, and when each failed one may be tried again.
#[derive(Default)]
struct Schedule {
    running: HashSet<Key>,
    not_before: HashMap<Key, Instant>,
}

/// Starts the worker over the realms `realms` lists; it ends when `realms` answers
/// `None` (the server is gone).
pub fn spawn(
    realms: impl Fn() -> Option<Vec<RealmHandle>> + Send + 'static,
    policy: guard::Policy,
) {
    let client = match guard::client(policy, TIMEOUT) {
        Ok(client) => Http { client, policy },
        Err(e) => {
            tracing::error!("outgoing webhooks are off: no HTTP client: {e}");
            return;
        }
    };
    let client = Arc::new(client);
    let schedule = Arc::new(Mutex::new(Schedule::default()));
    actix_web::rt::spawn(async move {
        let mut every = tokio::time::interval(POLL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(all) = realms() else {
                break;
            };
            for realm in all {
                start_due(&realm, &client, &schedule);
            }
        }
    });
}

/// Starts an attempt of every pending delivery of `realm` not running or waiting.
fn start_due(realm: &RealmHandle, http: &Arc<Http>, schedule: &Arc<Mutex<Schedule>>) {
    let version = realm.hub.current();
    let pending = &version.bot_services.outbox.pending;
    if pending.is_empty() {
        return;
    }
    let subdomain = version.settings.subdomain.clone();
    let now = Instant::now();
    for d in pending.values() {
        let key = (subdomain.clone(), d.id);
        {
            let mut s = lock(schedule);
            if s.running.contains(&key) || s.not_before.get(&key).is_some_and(|t| *t > now) {
                continue;
            }
            s.running.insert(key.clone());
        }
        let (realm, http, schedule, d) = (realm.clone(), http.clone(), schedule.clone(), d.clone());
        actix_web::rt::spawn(async move {
            let retry = attempt(&realm, &http, &d).await;
            let mut s = lock(&schedule);
            s.running.remove(&key);
            match retry {
                Some(wait) => {
                    s.not_before.insert(key, Instant::now() + wait);
                }
                None => {
                    s.not_before.remove(&key);
                }
            }
        });
    }
}

/// One attempt of `d`; answers the wait before the next one when it must be retried
/// (or when its outcome could not be recorded).
async fn attempt(realm: &RealmHandle, http: &Http, d: &Delivery) -> Option<Duration> {
    let backoff = FIRST_RETRY * 2u32.saturating_pow(d.attempts.min(8));
    let rows = match realm.messages.ready().await {
        Ok(()) => realm.messages.clone(),
        Err(why) => {
            tracing::warn!("delivery {} waits for the message store: {why}", d.id);
            return Some(backoff);
        }
    };
    let version = realm.hub.current();
    let outcome = match rows.row(d.message_id) {
        Ok(Some(m)) => run(&version, realm, http, d, &m, &rows).await,
        // Deleted meanwhile: nothing to deliver.
        Ok(None) => done(None, None),
        Err(e) => {
            tracing::warn!(
                "delivery {}: message {} unreadable: {e}",
                d.id,
                d.message_id
            );
            return Some(backoff);
        }
    };
    let retry = matches!(outcome, DeliveryOutcome::Retry);
    let report = DeliveryReport { id: d.id, outcome };
    match realm
        .client
        .commit_system(report, Realm::decide_delivery_outcome)
        .await
    {
        Ok(()) => retry.then_some(backoff),
        Err(e) => {
            tracing::warn!("delivery {}: outcome not recorded: {}", d.id, e.msg);
            Some(backoff)
        }
    }
}

fn done(reply: Option<SendRequest>, owner_notice: Option<SendRequest>) -> DeliveryOutcome {
    DeliveryOutcome::Done {
        reply: reply.map(Box::new),
        owner_notice: owner_notice.map(Box::new),
    }
}

/// Makes the request and turns what happened into the outcome to record.
async fn run(
    realm: &Realm,
    handle: &RealmHandle,
    http: &Http,
    d: &Delivery,
    m: &Message,
    rows: &dyn MessageRows,
) -> DeliveryOutcome {
    // Deactivated, or no longer an outgoing-webhook bot: nothing to deliver.
    let Some((bot, service)) = realm.service_bot(d.bot_id) else {
        return done(None, None);
    };
    let say = |content: String| conversation_reply(realm, rows, m, content);
    let realm_url = realm.url(&handle.server_url).to_owned();
    let notice = |detail: String| owner_notice(realm, rows, m, d, &realm_url, detail);
    let failed = d.attempts + 1;
    let url = match url::Url::parse(&service.base_url) {
        Ok(u) => u,
        Err(e) => {
            return exception(&say, &notice, m, "InvalidURL", &e.to_string());
        }
    };
    if let Err(refused) = guard::check_literal(http.policy, &url) {
        tracing::info!("delivery {}: {refused}", d.id);
        return refused_outcome(&say, &notice);
    }
    let request = match payload::request(realm, d, m, bot, service) {
        payload::Request::NotSent(why) => return done(say(format!("Failure! {why}")), None),
        payload::Request::Json(body) => http.client.post(url).json(&body),
        payload::Request::Form(pairs) => http.client.post(url).form(&pairs),
    };
    let started = Instant::now();
    let response = request.send().await;
    tracing::info!(
        "outgoing webhook of bot {} for message {} took {} ms",
        d.bot_id,
        m.id,
        started.elapsed().as_millis()
    );
    let response = match response {
        Ok(r) => r,
        Err(e) if guard::is_refusal(&e) => {
            tracing::info!("delivery {}: refused: {e}", d.id);
            return refused_outcome(&say, &notice);
        }
        // Refused, reset or closed connections are Zulip's `ConnectionError`s.
        Err(e) if e.is_timeout() || e.is_connect() || (e.is_request() && !e.is_builder()) => {
            let why = if e.is_timeout() {
                format!(
                    "its service did not answer within {} seconds, {} times.",
                    TIMEOUT.as_secs(),
                    failed
                )
            } else {
                format!("its service could not be reached (the connection was refused or cut), {failed} times.")
            };
            tracing::info!("delivery {} attempt {failed} failed: {e}", d.id);
            if failed <= MAX_RETRIES {
                return DeliveryOutcome::Retry;
            }
            return done(say("Failure! Bot is unavailable".into()), notice(why));
        }
        Err(e) => {
            let kind = if e.is_redirect() {
                "TooManyRedirects"
            } else if e.is_body() || e.is_decode() {
                "ContentDecodingError"
            } else {
                "RequestException"
            };
            return exception(&say, &notice, m, kind, &e.to_string());
        }
    };
    let status = response.status();
    let body = response.bytes().await.unwrap_or_default();
    if status.is_success() {
        return match payload::answer(service.interface, &String::from_utf8_lossy(&body)) {
            payload::Answer::Nothing => done(None, None),
            payload::Answer::Reply(content) => done(say(content), None),
            payload::Answer::Invalid(why) => done(
                say(format!("Failure! {why}")),
                notice(format!(
                    "its service's answer cannot be read ({why}). The answer was:\n```\n{}\n```",
                    payload::bytes_repr(&body)
                )),
            ),
        };
    }
    if status.is_server_error() && failed <= MAX_RETRIES {
        tracing::info!("delivery {} attempt {failed}: status {status}", d.id);
        return DeliveryOutcome::Retry;
    }
    let code = status.as_u16();
    let mut detail = format!("its service answered with status code *{code}*.");
    if !body.is_empty() {
        detail.push_str(&format!(
            " The answer was:\n```\n{}\n```",
            payload::bytes_repr(&body)
        ));
    }
    done(
        say(format!("Failure! Third party responded with {code}")),
        notice(detail),
    )
}

fn refused_outcome(
    say: &dyn Fn(String) -> Option<SendRequest>,
    notice: &dyn Fn(String) -> Option<SendRequest>,
) -> DeliveryOutcome {
    // Zulip's Smokescreen answers 407 for a refused address.
    done(
        say("Failure! Third party responded with 407".into()),
        notice(
            "its URL is on a private or disallowed network, which this server does not contact \
             (see `--webhook-allow-private`)."
                .into(),
        ),
    )
}

fn exception(
    say: &dyn Fn(String) -> Option<SendRequest>,
    notice: &dyn Fn(String) -> Option<SendRequest>,
    m: &Message,
    kind: &str,
    text: &str,
) -> DeliveryOutcome {
    done(
        say(format!(
            "Failure! An exception of type *{kind}* occurred for message `{}`! See the server \
             logs for more information.",
            m.content
        )),
        notice(format!(
            "the request to its service could not be made ({kind}):\n```\n{text}\n```"
        )),
    )
}

/// A message from the bot in the conversation of `m` (rendered against `realm`).
fn conversation_reply(
    realm: &Realm,
    rows: &dyn MessageRows,
    m: &Message,
    content: String,
) -> Option<SendRequest> {
    let to = match &m.recipient {
        Recipient::Channel { channel_id, topic } => Addressee::Channel {
            channel: ChannelRef::Id(i64::try_from(*channel_id).ok()?),
            topic: topic.clone(),
        },
        Recipient::Direct { users } => Addressee::Direct {
            ids: users
                .iter()
                .filter_map(|u| i64::try_from(*u).ok())
                .collect(),
            emails: Vec::new(),
        },
    };
    let content = crate::realm::messages::send::normalize_body(&content).ok()?;
    realm
        .send_request(rows, to, content, CLIENT.into(), true)
        .ok()
}

/// A direct message from the bot to its owner about a failed delivery (as Zulip's
/// `notify_bot_owner` sends one), in hearth's words: the message's link, then `detail`.
fn owner_notice(
    realm: &Realm,
    rows: &dyn MessageRows,
    m: &Message,
    d: &Delivery,
    realm_url: &str,
    detail: String,
) -> Option<SendRequest> {
    let bot = realm.user(d.bot_id)?;
    let owner = bot.bot_owner_id?;
    let link = realm.message_link(m, realm_url);
    let content = format!(
        "Your bot @_**{}** could not answer [a message]({link}): {detail}",
        bot.full_name
    );
    let to = Addressee::Direct {
        ids: vec![i64::try_from(owner).ok()?],
        emails: Vec::new(),
    };
    let content = crate::realm::messages::send::normalize_body(&content).ok()?;
    realm
        .send_request(rows, to, content, CLIENT.into(), true)
        .ok()
}

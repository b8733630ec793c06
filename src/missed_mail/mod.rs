//! The mail worker: sends the missed-message emails realms have promised
//! (`realm::missed_mail`), off every realm actor.
//!
//! It reads each realm's published (durable) schedule twice a second. An entry seen
//! for the first time has its person judged away or not, as Zulip judges it when the
//! message arrives (`receiver_is_off_zulip`, or idle by presence): no event queue that
//! receives messages, or no `active` presence ping in the 140 seconds before the
//! message. The judgement is soft state, kept in memory; an entry first seen after a
//! restart is judged then. Entry ids only grow, so a poll judges the entries above the
//! last one judged and walks the schedule only when entries have gone (to forget
//! their judgements).
//!
//! When someone's batch falls due, its entries are re-checked against the realm as it
//! is then (`Realm::mail_trigger`, with the message's row and the person's flags: not
//! read, not deleted, the sender and the conversation not muted, the settings still
//! asking) and grouped by conversation; each conversation is one email, sent through
//! `--smtp-url` (three tries, 1 s and 5 s apart). Each sent email's entries, and the
//! entries found no longer deserving one, are then recorded as done by a system write
//! (`Realm::decide_missed_mail_done`).
//!
//! So a `kill -9` before an email is sent leaves its entries pending and it is sent
//! after the restart; a `kill -9` in the moment between the SMTP server's acceptance
//! and the record sends it again, with the same `Message-ID`. An email the SMTP server
//! keeps refusing is tried again after 1, 2, 4, ... minutes, up to `MAX_ROUNDS`
//! rounds, then dropped with an error in the log.

pub mod compose;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::locks::lock;
use crate::mail::Mailer;
use crate::realm::messages::rows::MessageRows;
use crate::realm::messages::{flags, Message, Recipient};
use crate::realm::missed_mail::{MailTrigger, PendingMail, Received};
use crate::realm::{Realm, UserId};
use crate::registry::RealmHandle;

/// How often the published schedules are read.
const POLL: Duration = Duration::from_millis(500);
/// Zulip's presence idle threshold for notifications (`OFFLINE_THRESHOLD_SECS`'s
/// counterpart in `get_active_presence_idle_user_ids`).
const IDLE_SECS: i64 = 140;
/// Rounds of tries before an email the SMTP server keeps refusing is dropped.
const MAX_ROUNDS: u32 = 6;
/// The wait before the second round; doubled for each later one.
const FIRST_ROUND_WAIT: Duration = Duration::from_secs(60);

/// A person, by realm and id.
type PersonKey = (String, UserId);

#[derive(Default)]
struct Schedule {
    /// Per realm, whether the person was away when each pending entry was first seen.
    away: HashMap<String, BTreeMap<u64, bool>>,
    /// Per realm, the highest entry id judged: entry ids only grow, so each poll judges
    /// the entries above it and does not walk the schedule.
    judged_up_to: HashMap<String, u64>,
    /// People whose batch is being handled.
    running: HashSet<PersonKey>,
    /// People whose emails failed: when to try again, and how many rounds failed.
    retry: HashMap<PersonKey, (Instant, u32)>,
}

/// Starts the worker over the realms `realms` lists; it ends when `realms` answers
/// `None` (the server is gone). Without a mailer, due entries are recorded as done
/// unsent (the server sends no email).
pub fn spawn(
    realms: impl Fn() -> Option<Vec<RealmHandle>> + Send + 'static,
    mailer: Option<Arc<Mailer>>,
) {
    let schedule = Arc::new(Mutex::new(Schedule::default()));
    actix_web::rt::spawn(async move {
        let mut every = tokio::time::interval(POLL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(all) = realms() else {
                break;
            };
            for realm in &all {
                start_due(realm, &all, &mailer, &schedule);
            }
        }
    });
}

/// Whether `user` counts as away for a message sent at `sent_at` (UNIX seconds).
fn is_away(realm: &RealmHandle, user: UserId, sent_at: i64) -> bool {
    let on_zulip = realm.hub.receives_messages(user);
    let active = realm
        .hub
        .presence()
        .get(user)
        .and_then(|e| e.last_active)
        .is_some_and(|t| t >= sent_at - IDLE_SECS);
    !on_zulip || !active
}

fn start_due(
    realm: &RealmHandle,
    all: &[RealmHandle],
    mailer: &Option<Arc<Mailer>>,
    schedule: &Arc<Mutex<Schedule>>,
) {
    let version = realm.hub.current();
    let state = &version.missed_mail;
    let subdomain = version.settings.subdomain.clone();
    {
        let mut s = lock(schedule);
        // Judge the entries above the watermark (the new ones).
        let from = s.judged_up_to.get(&subdomain).map_or(0, |w| w + 1);
        let mut judged = Vec::new();
        for (id, p) in state.pending.range(from..) {
            judged.push((*id, is_away(realm, p.user_id, p.queued_at)));
        }
        if let Some((last, _)) = judged.last() {
            s.judged_up_to.insert(subdomain.clone(), *last);
        }
        let away = s.away.entry(subdomain.clone()).or_default();
        away.extend(judged);
        // Every pending entry is judged, so more judgements than entries means some
        // entries are gone: only then is the schedule walked, to forget them.
        if away.len() > state.pending.len() {
            away.retain(|id, _| state.pending.contains_key(id));
        }
    }
    if state.pending.is_empty() {
        return;
    }
    let now = realm.clock.now_ms() / 1000;
    let now_instant = Instant::now();
    for user in version.users_with_due_mail(now) {
        let key = (subdomain.clone(), user);
        let judged: HashMap<u64, bool>;
        let last_round: bool;
        {
            let mut s = lock(schedule);
            if s.running.contains(&key) || s.retry.get(&key).is_some_and(|(t, _)| *t > now_instant)
            {
                continue;
            }
            s.running.insert(key.clone());
            last_round = s.retry.get(&key).is_some_and(|(_, r)| r + 1 >= MAX_ROUNDS);
            judged = s
                .away
                .get(&subdomain)
                .map(|away| {
                    version
                        .due_mail_of(user, now)
                        .iter()
                        .filter_map(|p| away.get(&p.id).map(|a| (p.id, *a)))
                        .collect()
                })
                .unwrap_or_default();
        }
        let multiple_accounts = version.user(user).is_some_and(|u| {
            all.iter()
                .filter(|r| !std::ptr::eq(*r, realm))
                .any(|other| {
                    other
                        .hub
                        .current()
                        .user_by_delivery_email(&u.delivery_email)
                        .is_some_and(|o| o.is_active)
                })
        });
        let (realm, mailer, schedule) = (realm.clone(), mailer.clone(), schedule.clone());
        actix_web::rt::spawn(async move {
            let failed = handle(
                &realm,
                user,
                now,
                &judged,
                multiple_accounts,
                mailer.as_deref(),
                last_round,
            )
            .await;
            let mut s = lock(&schedule);
            s.running.remove(&key);
            if failed {
                let rounds = s.retry.get(&key).map_or(0, |(_, r)| *r) + 1;
                let wait = FIRST_ROUND_WAIT * 2u32.saturating_pow(rounds - 1);
                s.retry.insert(key, (Instant::now() + wait, rounds));
            } else {
                s.retry.remove(&key);
            }
        });
    }
}

/// The conversation an entry's message belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Conversation {
    Channel(u64, String),
    Direct(Vec<UserId>),
}

fn conversation_of(m: &Message) -> Conversation {
    match &m.recipient {
        Recipient::Channel { channel_id, topic } => {
            Conversation::Channel(*channel_id, topic.to_lowercase())
        }
        Recipient::Direct { users } => Conversation::Direct(users.clone()),
    }
}

/// What became of one person's due batch.
#[derive(Debug, Default, PartialEq)]
pub struct Sorted {
    /// Entries that no longer deserve an email.
    pub dropped: Vec<u64>,
    /// The rest, by conversation, oldest first: (entry, message, trigger now).
    groups: BTreeMap<Conversation, Vec<(u64, Message, MailTrigger)>>,
}

/// Re-checks a person's due entries against `realm` as it is now.
fn sort(
    realm: &Realm,
    rows: &dyn MessageRows,
    user: UserId,
    entries: &[PendingMail],
    away: &dyn Fn(&PendingMail) -> bool,
) -> Result<Sorted, String> {
    let mut out = Sorted::default();
    for p in entries {
        let m = rows.row(p.message_id).map_err(|e| e.to_string())?;
        let bits = rows
            .user_flags(user, p.message_id)
            .map_err(|e| e.to_string())?;
        let keep = match (m, bits) {
            (Some(m), Some(bits)) if bits & flags::READ == 0 && away(p) => realm
                .mail_trigger(&m, user, Received::from_flags(bits))
                .map(|t| (m, t)),
            _ => None,
        };
        match keep {
            Some((m, trigger)) => out
                .groups
                .entry(conversation_of(&m))
                .or_default()
                .push((p.id, m, trigger)),
            None => out.dropped.push(p.id),
        }
    }
    for list in out.groups.values_mut() {
        list.sort_by_key(|(_, m, _)| m.id);
    }
    Ok(out)
}

/// Handles `user`'s due batch; answers whether an email failed (to be tried again).
async fn handle(
    realm: &RealmHandle,
    user: UserId,
    now: i64,
    judged: &HashMap<u64, bool>,
    multiple_accounts: bool,
    mailer: Option<&Mailer>,
    last_round: bool,
) -> bool {
    if let Err(why) = realm.messages.ready().await {
        tracing::warn!("missed-message emails wait for the message store: {why}");
        return true;
    }
    let version = realm.hub.current();
    let entries = version.due_mail_of(user, now);
    if entries.is_empty() {
        return false;
    }
    let away = |p: &PendingMail| {
        judged
            .get(&p.id)
            .copied()
            .unwrap_or_else(|| is_away(realm, p.user_id, p.queued_at))
    };
    let sorted = match sort(&version, &realm.messages, user, &entries, &away) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("missed-message emails of user {user}: rows unreadable: {e}");
            return true;
        }
    };
    let mut failed = false;
    let mut done = sorted.dropped;
    let Some(to) = version.user(user) else {
        done.extend(sorted.groups.values().flatten().map(|(id, _, _)| *id));
        record(realm, done).await;
        return false;
    };
    let realm_url = version.url(&realm.server_url).to_owned();
    let host = url::Url::parse(&realm_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| "localhost".to_owned());
    for list in sorted.groups.values() {
        let ids: Vec<u64> = list.iter().map(|(id, _, _)| *id).collect();
        let Some(mailer) = mailer else {
            // No email leaves this server: the promise cannot be kept; say so once per batch.
            tracing::debug!("missed-message email to user {user} not sent: no --smtp-url");
            done.extend(ids);
            continue;
        };
        let conv = compose::Conversation {
            messages: list.iter().map(|(_, m, t)| (m, *t)).collect(),
        };
        let opts = compose::Options {
            realm_url: &realm_url,
            realm_name_in_subject: version.realm_name_in_email(to, multiple_accounts),
            with_content: version.message_content_in_email(to),
            message_id: format!(
                "missed.{}.{}.{}@{host}",
                version.settings.subdomain,
                user,
                ids.first().copied().unwrap_or_default()
            ),
        };
        let Some(email) = compose::email(&version, to, &conv, &opts) else {
            done.extend(ids);
            continue;
        };
        if crate::mail::deliver(mailer, &realm_url, &email).await {
            tracing::info!(
                "missed-message email sent to user {user} about {} messages",
                ids.len()
            );
            // Recorded at once: the window in which a crash sends it again stays small.
            record(realm, ids).await;
        } else if last_round {
            tracing::error!(
                "missed-message email to user {user} dropped after {MAX_ROUNDS} rounds of tries"
            );
            done.extend(ids);
        } else {
            failed = true;
        }
    }
    record(realm, done).await;
    failed
}

/// Records entries as done (a system write).
async fn record(realm: &RealmHandle, ids: Vec<u64>) {
    if ids.is_empty() {
        return;
    }
    if let Err(e) = realm
        .client
        .commit_system(ids, Realm::decide_missed_mail_done)
        .await
    {
        tracing::warn!("missed-message emails: done not recorded: {}", e.msg);
    }
}

//! What simulated users do: the requests of each scenario, and the per-user state they
//! carry (event queue, last event id, presence update id).

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use clap::ValueEnum;
use rand::Rng;
use serde_json::Value;

use super::client::{Http, Req};
use super::driver::{self, error_label, Answer, Pacing, Recorder};
use super::users::Credential;
use http::header::HeaderValue;

/// `--scenario`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Every user pings its presence every 60 s (÷ `--speedup`) and holds a
    /// long-poll (`POST /register`, then `GET /events`), like a real client.
    Presence,
    /// Zulip's observed mix: 44 % `GET /events`, 36 % presence pings, the rest
    /// reads (`/users/me`, `/realm/presence`, narrowed `/messages`) and message sends.
    Mixed,
    /// Message sends and narrowed message reads, one to three.
    Messages,
    /// Every user registers again at once (`POST /register`, then its first
    /// `GET /events`), round after round.
    ReconnectStorm,
    /// Durable writes only (message sends), to compare `--durability` modes.
    Writes,
    /// `GET /realm/presence` only (the whole realm's presence, legacy format).
    RealmPresence,
    /// Fan-out: every user holds a long-poll for `user_status` events; one user
    /// changes its status text, round after round, and each round measures when the
    /// event reached each poll and the last of them.
    Fanout,
    /// Supported users: simulated users with a real client's mix (a held long-poll, a
    /// presence ping every 60 s ÷ `--speedup`, reads and sends), `--step-users` more
    /// every `--step-duration` until Mattermost's health thresholds fail.
    Capacity,
}

/// The channel the scenarios write to and read from (in the development realm).
pub const CHANNEL: &str = "Verona";

/// The operation a fan-out round's last delivery is recorded as.
pub const FANOUT_LAST: &str = "fan-out: status change to the last poll";
/// The operation each poll's delivery of a round's event is recorded as.
pub const FANOUT_EACH: &str = "fan-out: status change to each poll";

/// The round of the `fanout` scenario under way.
#[derive(Default)]
pub struct Fanout {
    /// The round's number (0: none yet); its status text is `fanout <round>`.
    round: AtomicU64,
    /// When the round's status change was sent.
    sent_at: Mutex<Option<Instant>>,
    /// Polls the round's event reached.
    delivered: AtomicUsize,
    /// Woken when the last poll got it.
    done: tokio::sync::Notify,
    /// `GET /events` requests under way (sent, not answered).
    polling: AtomicUsize,
}

/// One simulated user: credentials and what its client remembers.
pub struct User {
    auth: HeaderValue,
    queue: Mutex<Option<(String, i64)>>,
    presence_update_id: AtomicI64,
}

/// Everything the requests need.
pub struct Env {
    pub http: Http,
    /// `/api/v1`.
    pub api: &'static str,
    pub users: Vec<User>,
    pub recorder: Arc<Recorder>,
    /// Every request goes to the ceiling handler, recorded as the `ceiling` operation.
    pub ceiling: bool,
    /// The scenario (what queues register for, what polls look for).
    pub scenario: Scenario,
    pub fanout: Fanout,
}

impl Env {
    pub fn new(
        http: Http,
        creds: &[Credential],
        recorder: Arc<Recorder>,
        ceiling: bool,
        scenario: Scenario,
    ) -> Env {
        let b64 = base64::engine::general_purpose::STANDARD;
        let users = creds
            .iter()
            .map(|c| User {
                auth: HeaderValue::from_str(&format!(
                    "Basic {}",
                    b64.encode(format!("{}:{}", c.email, c.api_key))
                ))
                .unwrap_or_else(|_| HeaderValue::from_static("")),
                queue: Mutex::new(None),
                presence_update_id: AtomicI64::new(-1),
            })
            .collect();
        Env {
            http,
            api: "/api/v1",
            users,
            recorder,
            ceiling,
            scenario,
            fanout: Fanout::default(),
        }
    }

    fn post(&self, user: usize, path: &str, form: &[(&str, String)]) -> Req {
        Req::post(&format!("{}{path}", self.api), form, &self.users[user].auth)
    }

    fn get(&self, user: usize, path: &str, query: &[(&str, String)]) -> Req {
        Req::get(
            &format!("{}{path}", self.api),
            query,
            &self.users[user].auth,
        )
    }

    fn record(&self, op: &'static str, held: bool, intended: Instant, answer: &Answer) {
        let op = if self.ceiling { "ceiling" } else { op };
        self.recorder
            .record(op, held && !self.ceiling, intended, error_label(answer));
    }

    fn queue(&self, user: usize) -> Option<(String, i64)> {
        self.users[user]
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_queue(&self, user: usize, queue: Option<(String, i64)>) {
        *self.users[user]
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = queue;
    }

    /// `POST /register` for `user`, keeping its queue.
    pub async fn register(&self, user: usize, intended: Instant) {
        let event_types = if self.scenario == Scenario::Fanout {
            r#"["user_status"]"#
        } else {
            r#"["message","presence"]"#
        };
        let form = [
            ("event_types", event_types.to_owned()),
            ("fetch_event_types", r#"["message"]"#.to_owned()),
            ("slim_presence", "true".to_owned()),
        ];
        let answer = self.http.send(self.post(user, "/register", &form)).await;
        self.record("POST /register", false, intended, &answer);
        if let Ok((200, body)) = &answer {
            if let Ok(v) = serde_json::from_slice::<Value>(body) {
                let id = v["queue_id"].as_str().map(str::to_owned);
                let last = v["last_event_id"].as_i64().unwrap_or(-1);
                self.set_queue(user, id.map(|id| (id, last)));
            }
        }
    }

    /// `GET /events` on `user`'s queue: held until an event or a heartbeat unless
    /// `dont_block`. A queue the server no longer knows is registered again.
    pub async fn events(&self, user: usize, dont_block: bool, intended: Instant) {
        let (queue_id, last) = self
            .queue(user)
            .unwrap_or_else(|| ("ceiling".to_owned(), -1));
        let query = [
            ("queue_id", queue_id),
            ("last_event_id", last.to_string()),
            ("dont_block", dont_block.to_string()),
        ];
        self.fanout.polling.fetch_add(1, Ordering::SeqCst);
        let answer = self.http.send(self.get(user, "/events", &query)).await;
        self.fanout.polling.fetch_sub(1, Ordering::SeqCst);
        let op = if dont_block {
            "GET /events"
        } else {
            "GET /events (long-poll)"
        };
        self.record(op, !dont_block, intended, &answer);
        match &answer {
            Ok((200, body)) if !self.ceiling => {
                if let Ok(v) = serde_json::from_slice::<Value>(body) {
                    if self.scenario == Scenario::Fanout {
                        self.fanout_delivered(&v);
                    }
                    let newest = v["events"]
                        .as_array()
                        .and_then(|e| e.iter().filter_map(|e| e["id"].as_i64()).max());
                    if let (Some(newest), Some((q, _))) = (newest, self.queue(user)) {
                        self.set_queue(user, Some((q, newest)));
                    }
                }
            }
            Ok((400, body)) if !self.ceiling => {
                let gone = serde_json::from_slice::<Value>(body)
                    .is_ok_and(|v| v["code"] == "BAD_EVENT_QUEUE_ID");
                if gone {
                    self.register(user, Instant::now()).await;
                }
            }
            _ => {}
        }
    }

    /// A presence ping as Zulip's web client sends it (`slim_presence`, and the
    /// `last_update_id` it knows, so the answer holds only what changed).
    pub async fn ping(&self, user: usize, intended: Instant) {
        let state = &self.users[user].presence_update_id;
        let form = [
            ("status", "active".to_owned()),
            ("new_user_input", "true".to_owned()),
            ("slim_presence", "true".to_owned()),
            ("last_update_id", state.load(Ordering::Relaxed).to_string()),
        ];
        let answer = self
            .http
            .send(self.post(user, "/users/me/presence", &form))
            .await;
        self.record("POST /users/me/presence", false, intended, &answer);
        if let Ok((200, body)) = &answer {
            if let Some(id) = last_update_id(body) {
                state.store(id, Ordering::Relaxed);
            }
        }
    }

    /// Counts a poll's answer that holds the current fan-out round's event.
    fn fanout_delivered(&self, answer: &Value) {
        let round = self.fanout.round.load(Ordering::SeqCst);
        let text = format!("fanout {round}");
        let ours = answer["events"].as_array().is_some_and(|events| {
            events
                .iter()
                .any(|e| e["type"] == "user_status" && e["status_text"] == text.as_str())
        });
        let sent_at = *self
            .fanout
            .sent_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (true, Some(sent_at)) = (ours && round > 0, sent_at) else {
            return;
        };
        self.recorder.record(FANOUT_EACH, false, sent_at, None);
        if self.fanout.delivered.fetch_add(1, Ordering::SeqCst) + 1 == self.users.len() {
            self.recorder.record(FANOUT_LAST, false, sent_at, None);
            self.fanout.done.notify_one();
        }
    }

    pub async fn users_me(&self, user: usize, intended: Instant) {
        let rb = self.get(user, "/users/me", &[]);
        self.simple("GET /users/me", rb, intended).await
    }

    pub async fn realm_presence(&self, user: usize, intended: Instant) {
        let rb = self.get(user, "/realm/presence", &[]);
        self.simple("GET /realm/presence", rb, intended).await
    }

    async fn simple(&self, op: &'static str, rb: Req, intended: Instant) {
        let answer = self.http.send(rb).await;
        self.record(op, false, intended, &answer);
    }

    pub async fn send_message(&self, user: usize, n: u64, intended: Instant) {
        self.send_to(CHANNEL, user, n, intended).await
    }

    /// A message from `user` to `channel`, topic `load <n mod 16>`.
    pub async fn send_to(&self, channel: &str, user: usize, n: u64, intended: Instant) {
        let form = [
            ("type", "stream".to_owned()),
            ("to", channel.to_owned()),
            ("topic", format!("load {}", n % 16)),
            ("content", format!("load message {n} from user {user}")),
        ];
        let rb = self.post(user, "/messages", &form);
        self.simple("POST /messages", rb, intended).await;
    }

    pub async fn read_messages(&self, user: usize, intended: Instant) {
        let narrow = format!(r#"[{{"operator":"channel","operand":"{CHANNEL}"}}]"#);
        let query = [
            ("anchor", "newest".to_owned()),
            ("num_before", "20".to_owned()),
            ("num_after", "0".to_owned()),
            ("narrow", narrow),
        ];
        let rb = self.get(user, "/messages", &query);
        self.simple("GET /messages (narrow)", rb, intended).await;
    }

    /// One request of the `mixed`, `messages` or `writes` mix, by user `user`.
    pub async fn mix_request(&self, scenario: Scenario, user: usize, n: u64, intended: Instant) {
        let roll: u32 = rand::thread_rng().gen_range(0..100);
        match scenario {
            Scenario::Mixed => match roll {
                0..44 => self.events(user, true, intended).await,
                44..80 => self.ping(user, intended).await,
                80..85 => {
                    let rb = self.get(user, "/users/me", &[]);
                    self.simple("GET /users/me", rb, intended).await
                }
                85..88 => {
                    let rb = self.get(user, "/realm/presence", &[]);
                    self.simple("GET /realm/presence", rb, intended).await
                }
                88..94 => self.read_messages(user, intended).await,
                _ => self.send_message(user, n, intended).await,
            },
            Scenario::RealmPresence => {
                let rb = self.get(user, "/realm/presence", &[]);
                self.simple("GET /realm/presence", rb, intended).await
            }
            Scenario::Messages => match roll {
                0..25 => self.send_message(user, n, intended).await,
                _ => self.read_messages(user, intended).await,
            },
            _ => self.send_message(user, n, intended).await,
        }
    }
}

/// Registers every user's queue (`concurrency` at a time) before a run starts; these
/// set-up requests are recorded too, as warm-up unless the run measures them.
pub async fn register_all(env: &Arc<Env>, concurrency: usize) {
    use futures_util::StreamExt;
    futures_util::stream::iter(0..env.users.len())
        .for_each_concurrent(concurrency.max(1), |u| {
            let env = env.clone();
            async move { env.register(u, Instant::now()).await }
        })
        .await;
}

/// Deletes every user's queue (`DELETE /events`, `concurrency` at a time) at the end of
/// a run, as a client does when it closes, so that a run leaves no queues for the
/// server to keep until they time out (10 minutes) and the next run to pay for.
pub async fn delete_all(env: &Arc<Env>, concurrency: usize) {
    use futures_util::StreamExt;
    futures_util::stream::iter(0..env.users.len())
        .for_each_concurrent(concurrency.max(1), |u| {
            let env = env.clone();
            async move {
                if let Some((queue_id, _)) = env.queue(u) {
                    let mut rb = env.post(u, "/events", &[("queue_id", queue_id)]);
                    rb.method = http::Method::DELETE;
                    let _ = env.http.send(rb).await;
                    env.set_queue(u, None);
                }
            }
        })
        .await;
}

/// Every user holds a long-poll until the returned tasks are aborted, user `u` parking
/// its first at `u/N × spread` from now (all at once when `spread` is zero).
pub fn hold_polls(env: &Arc<Env>, spread: Duration) -> Vec<tokio::task::JoinHandle<()>> {
    let n = env.users.len().max(1);
    let start = Instant::now();
    (0..env.users.len())
        .map(|u| {
            let env = env.clone();
            tokio::spawn(async move {
                if !spread.is_zero() {
                    let at = start + spread.mul_f64(u as f64 / n as f64);
                    tokio::time::sleep_until(at.into()).await;
                }
                loop {
                    env.events(u, false, Instant::now()).await;
                }
            })
        })
        .collect()
}

/// The presence schedule: user `u` pings every `period`, first at `start + u/N ×
/// period`, so that pings arrive evenly; each ping is measured from its scheduled time.
pub async fn presence_schedule(env: &Arc<Env>, period: Duration, start: Instant, until: Instant) {
    let n = env.users.len().max(1);
    let tasks: Vec<_> = (0..env.users.len())
        .map(|u| {
            let env = env.clone();
            tokio::spawn(async move {
                let mut at = start + period.mul_f64(u as f64 / n as f64);
                while at < until {
                    tokio::time::sleep_until(at.into()).await;
                    env.ping(u, at).await;
                    at += period;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// Channel messages to `channel`, one every `every` until `until`, the first at a
/// random point of the first period (realms driven at once spread their messages
/// over it rather than all sending at `start + every`), by the users in turn (a
/// realm's share of senders); each is measured from its scheduled time, and the next
/// goes at its own time whether or not the last was answered (open loop).
pub async fn message_schedule(
    env: &Arc<Env>,
    channel: &str,
    every: Duration,
    start: Instant,
    until: Instant,
) {
    let n = env.users.len().max(1) as u64;
    let mut sends = tokio::task::JoinSet::new();
    let mut at = start + every.mul_f64(rand::random::<f64>());
    let mut k: u64 = 0;
    while at < until {
        tokio::time::sleep_until(at.into()).await;
        let (env, channel) = (env.clone(), channel.to_owned());
        // Spread over the realm: user 0, then one a prime stride further on.
        let user = ((k * 7919) % n) as usize;
        sends.spawn(async move { env.send_to(&channel, user, k, at).await });
        k += 1;
        at += every;
        while sends.try_join_next().is_some() {}
    }
    while sends.join_next().await.is_some() {}
}

/// Request loops (`pacing`) over the users in turn, each request from `scenario`'s mix
/// (`presence` sends pings only).
pub async fn paced(
    env: &Arc<Env>,
    scenario: Scenario,
    pacing: Pacing,
    start: Instant,
    until: Instant,
) {
    let connections = pacing.connections().max(1) as u64;
    let env = env.clone();
    driver::run_loops(pacing, start, until, move |c, k, intended| {
        let env = env.clone();
        async move {
            let n = k * connections + c as u64;
            let user = (n % env.users.len().max(1) as u64) as usize;
            if scenario == Scenario::Presence {
                env.ping(user, intended).await
            } else {
                env.mix_request(scenario, user, n, intended).await
            }
        }
    })
    .await;
}

/// `presence_last_update_id` of a ping's answer, read from the answer's tail where
/// hearth writes it, without parsing the `presences` before it (10 000 users'
/// presences are ~670 KB: parsing each whole would make the driver, not the server,
/// the bottleneck). Falls back to parsing the whole answer.
pub fn last_update_id(body: &[u8]) -> Option<i64> {
    const KEY: &[u8] = b"\"presence_last_update_id\":";
    if let Some(at) = memchr::memmem::rfind(body, KEY) {
        let rest = &body[at + KEY.len()..];
        let end = rest
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(rest.len());
        if let Some(id) = std::str::from_utf8(&rest[..end])
            .ok()
            .and_then(|t| t.parse().ok())
        {
            return Some(id);
        }
    }
    serde_json::from_slice::<Value>(body).ok()?["presence_last_update_id"].as_i64()
}

/// Fan-out rounds until `until`: once every user's long-poll is under way (and a
/// moment for them to park), user 0 sets its status text to `fanout <round>`, and the
/// round ends when every poll got the event (or after `timeout`). Each delivery is
/// measured from the moment the change was sent.
pub async fn fanout_rounds(env: &Arc<Env>, until: Instant, settle: Duration, timeout: Duration) {
    let n = env.users.len();
    while Instant::now() < until {
        // Wait for every poll to be sent again after the last round, then let them park.
        let waiting = Instant::now();
        while env.fanout.polling.load(Ordering::SeqCst) < n && waiting.elapsed() < timeout {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(settle).await;
        if Instant::now() >= until {
            break;
        }
        let round = env.fanout.round.load(Ordering::SeqCst) + 1;
        env.fanout.delivered.store(0, Ordering::SeqCst);
        let form = [
            ("status_text", format!("fanout {round}")),
            ("away", "false".to_owned()),
        ];
        let done = env.fanout.done.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let sent_at = Instant::now();
        *env.fanout
            .sent_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(sent_at);
        env.fanout.round.store(round, Ordering::SeqCst);
        let answer = env.http.send(env.post(0, "/users/me/status", &form)).await;
        env.record("POST /users/me/status", false, sent_at, &answer);
        if error_label(&answer).is_some() {
            continue;
        }
        if tokio::time::timeout(timeout, done).await.is_err() {
            let reached = env.fanout.delivered.load(Ordering::SeqCst);
            env.recorder.record(
                FANOUT_LAST,
                false,
                sent_at,
                Some(format!("timeout ({reached} of {n} polls)")),
            );
        }
    }
}

/// Reconnect storms, back to back: every user registers at once (and polls its new
/// queue once); each request is measured from the storm's start.
pub async fn storms(env: &Arc<Env>, until: Instant) {
    loop {
        let start = Instant::now();
        if start >= until {
            break;
        }
        let tasks: Vec<_> = (0..env.users.len())
            .map(|u| {
                let env = env.clone();
                tokio::spawn(async move {
                    env.register(u, start).await;
                    env.events(u, true, start).await;
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::last_update_id;

    #[test]
    fn last_update_id_is_read_from_the_tail() {
        let body = br#"{"result":"success","msg":"","presences":{"8":{"active_timestamp":1,"idle_timestamp":2}},"server_timestamp":1.5,"presence_last_update_id":1234}"#;
        assert_eq!(last_update_id(body), Some(1234));
        let none = br#"{"result":"success","msg":"","presences":{},"presence_last_update_id":-1}"#;
        assert_eq!(last_update_id(none), Some(-1));
        // Another key order still parses (the whole answer, then).
        let other = br#"{"presence_last_update_id": 7, "presences":{}}"#;
        assert_eq!(last_update_id(other), Some(7));
        assert_eq!(last_update_id(b"{}"), None);
    }
}

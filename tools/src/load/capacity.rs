//! `--scenario capacity`: simulated Zulip users with a real client's mix, added in
//! steps until the server fails Mattermost's health thresholds; the answer is the
//! largest user count that was healthy.
//!
//! Each user arrives in its step's first quarter, registers an event queue, holds a
//! long-poll on it from then on, pings its presence when it arrives, then (from a random
//! point of the first period, so that the users' pings are spread as real users' are)
//! every 60 s (Zulip's web client's interval), and reads and sends at the rates of the `mixed` scenario's observed mix
//! anchored on that ping: pings are 36 % of the mix, so a user makes ≈ 0.046 requests
//! a second, of which sends and narrowed reads are 6 % each (one every 6 min),
//! `GET /users/me` 5 % (every 7.2 min), `GET /realm/presence` 3 % (every 12 min); the
//! mix's 44 % of `GET /events` are the held long-poll's answers and new polls. Sends
//! and reads come at random (exponential gaps with those means); `--speedup` divides
//! every period, for quick runs.
//!
//! A step is healthy when its answers (held long-polls left out of the latencies)
//! average under 100 ms, their p99 is under 2 s, and errors and timeouts (long-polls
//! included) are under 0.025 % of requests: Mattermost's thresholds for its
//! supported-users tests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::Rng;

use super::driver::OpStats;
use super::report::{self, Step};
use super::scenarios::Env;
use super::LoadArgs;

/// Mattermost's thresholds.
pub const MAX_MEAN_MS: f64 = 100.0;
pub const MAX_P99_MS: f64 = 2000.0;
pub const MAX_ERROR_PERCENT: f64 = 0.025;

/// What one user does, per 60 s of presence period: the mean gap between requests of
/// each kind, in pings (a ping every period).
const SEND_EVERY: f64 = 6.0;
const READ_EVERY: f64 = 6.0;
const ME_EVERY: f64 = 7.2;
const REALM_PRESENCE_EVERY: f64 = 12.0;

/// A capacity run's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub max_users: usize,
    pub step_users: usize,
    pub step: Duration,
    /// The presence period (60 s ÷ speedup); the other periods are multiples of it.
    pub period: Duration,
}

impl Plan {
    pub fn of(args: &LoadArgs) -> Plan {
        Plan {
            max_users: args.users,
            step_users: args.step_users.max(1),
            step: args.step_duration,
            period: Duration::from_secs_f64(60.0 / args.speedup),
        }
    }

    pub fn text(&self) -> String {
        let p = self.period.as_secs_f64();
        format!(
            "steps of {} users every {} up to {}; per user a held long-poll, a ping every {:.1} s, a send every {:.0} s and a narrowed read every {:.0} s on average, GET /users/me every {:.0} s, GET /realm/presence every {:.0} s",
            self.step_users,
            humantime::format_duration(self.step),
            self.max_users,
            p,
            p * SEND_EVERY,
            p * READ_EVERY,
            p * ME_EVERY,
            p * REALM_PRESENCE_EVERY
        )
    }
}

/// An exponential gap of mean `mean`.
fn gap(mean: Duration) -> Duration {
    let u: f64 = rand::thread_rng().gen_range(f64::EPSILON..1.0);
    mean.mul_f64(-u.ln())
}

/// One user's life from `arrive` on (until aborted).
async fn user(env: Arc<Env>, u: usize, plan: Plan, arrive: Instant) {
    tokio::time::sleep_until(arrive.into()).await;
    env.register(u, Instant::now()).await;
    let poll = {
        let env = env.clone();
        tokio::spawn(async move {
            loop {
                env.events(u, false, Instant::now()).await;
            }
        })
    };
    let _abort_poll = AbortOnDrop(poll);
    let p = plan.period;
    let means = [
        p,
        p.mul_f64(SEND_EVERY),
        p.mul_f64(READ_EVERY),
        p.mul_f64(ME_EVERY),
        p.mul_f64(REALM_PRESENCE_EVERY),
    ];
    let now = Instant::now();
    let first_ping = now;
    let mut next = [
        now,
        now + gap(means[1]),
        now + gap(means[2]),
        now + gap(means[3]),
        now + gap(means[4]),
    ];
    let mut n = 0u64;
    loop {
        let (k, at) = next
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|(_, at)| *at)
            .unwrap_or((0, now));
        tokio::time::sleep_until(at.into()).await;
        match k {
            0 => env.ping(u, at).await,
            1 => env.send_message(u, n, at).await,
            2 => env.read_messages(u, at).await,
            3 => env.users_me(u, at).await,
            _ => env.realm_presence(u, at).await,
        }
        n += 1;
        // Pings keep their period, from a random point of the first one on (a client
        // pings when it starts, then every period; real users do not all start in the
        // same quarter of a step, so their pings are spread); the others come at random.
        next[k] = match k {
            0 if at == first_ping => {
                at + p.mul_f64(rand::thread_rng().gen_range(f64::EPSILON..1.0))
            }
            0 => at + means[0],
            _ => at + gap(means[k]),
        };
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs the steps; each step's figures, the last one unhealthy unless every user fit.
pub async fn run(env: &Arc<Env>, plan: &Plan, bar: &indicatif::ProgressBar) -> Vec<Step> {
    let mut tasks = Vec::new();
    let mut steps = Vec::new();
    let mut users = 0;
    let max = plan.max_users.min(env.users.len());
    while users < max {
        let start = Instant::now();
        let new = plan.step_users.min(max - users);
        for i in 0..new {
            let arrive = start + (plan.step / 4).mul_f64(i as f64 / new as f64);
            tasks.push(AbortOnDrop(tokio::spawn(user(
                env.clone(),
                users + i,
                plan.clone(),
                arrive,
            ))));
        }
        users += new;
        bar.set_message(format!("capacity: {users} users"));
        // The step's window starts now.
        env.recorder.take();
        tokio::time::sleep_until((start + plan.step).into()).await;
        let stats = env.recorder.take();
        let step = step_of(users, &stats, start.elapsed());
        tracing::info!(
            "capacity: {users} users: mean {:.1} ms, p99 {:.1} ms, errors {:.4} %: {}",
            step.mean_ms,
            step.p99_ms,
            step.error_rate_percent,
            if step.healthy { "healthy" } else { "unhealthy" }
        );
        let healthy = step.healthy;
        steps.push(step);
        if !healthy {
            break;
        }
    }
    drop(tasks);
    steps
}

/// A step's figures and verdict.
pub fn step_of(users: usize, stats: &BTreeMap<&'static str, OpStats>, took: Duration) -> Step {
    let mut merged: Option<Histogram<u64>> = None;
    for s in stats.values().filter(|s| !s.held) {
        match &mut merged {
            Some(m) => {
                let _ = m.add(&s.hist);
            }
            None => merged = Some(s.hist.clone()),
        }
    }
    let (mean_ms, p99_ms, answered) = merged.map_or((0.0, 0.0, 0), |h| {
        (
            h.mean() / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            h.len(),
        )
    });
    let requests: u64 = stats.values().map(|s| s.count).sum();
    let errors: u64 = stats.values().map(|s| s.error_count()).sum();
    let error_rate_percent = 100.0 * errors as f64 / requests.max(1) as f64;
    let mut failures = Vec::new();
    if answered == 0 {
        failures.push("no request answered".to_owned());
    }
    if mean_ms >= MAX_MEAN_MS {
        failures.push(format!("mean {mean_ms:.1} ms ≥ {MAX_MEAN_MS} ms"));
    }
    if p99_ms >= MAX_P99_MS {
        failures.push(format!("p99 {p99_ms:.1} ms ≥ {MAX_P99_MS} ms"));
    }
    if error_rate_percent >= MAX_ERROR_PERCENT {
        failures.push(format!(
            "errors and timeouts {error_rate_percent:.4} % ≥ {MAX_ERROR_PERCENT} %"
        ));
    }
    let mut ops: Vec<_> = stats
        .iter()
        .map(|(op, s)| report::op_report(op, s, took))
        .collect();
    ops.sort_by(|a, b| a.op.cmp(&b.op));
    Step {
        users,
        requests,
        errors,
        error_rate_percent,
        mean_ms,
        p99_ms,
        req_per_s: requests as f64 / took.as_secs_f64().max(1e-9),
        healthy: failures.is_empty(),
        failures,
        ops,
    }
}

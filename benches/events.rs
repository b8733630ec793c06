//! Event fan-out: 10 000 parked long-polls in one realm.
//!
//! - `publish/N`: CPU time the publishing (realm actor) thread spends to publish one
//!   event while N polls are parked. Thread CPU time, not wall time: on a small machine
//!   the woken pollers preempt the publisher, which says nothing about its own cost.
//!   It should not grow with N: the actor appends to a log and hands the new end to the
//!   waker thread.
//! - `wake_all/N`: from publish until all N parked polls have answered (the work the
//!   HTTP workers do, in parallel with the actor).
//! - The resident memory added by N parked polls is printed once per N.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use hearth::hub::{EventHub, QueueOptions};
use hearth::realm::events::{Audience, Event};
use hearth::realm::SystemClock;
use serde_json::json;

const SIZES: [usize; 3] = [0, 1_000, 10_000];

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4)
}

fn event() -> Vec<Event> {
    vec![Event::new(
        json!({"type": "realm_user", "op": "update", "person": {"user_id": 1}}),
        Audience::Everyone,
    )]
}

struct Parked {
    hub: Arc<EventHub>,
    queues: Vec<(u64, String)>,
    acked: Vec<i64>,
}

impl Parked {
    fn new(n: usize) -> Self {
        let realm = hearth::realm::dev::dev_realm_changes(&mut hearth::realm::Cx::seeded(0, 1))
            .ok()
            .and_then(|c| hearth::realm::Realm::from_first_change(&c[0]))
            .expect("a realm");
        let hub = Arc::new(EventHub::new(Arc::new(SystemClock), Arc::new(realm)));
        let queues = (0..n as u64)
            .map(|u| (u, hub.register(u, QueueOptions::default()).0))
            .collect();
        Parked {
            hub,
            queues,
            acked: vec![-1; n],
        }
    }

    /// Parks one poll per queue; returns their handles once all are waiting.
    async fn park(&self) -> Vec<tokio::task::JoinHandle<usize>> {
        let handles: Vec<_> = self
            .queues
            .iter()
            .zip(&self.acked)
            .map(|((user, q), last)| {
                let (hub, q, user, last) = (self.hub.clone(), q.clone(), *user, *last);
                tokio::spawn(async move {
                    hub.get_events(user, &q, Some(last), false)
                        .await
                        .unwrap()
                        .len()
                })
            })
            .collect();
        // Measure only once every poll waits.
        while self.hub.parked_polls() < self.queues.len() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        handles
    }
}

fn fan_out(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("events");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    for n in SIZES {
        let mut parked = Parked::new(n);
        let before = rss_kib();
        let handles = rt.block_on(parked.park());
        println!(
            "events: {n} parked polls add {} KiB resident",
            rss_kib().saturating_sub(before)
        );
        rt.block_on(async {
            parked.hub.publish(event());
            for h in handles {
                assert_eq!(h.await.unwrap(), 1);
            }
        });
        parked.acked.iter_mut().for_each(|a| *a += 1);

        group.bench_with_input(BenchmarkId::new("publish", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let handles = rt.block_on(parked.park());
                    let start = cpu_time::ThreadTime::now();
                    parked.hub.publish(event());
                    total += start.elapsed();
                    rt.block_on(async {
                        for h in handles {
                            h.await.unwrap();
                        }
                    });
                    parked.acked.iter_mut().for_each(|a| *a += 1);
                }
                total
            })
        });
        group.bench_with_input(BenchmarkId::new("wake_all", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let handles = rt.block_on(parked.park());
                    let start = Instant::now();
                    rt.block_on(async {
                        parked.hub.publish(event());
                        for h in handles {
                            h.await.unwrap();
                        }
                    });
                    total += start.elapsed();
                    parked.acked.iter_mut().for_each(|a| *a += 1);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, fan_out);
criterion_main!(benches);

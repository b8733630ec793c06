//! Long-poll load harness: parks N real HTTP long-polls on a running hearth, reports the
//! server's resident memory, then makes one change and times until every poll answered.
//!
//! ```sh
//! cargo run --release -- serve --dev --durability never --data /tmp/load &   # the server
//! cargo run --release --example longpoll_load -- http://127.0.0.1:9991 10000 $(pgrep -n hearth)
//! ```
//!
//! Arguments: site URL, number of polls (default 10000), the server's pid (optional, to
//! read its memory from /proc). Traffic goes only to the given site; every request is
//! bounded by a timeout and the run stops by itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use serde_json::Value;

fn rss_kib(pid: Option<&str>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

async fn api_key(client: &reqwest::Client, site: &str, email: &str) -> String {
    let body: Value = client
        .post(format!("{site}/api/v1/dev_fetch_api_key"))
        .form(&[("username", email)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["api_key"]
        .as_str()
        .expect("a development server")
        .to_owned()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let site = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:9991".into());
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let pid = args.get(3).map(String::as_str);
    let timeout = Duration::from_secs(120);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .timeout(timeout)
        .build()
        .unwrap();
    let member = api_key(&client, &site, "hamlet@zulip.com").await;
    let admin = api_key(&client, &site, "iago@zulip.com").await;

    let rss_before = rss_kib(pid);
    let started = Instant::now();
    let mut queues = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let regs = chunk.iter().map(|_| {
            let (client, site, key) = (client.clone(), site.clone(), member.clone());
            tokio::spawn(async move {
                let body: Value = client
                    .post(format!("{site}/api/v1/register"))
                    .basic_auth("hamlet@zulip.com", Some(key))
                    .form(&[
                        ("event_types", r#"["realm_user"]"#),
                        ("fetch_event_types", r#"["message"]"#),
                    ])
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                body["queue_id"].as_str().unwrap().to_owned()
            })
        });
        for r in futures_util::future::join_all(regs).await {
            queues.push(r.unwrap());
        }
    }
    println!("registered {n} queues in {:?}", started.elapsed());
    let rss_queues = rss_kib(pid);

    let polls: Vec<_> = queues
        .into_iter()
        .map(|q| {
            let (client, site, key) = (client.clone(), site.clone(), member.clone());
            tokio::spawn(async move {
                let resp = client
                    .get(format!("{site}/api/v1/events"))
                    .basic_auth("hamlet@zulip.com", Some(key))
                    .query(&[("queue_id", q.as_str()), ("last_event_id", "-1")])
                    .send()
                    .await
                    .unwrap();
                let body: Value = resp.json().await.unwrap();
                let done = Instant::now();
                (body["events"].as_array().map_or(0, Vec::len), done)
            })
        })
        .collect();
    // Let every poll reach the server and park.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_parked = rss_kib(pid);

    let email = format!("load-{}@zulip.com", std::process::id());
    let fired = Instant::now();
    let created = client
        .post(format!("{site}/api/v1/users"))
        .basic_auth("iago@zulip.com", Some(admin))
        .form(&[
            ("email", email.as_str()),
            ("password", "abcd1234"),
            ("full_name", "Load"),
        ])
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "creating the user failed");
    let mut last = fired;
    let mut delivered = 0;
    for p in polls {
        let (events, done) = p.await.unwrap();
        delivered += usize::from(events > 0);
        last = last.max(done);
    }
    println!(
        "{delivered}/{n} polls answered with the event; last answer {:?} after the change",
        last - fired
    );
    if let (Some(a), Some(b), Some(c)) = (rss_before, rss_queues, rss_parked) {
        println!(
            "server resident memory: {a} KiB before, {b} KiB with {n} queues (+{} KiB), {c} KiB with {n} parked polls (+{} KiB)",
            b.saturating_sub(a),
            c.saturating_sub(b)
        );
    }
}

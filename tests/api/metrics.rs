//! `GET /metrics` on its own listener: Prometheus text format that a Prometheus parser
//! reads, with the request, WAL, presence, queue and memory metrics, and no user data.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::common::*;

fn scrape(text: &str) -> HashMap<String, Vec<prometheus_parse::Sample>> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text format");
    let mut by_name: HashMap<String, Vec<prometheus_parse::Sample>> = HashMap::new();
    for s in scrape.samples {
        by_name.entry(s.metric.clone()).or_default().push(s);
    }
    by_name
}

fn counter(samples: &[prometheus_parse::Sample]) -> f64 {
    samples
        .iter()
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

#[actix_web::test]
async fn metrics_parse_and_count_requests_flushes_pings_and_queues() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| {
        c.durability = hearth::config::DurabilityArg::Always;
        c.metrics_bind = hearth::config::MetricsBind(Some(SocketAddr::from(([127, 0, 0, 1], 0))));
    })
    .await;
    let url = app.server().metrics_url().expect("metrics listener");
    // The API port does not serve metrics.
    let api = reqwest::get(format!("{}/metrics", app.url)).await.unwrap();
    assert_eq!(api.status(), 404);

    app.ok(
        "POST",
        "/api/v1/users/me/presence",
        "hamlet@zulip.com",
        &[("status", "active")],
    )
    .await;
    app.ok(
        "POST",
        "/api/v1/messages",
        "hamlet@zulip.com",
        &[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "metrics"),
            ("content", "hello"),
        ],
    )
    .await;
    let _queue = app.register("iago@zulip.com", &[]).await;

    let res = reqwest::get(&url).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = res.text().await.unwrap();
    let m = scrape(&text);

    let requests = &m["hearth_http_requests_total"];
    let presence = requests
        .iter()
        .find(|s| {
            s.labels.get("route") == Some("/api/v1/users/me/presence")
                && s.labels.get("method") == Some("POST")
                && s.labels.get("status") == Some("200")
        })
        .expect("the presence ping is counted by route and status");
    assert!(counter(std::slice::from_ref(presence)) >= 1.0);
    assert!(
        m.contains_key("hearth_http_request_duration_seconds_bucket")
            || m.contains_key("hearth_http_request_duration_seconds")
    );
    assert!(
        counter(&m["hearth_wal_flushes_total"]) >= 1.0,
        "the write was flushed"
    );
    assert!(
        m.contains_key("hearth_wal_flush_duration_seconds_count")
            || m.contains_key("hearth_wal_flush_duration_seconds")
    );
    assert!(counter(&m["hearth_presence_pings_total"]) >= 1.0);
    let queues = m["hearth_event_queues"]
        .iter()
        .find(|s| s.labels.get("realm") == Some("zulip"))
        .expect("queues per realm");
    assert!(counter(std::slice::from_ref(queues)) >= 1.0);
    assert!(m.contains_key("hearth_parked_long_polls"));
    assert!(m.contains_key("hearth_actor_mailbox_depth"));
    assert!(counter(&m["hearth_resident_memory_bytes"]) > 0.0);
    assert_eq!(counter(&m["hearth_storage_failed"]), 0.0);
    // No user data: no email, no API key, no message content.
    assert!(!text.contains("@zulip.com") && !text.contains("hello"));
}

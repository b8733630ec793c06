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

/// The value of one `hearth_http_requests_total` series (0 when absent), read from the
/// text itself: `prometheus_parse` drops samples whose label values hold braces, as
/// route patterns with parameters (`/api/v1/users/{user}`) do.
fn requests_of(text: &str, route: &str, method: &str, status: &str) -> f64 {
    let wanted = [
        format!("route=\"{route}\""),
        format!("method=\"{method}\""),
        format!("status=\"{status}\""),
    ];
    text.lines()
        .filter_map(|line| line.strip_prefix("hearth_http_requests_total{"))
        .filter_map(|rest| rest.rsplit_once("} "))
        .filter(|(labels, _)| {
            let labels: Vec<&str> = labels.split(',').collect();
            wanted.iter().all(|w| labels.contains(&w.as_str()))
        })
        .map(|(_, value)| value.trim().parse::<f64>().expect("a counter's value"))
        .sum()
}

/// A path that is its own route pattern is counted through the counters each worker
/// keeps for it (`middleware::metrics::record_answer`): every request once, under its
/// own method and status, even when the same path was answered before with another
/// method or status; a path with parameters is counted under its pattern.
#[actix_web::test]
async fn every_request_is_counted_once_under_its_route_method_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| {
        c.metrics_bind = hearth::config::MetricsBind(Some(SocketAddr::from(([127, 0, 0, 1], 0))));
    })
    .await;
    let url = app.server().metrics_url().expect("metrics listener");
    let text = || async { reqwest::get(&url).await.unwrap().text().await.unwrap() };
    let path = "/api/v1/users/me/alert_words";
    // Metrics are the process's: other tests count too, so the series this test alone
    // makes (a method the path does not take) are compared exactly, the others at least.
    let iago = format!("/api/v1/users/{}", app.user_id("iago@zulip.com").await);
    let before = text().await;
    for _ in 0..3 {
        app.ok("GET", path, "hamlet@zulip.com", &[]).await;
        let (status, _) = app.call("PUT", path, "hamlet@zulip.com", &[]).await;
        assert_eq!(status, 405);
    }
    let (status, _) = app.call("PUT", path, "hamlet@zulip.com", &[]).await;
    assert_eq!(status, 405);
    // The same path and method with another status.
    for _ in 0..2 {
        let (status, ..) = app.get(path, Auth::None, &[]).await;
        assert_eq!(status.as_u16(), 401);
    }
    app.ok("GET", &iago, "hamlet@zulip.com", &[]).await;
    let after = text().await;
    let delta = |route: &str, method: &str, status: &str| {
        requests_of(&after, route, method, status) - requests_of(&before, route, method, status)
    };
    assert_eq!(delta(path, "PUT", "405"), 4.0, "each refused PUT once");
    assert!(delta(path, "GET", "200") >= 3.0, "each GET");
    assert!(
        delta(path, "GET", "401") >= 2.0,
        "each GET without credentials"
    );
    assert!(delta("/api/v1/users/{user}", "GET", "200") >= 1.0);
    assert_eq!(
        requests_of(&after, &iago, "GET", "200"),
        0.0,
        "a path with parameters is labelled by its pattern"
    );
}

/// A method is a label only when it is one of HTTP's standard methods; any other is
/// `other`. actix-http takes any token as a method: before, each became a counter and
/// a 21-bucket histogram for good, so a client grew `/metrics` and the memory at will.
#[actix_web::test]
async fn a_method_outside_the_standard_set_is_one_label() {
    let dir = tempfile::tempdir().unwrap();
    let app = TestApp::spawn_configured(dir, |c| {
        c.metrics_bind = hearth::config::MetricsBind(Some(SocketAddr::from(([127, 0, 0, 1], 0))));
    })
    .await;
    let url = app.server().metrics_url().expect("metrics listener");
    let text = || async { reqwest::get(&url).await.unwrap().text().await.unwrap() };
    let path = "/api/v1/users/me";
    let before = text().await;
    let mut sent = Vec::new();
    for i in 0..20 {
        let name = format!("X{i:02}{}", "M".repeat(4000));
        let method = reqwest::Method::from_bytes(name.as_bytes()).unwrap();
        let r = send(app.request(method, path, Auth::None)).await;
        assert!(r.0.is_client_error(), "{:?}", r.0);
        sent.push((name, r.0.as_str().to_owned()));
    }
    let after = text().await;
    for (name, _) in &sent {
        assert!(!after.contains(&name[..40]), "a method became a label");
    }
    let status = &sent[0].1;
    let delta =
        requests_of(&after, path, "other", status) - requests_of(&before, path, "other", status);
    assert_eq!(delta, 20.0, "each under `other`");
    // Twenty methods of 4 KB each would have added over 80 KB per series.
    assert!(
        after.len() < before.len() + 16 * 1024,
        "{} -> {} bytes",
        before.len(),
        after.len()
    );
}

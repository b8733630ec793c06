//! gzip answers: large JSON goes out compressed to clients whose `Accept-Encoding` takes
//! gzip, decodes to the same JSON as the plain answer, says `Vary: Accept-Encoding`;
//! small answers and clients that do not take gzip get plain bodies; presence listings
//! (shared, compressed once) decode to what the plain answer says; long-polls answer
//! as before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::time::Duration;

use crate::common::*;
use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, VARY};
use reqwest::Method;
use serde_json::Value;

/// Status, `Content-Encoding`, `Vary` and the body as sent (not decoded).
async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    email: &str,
    accept: Option<&str>,
    params: &[(&str, &str)],
) -> (u16, Option<String>, String, Vec<u8>) {
    let key = app.api_key(email).await;
    let mut rb = app.request(method.clone(), path, Auth::Basic(email, &key));
    rb = if method == Method::GET {
        rb.query(params)
    } else {
        rb.form(params)
    };
    if let Some(accept) = accept {
        rb = rb.header(ACCEPT_ENCODING, accept);
    }
    let resp = rb.send().await.expect("sent");
    let header = |name| {
        resp.headers()
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let encoding = header(CONTENT_ENCODING).first().cloned();
    let vary = header(VARY).join(", ");
    let status = resp.status().as_u16();
    (status, encoding, vary, resp.bytes().await.unwrap().to_vec())
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("a valid gzip body");
    out
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON")
}

#[actix_web::test]
async fn large_answers_are_gzip_for_clients_that_take_it_and_decode_to_the_same_json() {
    let app = TestApp::spawn().await;
    let (status, encoding, vary, plain) =
        raw(&app, Method::GET, "/api/v1/users", IAGO, None, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(encoding, None, "no Accept-Encoding, no gzip");
    assert!(plain.len() as u64 >= 1024, "{} bytes", plain.len());
    assert!(
        vary.to_ascii_lowercase().contains("accept-encoding"),
        "{vary}"
    );

    for accept in [
        "gzip",
        "gzip, deflate",
        "deflate, gzip;q=0.9, br;q=0.1",
        "*",
    ] {
        let (status, encoding, vary, body) =
            raw(&app, Method::GET, "/api/v1/users", IAGO, Some(accept), &[]).await;
        assert_eq!(status, 200);
        if accept == "*" {
            // Any coding is acceptable: the plain body is.
            assert_eq!(encoding, None, "{accept}");
            assert_eq!(json(&body), json(&plain));
            continue;
        }
        assert_eq!(encoding.as_deref(), Some("gzip"), "{accept}");
        assert!(
            vary.to_ascii_lowercase().contains("accept-encoding"),
            "{vary}"
        );
        assert!(
            body.len() < plain.len() / 3,
            "{} of {}",
            body.len(),
            plain.len()
        );
        assert_eq!(json(&gunzip(&body)), json(&plain), "{accept}");
    }

    // `POST /register` (queue ids differ: compare the rest).
    let (_, encoding, _, body) = raw(
        &app,
        Method::POST,
        "/api/v1/register",
        IAGO,
        Some("gzip"),
        &[],
    )
    .await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    let mut zipped = json(&gunzip(&body));
    let (_, _, _, body) = raw(&app, Method::POST, "/api/v1/register", IAGO, None, &[]).await;
    let mut plain = json(&body);
    for state in [&mut zipped, &mut plain] {
        let m = state.as_object_mut().unwrap();
        m.remove("queue_id");
        m.remove("server_timestamp");
    }
    assert_eq!(zipped, plain);
}

#[actix_web::test]
async fn no_gzip_when_not_accepted_nor_for_small_answers() {
    let app = TestApp::spawn().await;
    for accept in ["identity", "gzip;q=0", "br", "gzip;q=0, identity"] {
        let (status, encoding, _, body) =
            raw(&app, Method::GET, "/api/v1/users", IAGO, Some(accept), &[]).await;
        assert_eq!(status, 200, "{accept}");
        assert_eq!(encoding, None, "{accept}");
        assert_eq!(json(&body)["result"], "success");
    }
    // A small answer, and a small error, are sent as they are.
    let (status, encoding, vary, body) = raw(
        &app,
        Method::GET,
        "/api/v1/users/me",
        HAMLET,
        Some("gzip"),
        &[],
    )
    .await;
    assert_eq!((status, encoding), (200, None));
    assert!(body.len() < 1024, "{}", body.len());
    assert!(
        !vary.to_ascii_lowercase().contains("accept-encoding"),
        "{vary}"
    );
    let (status, encoding, _, body) = raw(
        &app,
        Method::GET,
        "/api/v1/users/99999",
        HAMLET,
        Some("gzip"),
        &[],
    )
    .await;
    assert_eq!((status, encoding), (400, None));
    assert_eq!(json(&body)["code"], "BAD_REQUEST");
}

/// The presences of a presence answer, compressed and not.
async fn presences_both_ways(
    app: &TestApp,
    method: Method,
    path: &str,
    params: &[(&str, &str)],
) -> (Value, Value) {
    let (status, encoding, vary, body) =
        raw(app, method.clone(), path, IAGO, Some("gzip"), params).await;
    assert_eq!(status, 200);
    let zipped = if encoding.as_deref() == Some("gzip") {
        assert!(
            vary.to_ascii_lowercase().contains("accept-encoding"),
            "{vary}"
        );
        json(&gunzip(&body))
    } else {
        // Below the threshold: plain.
        assert!(body.len() < 1024, "{} bytes not compressed", body.len());
        json(&body)
    };
    let (_, encoding, _, body) = raw(app, method, path, IAGO, None, params).await;
    assert_eq!(encoding, None);
    let plain = json(&body);
    assert_eq!(zipped["result"], "success", "{zipped}");
    assert_eq!(
        zipped["presence_last_update_id"],
        plain["presence_last_update_id"]
    );
    (zipped["presences"].clone(), plain["presences"].clone())
}

#[actix_web::test]
async fn presence_listings_decode_to_the_plain_listing() {
    let app = TestApp::spawn().await;
    // Enough users present that the listings are compressed.
    let mut emails = vec![IAGO.to_owned(), HAMLET.to_owned()];
    for i in 0..40 {
        let email = format!("present{i}@zulip.com");
        app.create_user(&email, "a long passphrase 1", &format!("Present {i}"))
            .await;
        emails.push(email);
    }
    for email in &emails {
        app.ok(
            "POST",
            "/api/v1/users/me/presence",
            email,
            &[("status", "active"), ("ping_only", "true")],
        )
        .await;
    }
    // The cached full listing, twice (the second answer sends the kept copy).
    for _ in 0..2 {
        let (zipped, plain) =
            presences_both_ways(&app, Method::GET, "/api/v1/realm/presence", &[]).await;
        assert_eq!(zipped, plain);
        assert!(plain.as_object().unwrap().len() >= emails.len(), "{plain}");
    }
    // A ping's answer: the full modern listing, then what changed since an update id
    // (the chunks of the index of changes).
    for last_update_id in ["-1", "0", "5", "30"] {
        let params = [
            ("status", "active"),
            ("slim_presence", "true"),
            ("last_update_id", last_update_id),
        ];
        let (zipped, plain) =
            presences_both_ways(&app, Method::POST, "/api/v1/users/me/presence", &params).await;
        assert_eq!(zipped, plain, "last_update_id {last_update_id}");
    }
}

#[actix_web::test]
async fn a_long_poll_that_takes_gzip_answers_when_its_event_comes() {
    let app = TestApp::spawn().await;
    let queue = app
        .register(HAMLET, &[("event_types", r#"["message"]"#)])
        .await;
    let key = app.api_key(HAMLET).await;
    let poll = app
        .request(Method::GET, "/api/v1/events", Auth::Basic(HAMLET, &key))
        .header(ACCEPT_ENCODING, "gzip")
        .query(&[("queue_id", queue.as_str()), ("last_event_id", "-1")])
        .send();
    let poll = actix_web::rt::spawn(poll);
    // Parked, then a message long enough to make the answer compressible.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let content = "a long message ".repeat(100);
    send_stream(&app, IAGO, "Verona", "gzip", &content).await;
    let resp = tokio::time::timeout(Duration::from_secs(20), poll)
        .await
        .expect("the poll answered")
        .unwrap()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let zipped = resp.headers().get(CONTENT_ENCODING).cloned();
    let bytes = resp.bytes().await.unwrap();
    let body = match zipped {
        Some(v) if v == "gzip" => json(&gunzip(&bytes)),
        other => panic!("an answer of {} bytes arrived as {other:?}", bytes.len()),
    };
    let events = body["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{body}");
    let rendered = events[0]["message"]["content"].as_str().unwrap();
    assert!(rendered.contains(content.trim()), "{rendered}");
}

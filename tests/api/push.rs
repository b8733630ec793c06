//! Mobile push: FCM and APNs tokens (seed 4.17, 4.18; recordings 19*), and E2EE push
//! devices and test notifications (seed 4.22; recordings 20*) against a real HTTP relay
//! on loopback that answers as told: registration, each of the test notification's
//! errors (NO_ACTIVE_PUSH_DEVICE, ADMIN_ACTION_REQUIRED, FAILED_TO_CONNECT_BOUNCER,
//! INTERNAL_SERVER_ERROR_ON_BOUNCER) and success, events, restarts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::*;
use base64::Engine;
use serde_json::{json, Value};

const APNS: &str = "/api/v1/users/me/apns_device_token";
const FCM: &str = "/api/v1/users/me/android_gcm_reg_id";
const REGISTER: &str = "/api/v1/mobile_push/register";
const TEST: &str = "/api/v1/mobile_push/e2ee/test_notification";
const NO_DEVICE: &str = "No active registered push device";

/// hearth with this relay.
async fn spawn_with_relay(url: &str) -> TestApp {
    let url = url.to_owned();
    TestApp::spawn_configured(tempfile::tempdir().unwrap(), move |c| {
        c.push_relay_url = Some(url.clone())
    })
    .await
}

/// A secretbox push key: the cryptosystem byte 0x31, then 32 bytes.
fn push_key(byte: u8) -> (Vec<u8>, String) {
    let key = vec![byte; 32];
    let mut raw = vec![0x31];
    raw.extend(&key);
    (key, base64::engine::general_purpose::STANDARD.encode(raw))
}

fn registration(account: &str, key: &str) -> Vec<(&'static str, String)> {
    vec![
        ("token_kind", "fcm".into()),
        ("push_account_id", account.into()),
        ("push_key", key.into()),
        ("bouncer_public_key", "bouncer-public-key".into()),
        (
            "encrypted_push_registration",
            "encrypted-push-registration-data".into(),
        ),
    ]
}

fn pairs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, x)| (*k, x.as_str())).collect()
}

/// The user's `push_devices`, from `/register`.
async fn push_devices(s: &TestApp, who: &str) -> Value {
    let body = s
        .ok(
            "POST",
            "/api/v1/register",
            who,
            &[("fetch_event_types", r#"["push_device"]"#)],
        )
        .await;
    body["push_devices"].clone()
}

/// Waits until the device of `account` has `status`.
async fn wait_status(s: &TestApp, account: &str, status: &str) -> Value {
    poll(Duration::from_secs(20), status, || async move {
        let devices = push_devices(s, HAMLET).await;
        (devices[account]["status"] == status).then_some(devices)
    })
    .await
}

#[actix_web::test]
async fn test_notifications_through_the_relay() {
    let (url, relay, handle) = start_relay();
    let mut s = spawn_with_relay(&url).await;
    // Recordings 20 and 20b: no device yet.
    for params in [vec![], vec![("push_account_id", "12345")]] {
        s.err(
            "POST",
            TEST,
            HAMLET,
            &params,
            400,
            "NO_ACTIVE_PUSH_DEVICE",
            NO_DEVICE,
        )
        .await;
    }
    let q = s
        .register(HAMLET, &[("event_types", r#"["push_device"]"#)])
        .await;
    let (key, encoded) = push_key(7);
    let body = s
        .ok(
            "POST",
            REGISTER,
            HAMLET,
            &pairs(&registration("111222", &encoded)),
        )
        .await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    let devices = wait_status(&s, "111222", "active").await;
    assert_eq!(
        devices,
        json!({"111222": {"status": "active", "error_code": null}})
    );
    let events: Vec<Value> = s
        .events(HAMLET, &q)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect();
    assert_eq!(
        events,
        vec![
            json!({"type": "push_device", "push_account_id": "111222", "status": "pending"}),
            json!({"type": "push_device", "push_account_id": "111222", "status": "active"}),
        ]
    );
    {
        let st = relay.lock().unwrap();
        let (path, auth, body) = &st.seen[0];
        assert_eq!(path, "/api/v1/remotes/push/e2ee/register");
        let credentials = base64::engine::general_purpose::STANDARD.encode("org-id:org key");
        assert_eq!(auth, &format!("Basic {credentials}"));
        let form: Vec<(String, String)> = serde_urlencoded::from_str(body).unwrap();
        let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(field("push_account_id"), Some("111222"));
        assert_eq!(field("bouncer_public_key"), Some("bouncer-public-key"));
        assert_eq!(
            field("encrypted_push_registration"),
            Some("encrypted-push-registration-data")
        );
        assert_eq!(field("realm_uuid").map(str::len), Some(36));
    }

    // Success: one payload, sealed with the device's key.
    for params in [vec![], vec![("push_account_id", "111222")]] {
        s.ok("POST", TEST, HAMLET, &params).await;
        let (path, _, body) = relay.lock().unwrap().seen.last().cloned().unwrap();
        assert_eq!(path, "/api/v1/remotes/push/e2ee/notify");
        let body: Value = serde_json::from_str(&body).unwrap();
        let sealed = body["device_id_to_encrypted_data"]["1001"]
            .as_str()
            .unwrap();
        let opened = hearth::push_relay::open(&key, sealed).expect("opens with the push key");
        let payload: Value = serde_json::from_slice(&opened).unwrap();
        assert_eq!(payload["type"], "test");
        assert_eq!(payload["user_id"], HAMLET_ID);
        assert_eq!(payload["realm_name"], "Zulip Dev");
        assert_eq!(body["realm_uuid"].as_str().map(str::len), Some(36));
    }
    // Another push account, and other users, have no device.
    s.err(
        "POST",
        TEST,
        HAMLET,
        &[("push_account_id", "999")],
        400,
        "NO_ACTIVE_PUSH_DEVICE",
        NO_DEVICE,
    )
    .await;
    s.err(
        "POST",
        TEST,
        IAGO,
        &[],
        400,
        "NO_ACTIVE_PUSH_DEVICE",
        NO_DEVICE,
    )
    .await;
    s.err(
        "POST",
        TEST,
        HAMLET,
        &[("push_account_id", "x")],
        400,
        "BAD_REQUEST",
        "push_account_id is not valid JSON",
    )
    .await;

    // The relay's failures.
    let cases = [
        (
            403,
            json!({"result": "error", "code": "INVALID_ZULIP_SERVER", "msg": "Zulip server auth failure"}),
            403,
            "ADMIN_ACTION_REQUIRED",
            "Push notification configuration issue on server, contact the server administrator or retry later.",
        ),
        (
            400,
            json!({"result": "error", "code": "PUSH_NOTIFICATIONS_DISALLOWED", "msg": "Your plan does not allow it"}),
            403,
            "ADMIN_ACTION_REQUIRED",
            "Push notification configuration issue on server, contact the server administrator or retry later.",
        ),
        (
            500,
            json!({}),
            502,
            "INTERNAL_SERVER_ERROR_ON_BOUNCER",
            "Internal server error on Zulip push notification service, retry later.",
        ),
        (
            503,
            json!({}),
            502,
            "INTERNAL_SERVER_ERROR_ON_BOUNCER",
            "Internal server error on Zulip push notification service, retry later.",
        ),
        (
            400,
            json!({"result": "error", "code": "BAD_REQUEST", "msg": "Invalid device"}),
            400,
            "BAD_REQUEST",
            "Invalid device",
        ),
    ];
    for (relay_status, relay_body, status, code, msg) in cases {
        relay.lock().unwrap().notify = (relay_status, relay_body);
        s.err("POST", TEST, HAMLET, &[], status, code, msg).await;
    }

    // Registered devices survive a restart.
    relay.lock().unwrap().notify = (200, json!({"result": "success", "msg": ""}));
    s.restart().await;
    s.ok("POST", TEST, HAMLET, &[]).await;
    // Registering an active device again asks the relay nothing.
    let before = relay.lock().unwrap().seen.len();
    s.ok(
        "POST",
        REGISTER,
        HAMLET,
        &pairs(&registration("111222", &encoded)),
    )
    .await;
    assert_eq!(push_devices(&s, HAMLET).await["111222"]["status"], "active");
    assert_eq!(relay.lock().unwrap().seen.len(), before);

    // The relay gone: no connection.
    handle.stop(true).await;
    s.err(
        "POST",
        TEST,
        HAMLET,
        &[],
        502,
        "FAILED_TO_CONNECT_BOUNCER",
        "Network error while connecting to Zulip push notification service.",
    )
    .await;
    s.stop().await;
}

#[actix_web::test]
async fn registrations_and_their_outcomes() {
    let (url, relay, _handle) = start_relay();
    let mut s = spawn_with_relay(&url).await;
    let (_, encoded) = push_key(9);
    let good = registration("1", &encoded);
    // Bots first, then parameters in Zulip's order, then the key.
    s.err(
        "POST",
        REGISTER,
        BOT,
        &[],
        400,
        "BAD_REQUEST",
        "This endpoint does not accept bot requests.",
    )
    .await;
    s.err(
        "POST",
        TEST,
        BOT,
        &[],
        400,
        "BAD_REQUEST",
        "This endpoint does not accept bot requests.",
    )
    .await;
    for (i, (name, _)) in good.iter().enumerate() {
        let mut params = good.clone();
        params.remove(i);
        s.err(
            "POST",
            REGISTER,
            HAMLET,
            &pairs(&params),
            400,
            "REQUEST_VARIABLE_MISSING",
            &format!("Missing '{name}' argument"),
        )
        .await;
    }
    let with = |k: &'static str, v: &str| {
        let mut p = good.clone();
        p.retain(|(n, _)| *n != k);
        p.push((k, v.to_owned()));
        p
    };
    for (params, msg) in [
        (with("token_kind", "gcm"), "Invalid token_kind"),
        (
            with("push_account_id", "abc"),
            "push_account_id is not valid JSON",
        ),
        (
            with("push_account_id", "1.5"),
            "push_account_id is not an integer",
        ),
        (with("push_key", "not base64!"), "Invalid push_key"),
        (
            with(
                "push_key",
                &base64::engine::general_purpose::STANDARD.encode([0x31; 10]),
            ),
            "Invalid push_key",
        ),
        (
            with(
                "push_key",
                &base64::engine::general_purpose::STANDARD.encode([0x32; 33]),
            ),
            "Invalid push_key",
        ),
    ] {
        s.err(
            "POST",
            REGISTER,
            HAMLET,
            &pairs(&params),
            400,
            "BAD_REQUEST",
            msg,
        )
        .await;
    }
    assert_eq!(push_devices(&s, HAMLET).await, json!({}));

    // The relay refuses a registration: the device failed, with the relay's code.
    relay.lock().unwrap().register = vec![(
        400,
        json!({"result": "error", "code": "INVALID_BOUNCER_PUBLIC_KEY", "msg": "Invalid bouncer_public_key"}),
    )];
    s.ok("POST", REGISTER, HAMLET, &pairs(&good)).await;
    let devices = wait_status(&s, "1", "failed").await;
    assert_eq!(
        devices,
        json!({"1": {"status": "failed", "error_code": "INVALID_BOUNCER_PUBLIC_KEY"}})
    );
    s.err(
        "POST",
        TEST,
        HAMLET,
        &[("push_account_id", "1")],
        400,
        "NO_ACTIVE_PUSH_DEVICE",
        NO_DEVICE,
    )
    .await;

    // A failed registration may be tried again; a relay that fails first (5xx, then a
    // refused connection is the same) is asked again until it answers.
    relay.lock().unwrap().register = vec![
        (500, json!({})),
        (
            200,
            json!({"result": "success", "msg": "", "device_id": 77}),
        ),
    ];
    s.ok("POST", REGISTER, HAMLET, &pairs(&good)).await;
    assert_eq!(push_devices(&s, HAMLET).await["1"]["status"], "pending");
    wait_status(&s, "1", "active").await;
    let registrations = relay
        .lock()
        .unwrap()
        .seen
        .iter()
        .filter(|(p, _, _)| p.ends_with("/register"))
        .count();
    assert_eq!(registrations, 3);
    s.ok("POST", TEST, HAMLET, &[("push_account_id", "1")])
        .await;
    let (_, _, body) = relay.lock().unwrap().seen.last().cloned().unwrap();
    let body: Value = serde_json::from_str(&body).unwrap();
    assert!(
        body["device_id_to_encrypted_data"]["77"].is_string(),
        "{body}"
    );

    s.restart().await;
    assert_eq!(
        push_devices(&s, HAMLET).await,
        json!({"1": {"status": "active", "error_code": null}})
    );
    s.stop().await;
}

#[actix_web::test]
async fn without_a_relay() {
    // Recordings 20, 20b: a server that uses no relay has no device.
    let s = TestApp::spawn().await;
    let (_, encoded) = push_key(1);
    s.err(
        "POST",
        REGISTER,
        HAMLET,
        &pairs(&registration("5", &encoded)),
        400,
        "PUSH_SERVICE_NOT_CONFIGURED",
        "Server is not configured to use push notification service.",
    )
    .await;
    s.err(
        "POST",
        REGISTER,
        HAMLET,
        &pairs(&registration("5", "bad")),
        400,
        "PUSH_SERVICE_NOT_CONFIGURED",
        "Server is not configured to use push notification service.",
    )
    .await;
    for params in [vec![], vec![("push_account_id", "12345")]] {
        s.err(
            "POST",
            TEST,
            ADMIN,
            &params,
            400,
            "NO_ACTIVE_PUSH_DEVICE",
            NO_DEVICE,
        )
        .await;
    }
}

// ---- push tokens (seed 4.17, 4.18) -------------------------------------------------

#[actix_web::test]
async fn push_tokens_rules() {
    let mut s = TestApp::spawn().await;
    // Recordings 19, 19b, 19c, 19d.
    s.bad(
        "DELETE",
        APNS,
        ADMIN,
        &[("token", "c0ffeec0ffeec0ffee")],
        "Token does not exist",
    )
    .await;
    s.bad(
        "DELETE",
        APNS,
        ADMIN,
        &[("token", "not-hex")],
        "Invalid APNS token",
    )
    .await;
    s.bad(
        "DELETE",
        APNS,
        ADMIN,
        &[("token", "")],
        "Empty or invalid length token",
    )
    .await;
    s.bad(
        "DELETE",
        FCM,
        ADMIN,
        &[("token", "unknowntoken")],
        "Token does not exist",
    )
    .await;
    let long = "a".repeat(4097);
    for path in [APNS, FCM] {
        s.bad(
            "DELETE",
            path,
            ADMIN,
            &[("token", &long)],
            "Empty or invalid length token",
        )
        .await;
        s.bad(
            "POST",
            path,
            ADMIN,
            &[("token", ""), ("appid", "org.zulip.Zulip")],
            "Empty or invalid length token",
        )
        .await;
        s.err(
            "DELETE",
            path,
            ADMIN,
            &[],
            400,
            "REQUEST_VARIABLE_MISSING",
            "Missing 'token' argument",
        )
        .await;
        // Bots are refused before anything else.
        for params in [&[][..], &[("token", "abcd")][..]] {
            for method in ["POST", "DELETE"] {
                s.bad(
                    method,
                    path,
                    BOT,
                    params,
                    "This endpoint does not accept bot requests.",
                )
                .await;
            }
        }
    }
    // Registering: `appid` is required for APNs and checked before the token.
    s.err(
        "POST",
        APNS,
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'appid' argument",
    )
    .await;
    s.err(
        "POST",
        APNS,
        HAMLET,
        &[("appid", "bad app")],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'token' argument",
    )
    .await;
    s.bad(
        "POST",
        APNS,
        HAMLET,
        &[("appid", "bad app"), ("token", "zz")],
        "appid has invalid format",
    )
    .await;
    s.bad(
        "POST",
        APNS,
        HAMLET,
        &[("appid", "org.zulip.Zulip"), ("token", "zz")],
        "Invalid APNS token",
    )
    .await;
    s.err(
        "POST",
        FCM,
        HAMLET,
        &[],
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'token' argument",
    )
    .await;
    let apns = [("appid", "org.zulip.Zulip"), ("token", "c0ffeec0ffee")];
    let body = s.ok("POST", APNS, HAMLET, &apns).await;
    assert_eq!(body, json!({"result": "success", "msg": ""}));
    // Again: nothing changes.
    s.ok("POST", APNS, HAMLET, &apns).await;
    s.ok("POST", FCM, HAMLET, &[("token", "fcm-token-1")]).await;
    s.ok("POST", FCM, GUEST, &[("token", "fcm-token-1")]).await;
    let body = s
        .ok(
            "POST",
            FCM,
            HAMLET,
            &[("token", "fcm-token-2"), ("appid", "x")],
        )
        .await;
    assert_eq!(body["ignored_parameters_unsupported"], json!(["appid"]));

    // Tokens are the user's and of their kind; and survive a restart.
    s.restart().await;
    s.bad(
        "DELETE",
        APNS,
        ADMIN,
        &[("token", "c0ffeec0ffee")],
        "Token does not exist",
    )
    .await;
    s.bad(
        "DELETE",
        FCM,
        HAMLET,
        &[("token", "c0ffeec0ffee")],
        "Token does not exist",
    )
    .await;
    s.bad(
        "DELETE",
        APNS,
        HAMLET,
        &[("token", "fcm-token-1")],
        "Invalid APNS token",
    )
    .await;
    s.ok("DELETE", APNS, HAMLET, &[("token", "c0ffeec0ffee")])
        .await;
    s.ok("DELETE", FCM, HAMLET, &[("token", "fcm-token-1")])
        .await;
    s.bad(
        "DELETE",
        FCM,
        HAMLET,
        &[("token", "fcm-token-1")],
        "Token does not exist",
    )
    .await;
    s.restart().await;
    s.bad(
        "DELETE",
        APNS,
        HAMLET,
        &[("token", "c0ffeec0ffee")],
        "Token does not exist",
    )
    .await;
    s.bad(
        "DELETE",
        FCM,
        HAMLET,
        &[("token", "fcm-token-1")],
        "Token does not exist",
    )
    .await;
    s.ok("DELETE", FCM, GUEST, &[("token", "fcm-token-1")])
        .await;
    s.ok("DELETE", FCM, HAMLET, &[("token", "fcm-token-2")])
        .await;
    s.stop().await;
}

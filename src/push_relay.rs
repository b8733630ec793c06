//! The push relay client (`--push-relay-url`): E2EE push devices are registered with a
//! relay that speaks Zulip's push bouncer API, and encrypted notifications are sent
//! through it. Credentials go in the URL's user information
//! (`http://ORG_ID:ORG_KEY@relay.example/`) and are sent as HTTP Basic, as Zulip's
//! `ZULIP_ORG_ID`/`ZULIP_ORG_KEY`.
//!
//! - `POST {relay}/api/v1/remotes/push/e2ee/register`, form `realm_uuid`,
//!   `push_account_id`, `encrypted_push_registration`, `bouncer_public_key`: answers
//!   `{"device_id": N}`.
//! - `POST {relay}/api/v1/remotes/push/e2ee/notify`, JSON `{"realm_uuid",
//!   "device_id_to_encrypted_data": {"<device_id>": "<base64>"}}`: each payload is the
//!   notification's JSON sealed with the device's `push_key` (libsodium's
//!   `crypto_secretbox_easy`, random nonce first), then standard Base64.
//!
//! - `POST {relay}/api/v1/remotes/push/test_notification`, JSON `{"realm_uuid",
//!   "user_id", "token", "token_kind", "base_payload"}`: a test notification to one
//!   legacy (FCM or APNs) device token, which the relay sends.
//!
//! Failures are classified as Zulip's `send_to_push_bouncer` does: no answer (a refused
//! connection, a timeout), a 5xx, a 4xx with the relay's `code` and `msg`, or anything
//! else.

use std::time::Duration;

use base64::Engine;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};
use serde_json::{json, Map, Value};

use crate::error::{ApiError, ErrorCode};

/// How long connecting to the relay may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a whole request to the relay may take (Zulip's `PushBouncerSession`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Relay codes that mean the server's own configuration is at fault.
const ADMIN_CODES: [&str; 3] = [
    "INVALID_ZULIP_SERVER",
    "PUSH_NOTIFICATIONS_DISALLOWED",
    "MISSING_REMOTE_REALM",
];

/// A configured relay.
#[derive(Debug, Clone)]
pub struct PushRelay {
    client: reqwest::Client,
    /// The relay's base URL, without credentials.
    base: reqwest::Url,
    /// HTTP Basic credentials from the URL.
    credentials: Option<(String, String)>,
}

/// Why a relay request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayError {
    /// No answer: the connection failed or timed out.
    Network(String),
    /// The relay answered a 5xx.
    Server(u16),
    /// The relay answered a 4xx, with its `code` and `msg`.
    Refused { code: Option<String>, msg: String },
    /// Any other answer (another status, a body that is not the expected JSON).
    Unexpected(String),
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::Network(e) => write!(f, "no answer from the push relay: {e}"),
            RelayError::Server(status) => write!(f, "the push relay answered {status}"),
            RelayError::Refused { code, msg } => {
                write!(f, "the push relay refused ({code:?}): {msg}")
            }
            RelayError::Unexpected(what) => write!(f, "unexpected push relay answer: {what}"),
        }
    }
}

impl RelayError {
    /// The answer of `POST /mobile_push/e2ee/test_notification` for this failure.
    pub fn to_api_error(&self) -> ApiError {
        match self {
            RelayError::Network(_) => ApiError::new(
                502,
                ErrorCode::FailedToConnectBouncer,
                "Network error while connecting to Zulip push notification service.",
            ),
            RelayError::Server(_) => ApiError::new(
                502,
                ErrorCode::InternalServerErrorOnBouncer,
                "Internal server error on Zulip push notification service, retry later.",
            ),
            RelayError::Refused { code, msg } => {
                if code.as_deref().is_some_and(|c| ADMIN_CODES.contains(&c)) {
                    admin_action_required()
                } else {
                    ApiError::bad_request(msg.clone())
                }
            }
            RelayError::Unexpected(_) => admin_action_required(),
        }
    }

    /// Whether a registration may succeed if tried again later (the relay unreachable
    /// or failing, or the server's configuration not yet fixed).
    pub fn is_transient(&self) -> bool {
        match self {
            RelayError::Network(_) | RelayError::Server(_) | RelayError::Unexpected(_) => true,
            RelayError::Refused { code, .. } => {
                code.as_deref().is_some_and(|c| ADMIN_CODES.contains(&c))
            }
        }
    }

    /// The `error_code` a failed registration keeps.
    pub fn error_code(&self) -> String {
        match self {
            RelayError::Refused {
                code: Some(code), ..
            } => code.clone(),
            _ => "BAD_REQUEST".to_owned(),
        }
    }
}

/// `ADMIN_ACTION_REQUIRED`: the server's push configuration is at fault.
pub fn admin_action_required() -> ApiError {
    ApiError::new(
        403,
        ErrorCode::AdminActionRequired,
        "Push notification configuration issue on server, contact the server administrator or retry later.",
    )
}

impl PushRelay {
    /// A relay at `url` (http or https; credentials in the user information).
    pub fn new(url: &str) -> Result<PushRelay, String> {
        let mut base =
            reqwest::Url::parse(url).map_err(|e| format!("push relay URL {url:?}: {e}"))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(format!("push relay URL {url:?}: not http or https"));
        }
        let credentials = match (base.username(), base.password()) {
            ("", None) => None,
            (user, pass) => Some((
                percent_decode(user),
                percent_decode(pass.unwrap_or_default()),
            )),
        };
        // Neither can fail on an http(s) URL.
        let _ = base.set_username("");
        let _ = base.set_password(None);
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("hearth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("push relay client: {e}"))?;
        Ok(PushRelay {
            client,
            base,
            credentials,
        })
    }

    fn endpoint(&self, path: &str) -> Result<reqwest::Url, RelayError> {
        self.base
            .join(&format!("api/v1/remotes/{path}"))
            .map_err(|e| RelayError::Unexpected(format!("relay URL: {e}")))
    }

    /// Sends a request and classifies the answer; a success's JSON body is returned.
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, RelayError> {
        let request = match &self.credentials {
            Some((user, pass)) => request.basic_auth(user, Some(pass)),
            None => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| RelayError::Network(e.to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| RelayError::Network(e.to_string()))?;
        let json = || serde_json::from_slice::<Value>(&body);
        match status {
            500.. => Err(RelayError::Server(status)),
            400..=499 => {
                let v =
                    json().map_err(|_| RelayError::Unexpected(format!("{status}, not JSON")))?;
                Err(RelayError::Refused {
                    code: v.get("code").and_then(Value::as_str).map(str::to_owned),
                    msg: v
                        .get("msg")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
            }
            200 => json().map_err(|_| RelayError::Unexpected("200, not JSON".into())),
            other => Err(RelayError::Unexpected(format!("status {other}"))),
        }
    }

    /// Registers a device; returns the relay's device id.
    pub async fn register_device(
        &self,
        realm_uuid: &str,
        push_account_id: i64,
        encrypted_push_registration: &str,
        bouncer_public_key: &str,
    ) -> Result<i64, RelayError> {
        let url = self.endpoint("push/e2ee/register")?;
        let form = [
            ("realm_uuid", realm_uuid.to_owned()),
            ("push_account_id", push_account_id.to_string()),
            (
                "encrypted_push_registration",
                encrypted_push_registration.to_owned(),
            ),
            ("bouncer_public_key", bouncer_public_key.to_owned()),
        ];
        let body = self.send(self.client.post(url).form(&form)).await?;
        body.get("device_id")
            .and_then(Value::as_i64)
            .ok_or_else(|| RelayError::Unexpected("no device_id".into()))
    }

    /// Sends one encrypted payload to each device (`device id -> Base64 payload`).
    pub async fn notify(
        &self,
        realm_uuid: &str,
        payloads: Map<String, Value>,
    ) -> Result<(), RelayError> {
        let url = self.endpoint("push/e2ee/notify")?;
        let body = json!({"realm_uuid": realm_uuid, "device_id_to_encrypted_data": payloads});
        self.send(self.client.post(url).json(&body))
            .await
            .map(|_| ())
    }
}

impl PushRelay {
    /// Asks the relay to send a test notification to one legacy device token
    /// (`token_kind`: Zulip's `PushDeviceToken.APNS` 1, `FCM` 2).
    pub async fn test_notification(
        &self,
        realm_uuid: &str,
        user_id: u64,
        token: &str,
        token_kind: i64,
        base_payload: Value,
    ) -> Result<(), RelayError> {
        let url = self.endpoint("push/test_notification")?;
        let body = json!({"realm_uuid": realm_uuid, "user_id": user_id, "token": token,
                          "token_kind": token_kind, "base_payload": base_payload});
        self.send(self.client.post(url).json(&body))
            .await
            .map(|_| ())
    }
}

/// Seals `plaintext` with a secretbox `key` and a random nonce: Base64 of the nonce
/// followed by libsodium's `crypto_secretbox_easy` output (tag, then ciphertext).
pub fn seal(key: &[u8], plaintext: &[u8]) -> Option<String> {
    if key.len() != 32 {
        return None;
    }
    let cipher = XSalsa20Poly1305::new(Key::from_slice(key));
    let nonce_bytes: [u8; 24] = rand::random();
    let sealed = cipher
        .encrypt(Nonce::from_slice(&nonce_bytes), plaintext)
        .ok()?;
    let mut out = nonce_bytes.to_vec();
    out.extend(sealed);
    Some(base64::engine::general_purpose::STANDARD.encode(out))
}

/// Opens what `seal` made (tests, and relays written in Rust).
pub fn open(key: &[u8], sealed: &str) -> Option<Vec<u8>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sealed)
        .ok()?;
    if key.len() != 32 || bytes.len() < 24 {
        return None;
    }
    let (nonce, boxed) = bytes.split_at(24);
    XSalsa20Poly1305::new(Key::from_slice(key))
        .decrypt(Nonce::from_slice(nonce), boxed)
        .ok()
}

/// The user information of the relay's URL, `%XX` sequences decoded (others left as
/// they are) and invalid UTF-8 replaced.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_payloads_open_with_the_key() {
        let key = [7u8; 32];
        let sealed = seal(&key, b"{\"type\":\"test\"}").expect("sealed");
        assert_eq!(
            open(&key, &sealed).as_deref(),
            Some(&b"{\"type\":\"test\"}"[..])
        );
        assert_eq!(open(&[8u8; 32], &sealed), None);
        assert_eq!(seal(&[1u8; 31], b"x"), None);
    }

    #[test]
    fn credentials_are_percent_decoded_lossily() {
        assert_eq!(percent_decode("org%40id"), "org@id");
        // Not a `%XX`: kept as written.
        assert_eq!(percent_decode("k%zz%4"), "k%zz%4");
        assert_eq!(percent_decode("%%41"), "%A");
        // Bytes that are not UTF-8 become U+FFFD.
        assert_eq!(percent_decode("k%ffey"), "k\u{fffd}ey");
    }

    #[test]
    fn urls_and_credentials() {
        let relay = PushRelay::new("http://org%40id:k%2Fey@127.0.0.1:9/base/").expect("relay");
        assert_eq!(
            relay.credentials,
            Some(("org@id".to_owned(), "k/ey".to_owned()))
        );
        assert_eq!(
            relay.endpoint("push/e2ee/notify").expect("url").as_str(),
            "http://127.0.0.1:9/base/api/v1/remotes/push/e2ee/notify"
        );
        assert!(PushRelay::new("https://id:key@push.example.com/").is_ok());
        assert!(PushRelay::new("ftp://x").is_err());
        assert!(PushRelay::new("not a url").is_err());
    }

    #[test]
    fn failures_map_to_zulip_errors() {
        let code = |e: RelayError| {
            let a = e.to_api_error();
            (a.status, a.code.as_str())
        };
        assert_eq!(
            code(RelayError::Network("x".into())),
            (502, "FAILED_TO_CONNECT_BOUNCER")
        );
        assert_eq!(
            code(RelayError::Server(503)),
            (502, "INTERNAL_SERVER_ERROR_ON_BOUNCER")
        );
        let refused = |c: &str| RelayError::Refused {
            code: Some(c.into()),
            msg: "m".into(),
        };
        assert_eq!(
            code(refused("INVALID_ZULIP_SERVER")),
            (403, "ADMIN_ACTION_REQUIRED")
        );
        assert_eq!(code(refused("BAD_REQUEST")), (400, "BAD_REQUEST"));
        assert!(refused("MISSING_REMOTE_REALM").is_transient());
        assert!(!refused("INVALID_BOUNCER_PUBLIC_KEY").is_transient());
        assert_eq!(refused("REQUEST_EXPIRED").error_code(), "REQUEST_EXPIRED");
    }
}

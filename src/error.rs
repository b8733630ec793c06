//! `ApiError`: the one error type every layer returns, rendered as Zulip's error body.
//!
//! The realm decides *which* error (code, message, extra fields); `api/error.rs` turns
//! it into an HTTP response. The realm does not know HTTP, but Zulip ties an HTTP status
//! to each error class, so the status travels with the error as a plain number.

use serde_json::{Map, Value};
use std::fmt;

/// Zulip's machine-readable error codes (serialized in SCREAMING_SNAKE_CASE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    RequestVariableMissing,
    RequestConfusingVar,
    Unauthorized,
    UnauthorizedPrincipal,
    AuthenticationFailed,
    UserDeactivated,
    RealmDeactivated,
    NonexistentSubdomain,
    StreamDoesNotExist,
    ChannelAlreadyExists,
    BadEventQueueId,
    NotFound,
    InternalServerError,
    CannotDeactivateGroupInUse,
    NoActivePushDevice,
    RateLimitHit,
    BadNarrow,
    ExpectationMismatch,
    PushServiceNotConfigured,
    AdminActionRequired,
    FailedToConnectBouncer,
    InternalServerErrorOnBouncer,
    BadImage,
    CannotDeactivateLastUser,
    ServerNotReady,
    RequestVariableInvalid,
    StreamWildcardMentionNotAllowed,
    TopicWildcardMentionNotAllowed,
    InvitationFailed,
    InvalidPushDeviceToken,
    InvalidRemotePushDeviceToken,
    CsrfFailed,
}

impl ErrorCode {
    /// The code as Zulip spells it on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::RequestVariableMissing => "REQUEST_VARIABLE_MISSING",
            ErrorCode::RequestConfusingVar => "REQUEST_CONFUSING_VAR",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::UnauthorizedPrincipal => "UNAUTHORIZED_PRINCIPAL",
            ErrorCode::AuthenticationFailed => "AUTHENTICATION_FAILED",
            ErrorCode::UserDeactivated => "USER_DEACTIVATED",
            ErrorCode::RealmDeactivated => "REALM_DEACTIVATED",
            ErrorCode::NonexistentSubdomain => "NONEXISTENT_SUBDOMAIN",
            ErrorCode::StreamDoesNotExist => "STREAM_DOES_NOT_EXIST",
            ErrorCode::ChannelAlreadyExists => "CHANNEL_ALREADY_EXISTS",
            ErrorCode::BadEventQueueId => "BAD_EVENT_QUEUE_ID",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::InternalServerError => "INTERNAL_SERVER_ERROR",
            ErrorCode::CannotDeactivateGroupInUse => "CANNOT_DEACTIVATE_GROUP_IN_USE",
            ErrorCode::NoActivePushDevice => "NO_ACTIVE_PUSH_DEVICE",
            ErrorCode::RateLimitHit => "RATE_LIMIT_HIT",
            ErrorCode::BadNarrow => "BAD_NARROW",
            ErrorCode::ExpectationMismatch => "EXPECTATION_MISMATCH",
            ErrorCode::PushServiceNotConfigured => "PUSH_SERVICE_NOT_CONFIGURED",
            ErrorCode::AdminActionRequired => "ADMIN_ACTION_REQUIRED",
            ErrorCode::FailedToConnectBouncer => "FAILED_TO_CONNECT_BOUNCER",
            ErrorCode::InternalServerErrorOnBouncer => "INTERNAL_SERVER_ERROR_ON_BOUNCER",
            ErrorCode::BadImage => "BAD_IMAGE",
            ErrorCode::CannotDeactivateLastUser => "CANNOT_DEACTIVATE_LAST_USER",
            ErrorCode::ServerNotReady => "SERVER_NOT_READY",
            ErrorCode::RequestVariableInvalid => "REQUEST_VARIABLE_INVALID",
            ErrorCode::StreamWildcardMentionNotAllowed => "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
            ErrorCode::TopicWildcardMentionNotAllowed => "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
            ErrorCode::InvitationFailed => "INVITATION_FAILED",
            ErrorCode::InvalidPushDeviceToken => "INVALID_PUSH_DEVICE_TOKEN",
            ErrorCode::InvalidRemotePushDeviceToken => "INVALID_REMOTE_PUSH_DEVICE_TOKEN",
            ErrorCode::CsrfFailed => "CSRF_FAILED",
        }
    }
}

/// What a write refused by a freeze is told to wait (`ApiError::frozen`).
pub const FROZEN_RETRY_AFTER_SECS: f64 = 1.0;

/// An error answer: HTTP status, Zulip `code`, `msg`, and extra body fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: ErrorCode,
    pub msg: String,
    pub extra: Map<String, Value>,
    /// `WWW-Authenticate` challenge for 401 answers.
    pub challenge: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: u16, code: ErrorCode, msg: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            msg: msg.into(),
            extra: Map::new(),
            challenge: None,
        }
    }

    /// HTTP 400 `BAD_REQUEST`: Zulip's default `JsonableError`.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, ErrorCode::BadRequest, msg)
    }

    /// HTTP 401 `UNAUTHORIZED` with the Basic challenge, as `validate_api_key` answers.
    pub fn unauthorized(msg: impl Into<String>) -> Self {
        let mut e = Self::new(401, ErrorCode::Unauthorized, msg);
        e.challenge = Some("Basic realm=\"zulip\"");
        e
    }

    /// HTTP 401 `USER_DEACTIVATED`: credentials of a deactivated account (Zulip's
    /// `UserDeactivatedError` from `validate_account_and_subdomain`), with the Basic
    /// challenge of every 401 of the API.
    pub fn user_deactivated() -> Self {
        let mut e = Self::new(401, ErrorCode::UserDeactivated, "Account is deactivated");
        e.challenge = Some("Basic realm=\"zulip\"");
        e
    }

    pub fn not_logged_in() -> Self {
        Self::unauthorized("Not logged in: API authentication or user session required")
    }

    /// `OrganizationAdministratorRequiredError`.
    pub fn must_be_admin() -> Self {
        Self::new(
            400,
            ErrorCode::UnauthorizedPrincipal,
            "Must be an organization administrator",
        )
    }

    /// `OrganizationOwnerRequiredError`.
    pub fn must_be_owner() -> Self {
        Self::new(
            400,
            ErrorCode::UnauthorizedPrincipal,
            "Must be an organization owner",
        )
    }

    /// `Missing 'x' argument`, with `var_name`.
    pub fn missing(var: &str) -> Self {
        Self::new(
            400,
            ErrorCode::RequestVariableMissing,
            format!("Missing '{var}' argument"),
        )
        .with("var_name", var)
    }

    /// A fixed 500: the cause goes to the log, never to the client.
    pub fn internal() -> Self {
        Self::new(500, ErrorCode::InternalServerError, "Internal server error")
    }

    /// A write the storage could not make durable (a full disk, an I/O error): it was
    /// not saved, and writes are refused until the storage recovers.
    pub fn storage_failed() -> Self {
        Self::new(
            503,
            ErrorCode::InternalServerError,
            "The server could not save this change (storage failure); it was not applied. Try again later.",
        )
    }

    /// A message read while the message database is not open (it failed, or it is
    /// still opening past the wait): nothing was changed; the client may retry.
    pub fn messages_unavailable() -> Self {
        Self::new(
            503,
            ErrorCode::InternalServerError,
            "The message store is unavailable right now; nothing was changed. Try again later.",
        )
    }

    /// A write to a realm in a write freeze (it is being moved to another node):
    /// nothing was changed; the client may retry after `retry-after` seconds. A 503,
    /// which Zulip's Python client (0.9.1) retries by itself (once a second, ten times);
    /// it does not retry a 429.
    pub fn frozen() -> Self {
        Self::new(
            503,
            ErrorCode::ServerNotReady,
            "This organization is briefly read-only (maintenance); nothing was changed. Try again in a moment.",
        )
        .with("retry-after", FROZEN_RETRY_AFTER_SECS)
    }

    /// Zulip's `RateLimitedError`: 429 with `retry-after` (seconds) in the body; the
    /// `Retry-After` header is added when rendered.
    pub fn rate_limited(retry_after_secs: f64) -> Self {
        Self::new(
            429,
            ErrorCode::RateLimitHit,
            "API usage exceeded rate limit",
        )
        .with("retry-after", retry_after_secs)
    }

    /// Adds an extra body field (`stream`, `var_name`, `queue_id`, ...).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The JSON body Zulip sends for this error.
    pub fn body(&self) -> Value {
        let mut m = Map::new();
        m.insert("result".into(), "error".into());
        m.insert("msg".into(), self.msg.clone().into());
        m.insert("code".into(), self.code.as_str().into());
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code.as_str(), self.msg)
    }
}

impl std::error::Error for ApiError {}

/// Result of realm rules and handlers.
pub type ApiResult<T> = Result<T, ApiError>;

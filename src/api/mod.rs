//! The HTTP layer: the route table, the request extractor, and the helpers that run a
//! read on the worker against the published version (`read`, `read_large`) or send a
//! write to the realm actor (`call`), and render the reply.

pub mod auth;
pub mod bots;
pub mod channels;
pub mod emoji;
pub mod error;
pub mod events;
pub mod params;
pub mod presence;
pub mod rule;
pub mod server;
pub mod status;
pub mod users;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use actix::Addr;
use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use futures_util::future::LocalBoxFuture;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::{Map, Value};

use crate::actor::{Call, Decided, RealmActor};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::EventHub;
use crate::realm::{Clock, Cx, Realm, User, UserId};
use crate::registry::Registry;
use crate::storage::Durability;
use params::Params;
pub use rule::{Credentials, Ctx, Outcome};

/// Largest request body accepted, files of a multipart body aside.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;
/// Largest total of the files of a multipart body (Zulip's `DATA_UPLOAD_MAX_MEMORY_SIZE`,
/// 25 MiB): each endpoint applies its own, smaller limit with Zulip's message.
pub const UPLOAD_LIMIT: usize = 25 * 1024 * 1024;

/// Shared by every handler.
pub struct AppState {
    pub registry: Registry,
    pub durability: Arc<Durability>,
    /// Started with `--dev`: `POST /dev_fetch_api_key` works.
    pub dev: bool,
}

/// One path and its methods; any other method on it answers 405 with Zulip's body.
macro_rules! endpoint {
    ($path:literal, $($method:ident => $handler:path),+ $(,)?) => {
        web::resource($path)
            $(.route(web::$method().to($handler)))+
            .default_service(web::to(|| error::method_not_allowed(&[$(stringify!($method)),+])))
    };
}

/// The route table: every endpoint in one place.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .service(endpoint!("/server_settings", get => server::server_settings))
            .service(endpoint!("/dev_fetch_api_key", post => server::dev_fetch_api_key))
            .service(endpoint!("/fetch_api_key", post => server::fetch_api_key))
            .service(endpoint!("/users/me", get => users::get_own_user))
            .service(endpoint!("/users", get => users::get_users, post => users::create_user))
            .service(endpoint!("/users/me/subscriptions", get => channels::get_subscriptions, post => channels::subscribe, delete => channels::unsubscribe))
            .service(endpoint!("/users/me/subscriptions/properties", post => channels::update_subscription_properties))
            .service(endpoint!("/users/me/presence", post => presence::update_presence))
            .service(endpoint!("/users/me/status", post => status::update_status))
            .service(endpoint!("/users/{user_id_or_email}/presence", get => presence::get_user_presence))
            .service(endpoint!("/users/{user_id}/status", get => status::get_user_status))
            .service(endpoint!("/realm/presence", get => presence::get_realm_presence))
            .service(endpoint!("/realm/emoji", get => emoji::get_realm_emoji))
            .service(endpoint!("/realm/emoji/{emoji_name:.+}", post => emoji::upload_emoji, delete => emoji::deactivate_emoji))
            .service(endpoint!("/users/{user_id}/subscriptions/{stream_id}", get => channels::get_subscription_status))
            .service(endpoint!("/users/{user}", get => users::get_user))
            .service(endpoint!("/channels/create", post => channels::create_channel))
            .service(endpoint!("/streams", get => channels::get_streams))
            .service(endpoint!("/streams/{stream_id}", get => channels::get_stream, patch => channels::update_stream, delete => channels::archive_stream))
            .service(endpoint!("/streams/{stream_id}/members", get => channels::get_stream_members))
            .service(endpoint!("/get_stream_id", get => channels::get_stream_id))
            .service(endpoint!("/default_streams", post => channels::add_default_stream, delete => channels::remove_default_stream))
            .service(endpoint!("/channel_folders/create", post => channels::create_channel_folder))
            .service(endpoint!("/channel_folders", get => channels::get_channel_folders, patch => channels::reorder_channel_folders))
            .service(endpoint!("/channel_folders/{channel_folder_id}", patch => channels::update_channel_folder))
            .service(endpoint!("/bots", post => bots::create_bot, get => bots::get_bots))
            .service(endpoint!("/register", post => events::register))
            .service(endpoint!("/events", get => events::get_events, delete => events::delete_events))
            .default_service(web::to(error::not_found)),
    )
    .service(web::scope("/json").default_service(web::to(error::session_required)))
    .service(
        web::resource("/user_avatars/{realm}/emoji/images/{file_name}")
            .route(web::get().to(emoji::emoji_image)),
    )
    .default_service(web::to(error::not_found));
}

/// A file part of a multipart body (Zulip's `request.FILES`): not a parameter.
#[derive(Debug, Clone)]
pub struct UploadedFile {
    /// The form field's name.
    pub field: String,
    /// The file name the client gave.
    pub file_name: String,
    /// The part's `Content-Type`, if it had one.
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// An API request: its realm, credentials and parameters.
pub struct ApiRequest {
    pub realm: Addr<RealmActor>,
    pub hub: Arc<EventHub>,
    pub credentials: Result<Credentials, ApiError>,
    pub params: Params,
    /// The files of a multipart body.
    pub files: Vec<UploadedFile>,
    pub state: web::Data<AppState>,
    clock: Arc<dyn Clock>,
    server_url: Arc<str>,
}

/// How a call is made. Every success answer lists the parameters it did not read in
/// `ignored_parameters_unsupported` (feature level 167).
#[derive(Debug, Clone, Copy)]
pub struct CallOpts {
    /// Needs no credentials.
    pub anonymous: bool,
}

impl CallOpts {
    pub const USER: CallOpts = CallOpts { anonymous: false };
    pub const ANONYMOUS: CallOpts = CallOpts { anonymous: true };
}

impl ApiRequest {
    /// Authenticates the caller against `version` (on this worker, never the actor).
    fn authenticate<'r>(&self, version: &'r Realm) -> ApiResult<&'r User> {
        let c = self.credentials.as_ref().map_err(Clone::clone)?;
        let me = version.authenticate(&c.email, &c.api_key)?;
        c.logged.set(me.id);
        Ok(me)
    }

    /// Runs `check` with the published version and the authenticated caller: a cheap
    /// check (a role) on this worker before costly work such as password hashing.
    pub fn check<T>(&self, check: impl FnOnce(&Realm, &User) -> ApiResult<T>) -> ApiResult<T> {
        let version = self.hub.current();
        let me = self.authenticate(&version)?;
        check(&version, me)
    }

    /// Authenticates the caller against the published version; returns their id.
    pub fn caller(&self) -> ApiResult<UserId> {
        let version = self.hub.current();
        self.authenticate(&version).map(|u| u.id)
    }

    /// A write: authenticates the caller on this worker, sends `rule` to the realm actor,
    /// awaits the durability of what it wrote and makes it visible, and returns the body
    /// (with `ignored_parameters_unsupported` when asked).
    pub async fn call<F>(self, opts: CallOpts, rule: F) -> ApiResult<Map<String, Value>>
    where
        F: FnOnce(&mut Ctx<'_>) -> ApiResult<Outcome> + Send + 'static,
    {
        self.write(opts, |_| Ok(()), move |c, ()| rule(c)).await
    }

    /// A write whose parameters are parsed here, on the worker, after authentication
    /// (Zulip's order): `parse` turns them into a typed value that the rule, run by the
    /// realm actor, receives. Long lists are parsed here, not on the actor.
    pub async fn write<T, P, F>(
        self,
        opts: CallOpts,
        parse: P,
        rule: F,
    ) -> ApiResult<Map<String, Value>>
    where
        T: Send + 'static,
        P: FnOnce(&Params) -> ApiResult<T>,
        F: FnOnce(&mut Ctx<'_>, T) -> ApiResult<Outcome> + Send + 'static,
    {
        let me = if opts.anonymous {
            None
        } else {
            Some(self.caller()?)
        };
        let parsed = parse(&self.params)?;
        let (hub, server_url, mut params) =
            (self.hub.clone(), self.server_url.clone(), self.params);
        let decide = move |realm: &Realm, me: Option<&User>, cx: &mut Cx| {
            let outcome = rule(
                &mut Ctx::new(realm, me, &mut params, cx, &hub, &server_url),
                parsed,
            )?;
            let answer: (Map<String, Value>, Vec<String>) = (outcome.body, params.unused());
            Ok(Decided {
                changes: outcome.changes,
                answer: Box::new(answer),
            })
        };
        let reply = self
            .realm
            .send(Call {
                me,
                decide: Box::new(decide),
            })
            .await
            .map_err(|e| {
                tracing::error!("realm actor unavailable: {e}");
                ApiError::internal()
            })??;
        let (body, ignored) = *reply
            .answer
            .downcast::<(Map<String, Value>, Vec<String>)>()
            .map_err(|_| ApiError::internal())?;
        if let Some(ticket) = reply.ticket {
            self.state.durability.wait(ticket).await.map_err(|e| {
                tracing::error!("a write was not made durable: {e}");
                ApiError::storage_failed()
            })?;
        }
        // Read-your-writes: what this answer acknowledges is visible before it is sent.
        self.hub.release(self.state.durability.visible());
        Ok(with_ignored(body, ignored))
    }

    /// Runs a read rule on this worker against the published version; the realm actor
    /// is not involved. For reads whose cost is small and does not grow with the realm.
    pub async fn read<F>(self, opts: CallOpts, rule: F) -> ApiResult<Map<String, Value>>
    where
        F: FnOnce(&mut Ctx<'_>) -> ApiResult<Outcome>,
    {
        self.read_private(opts, rule).map(|(body, _)| body)
    }

    /// As `read`, also returning the rule's private value (never sent to the client).
    pub fn read_private<F>(
        mut self,
        opts: CallOpts,
        rule: F,
    ) -> ApiResult<(Map<String, Value>, Option<String>)>
    where
        F: FnOnce(&mut Ctx<'_>) -> ApiResult<Outcome>,
    {
        let version = self.hub.current();
        let me = if opts.anonymous {
            None
        } else {
            Some(self.authenticate(&version)?)
        };
        let mut cx = Cx::new(&*self.clock);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            rule(&mut Ctx::new(
                &version,
                me,
                &mut self.params,
                &mut cx,
                &self.hub,
                &self.server_url,
            ))
        }))
        .map_err(|_| {
            tracing::error!("a read rule panicked");
            ApiError::internal()
        })??;
        let ignored = self.params.unused();
        Ok((with_ignored(outcome.body, ignored), outcome.private))
    }

    /// A read whose cost grows with the realm (listings, registration): the rule and
    /// the JSON encoding run on the blocking pool, so the HTTP worker keeps serving
    /// small requests meanwhile.
    pub async fn read_large<F>(self, opts: CallOpts, rule: F) -> ApiResponse
    where
        F: FnOnce(&mut Ctx<'_>) -> ApiResult<Outcome> + Send + 'static,
    {
        let bytes = web::block(move || {
            let body = self.read_private(opts, rule)?.0;
            serde_json::to_vec(&success_value(body)).map_err(|e| {
                tracing::error!("cannot encode a response: {e}");
                ApiError::internal()
            })
        })
        .await
        .map_err(|_| ApiError::internal())??;
        Ok(HttpResponse::Ok()
            .content_type(actix_web::http::header::ContentType::json())
            .body(bytes))
    }
}

/// Adds `ignored_parameters_unsupported` when some parameters were not read.
pub fn with_ignored(mut body: Map<String, Value>, ignored: Vec<String>) -> Map<String, Value> {
    if !ignored.is_empty() {
        body.insert("ignored_parameters_unsupported".into(), ignored.into());
    }
    body
}

/// `result`, `msg`, then the data.
fn success_value(body: Map<String, Value>) -> Value {
    let mut m = Map::with_capacity(body.len() + 2);
    m.insert("result".into(), "success".into());
    m.insert("msg".into(), "".into());
    m.extend(body);
    Value::Object(m)
}

/// Renders a success body: `result`, `msg`, then the data.
pub fn success(body: Map<String, Value>) -> HttpResponse {
    HttpResponse::Ok().json(success_value(body))
}

/// A handler's result.
pub type ApiResponse = ApiResult<HttpResponse>;

impl FromRequest for ApiRequest {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let payload = payload.take();
        Box::pin(async move {
            let state = req
                .app_data::<web::Data<AppState>>()
                .cloned()
                .ok_or_else(ApiError::internal)?;
            let handle = state.registry.for_host(&auth::host(&req)).ok_or_else(|| {
                ApiError::new(404, ErrorCode::NonexistentSubdomain, "Invalid subdomain")
            })?;
            let query = serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
                .map_err(|_| ApiError::bad_request("Malformed query string"))?;
            let (body, files) = if req.method() == actix_web::http::Method::GET {
                (Vec::new(), Vec::new())
            } else {
                read_body(&req, payload).await?
            };
            Ok(ApiRequest {
                realm: handle.addr,
                hub: handle.hub,
                credentials: auth::credentials(&req),
                params: Params::new(query, body),
                files,
                state,
                clock: handle.clock,
                server_url: handle.server_url,
            })
        })
    }
}

/// Form parameters and file parts.
type Body = (Vec<(String, String)>, Vec<UploadedFile>);

/// Reads form parameters (and files) from an urlencoded or multipart body.
async fn read_body(req: &HttpRequest, payload: Payload) -> ApiResult<Body> {
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        return read_multipart(req, payload).await;
    }
    let bytes = read_limited(payload).await?;
    if bytes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let params = serde_urlencoded::from_bytes(&bytes)
        .map_err(|_| ApiError::bad_request("Malformed request body"))?;
    Ok((params, Vec::new()))
}

fn too_large() -> ApiError {
    ApiError::new(413, ErrorCode::BadRequest, "Request body too large")
}

async fn read_limited(mut payload: Payload) -> ApiResult<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| ApiError::bad_request("Malformed request body"))?;
        if out.len() + chunk.len() > BODY_LIMIT {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Parts with a file name are files (Zulip's `request.FILES`), the others parameters.
async fn read_multipart(req: &HttpRequest, payload: Payload) -> ApiResult<Body> {
    let malformed = |_| ApiError::bad_request("Malformed multipart body");
    let mut form = actix_multipart::Multipart::new(req.headers(), payload);
    let (mut params, mut files) = (Vec::new(), Vec::new());
    let (mut total, mut file_total) = (0usize, 0usize);
    while let Some(mut field) = form.try_next().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field
            .content_disposition()
            .and_then(|cd| cd.get_filename())
            .map(str::to_owned);
        let content_type = field.content_type().map(|m| m.to_string());
        let mut value = Vec::new();
        while let Some(chunk) = field.try_next().await.map_err(malformed)? {
            let (sum, limit) = match file_name {
                Some(_) => (&mut file_total, UPLOAD_LIMIT),
                None => (&mut total, BODY_LIMIT),
            };
            *sum += chunk.len();
            if *sum > limit {
                return Err(too_large());
            }
            value.extend_from_slice(&chunk);
        }
        match file_name {
            Some(file_name) => files.push(UploadedFile {
                field: name,
                file_name,
                content_type,
                bytes: value,
            }),
            None => {
                let value = String::from_utf8(value)
                    .map_err(|_| ApiError::bad_request(format!("{name} is not a string")))?;
                params.push((name, value));
            }
        }
    }
    Ok((params, files))
}

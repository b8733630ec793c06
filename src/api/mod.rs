//! The HTTP layer: the route table, the request extractor, and the helpers that run a
//! read on the worker against the published version (`read`, `read_large`) or send a
//! write to the realm actor (`call`), and render the reply.

pub mod alert_words;
pub mod attachments;
pub mod auth;
pub mod bots;
pub mod calls;
pub mod channels;
pub mod drafts;
pub mod emoji;
pub mod error;
pub mod events;
pub mod groups;
pub mod invites;
pub mod lifecycle;
pub mod linkifiers;
pub mod messages;
pub mod middleware;
pub mod muted_users;
pub mod navigation;
pub mod origin;
pub mod params;
pub mod password_reset;
pub mod playgrounds;
pub mod presence;
pub mod profile_fields;
pub mod push;
pub mod realm;
pub mod realm_export;
pub mod reminders;
pub mod rule;
pub mod saved_snippets;
pub mod server;
pub mod session;
pub mod settings;
pub mod signup;
pub mod status;
pub mod tus;
pub mod user_topics;
pub mod users;
pub mod webapp;
pub mod webhooks;
pub mod wire;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use futures_util::future::LocalBoxFuture;
use futures_util::{StreamExt, TryStreamExt};
use serde_json::{Map, Value};

use crate::actor::RealmClient;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::health::StoreHealth;
use crate::hub::EventHub;
use crate::realm::messages::rows::MessageRowsHandle;
use crate::realm::{Clock, Cx, Realm, Rule, User, UserId};
use crate::registry::Registry;
use params::Params;
pub use rule::{Credentials, Ctx, Outcome};

/// Zulip's `bot_type` of incoming webhook bots, which may only send messages.
pub const INCOMING_WEBHOOK_BOT: u8 = 2;

/// Largest request body accepted, files of a multipart body aside.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;
/// Largest total of the files of a multipart body (Zulip's `DATA_UPLOAD_MAX_MEMORY_SIZE`,
/// 25 MiB): each endpoint applies its own, smaller limit with Zulip's message.
pub const UPLOAD_LIMIT: usize = 25 * 1024 * 1024;

/// Largest multipart body, every byte counted: the files' and the parameters' limits.
pub const MULTIPART_LIMIT: usize = UPLOAD_LIMIT + BODY_LIMIT;
/// What each multipart part is counted for beyond its name and value (its boundary
/// and headers), so that many empty parts cannot get around `BODY_LIMIT`.
const PART_OVERHEAD: usize = 128;

/// Shared by every handler.
pub struct AppState {
    pub registry: Registry,
    /// Whether writes can be made durable and messages read (readiness, metrics).
    pub health: Arc<dyn StoreHealth>,
    /// Started with `--dev`: `POST /dev_fetch_api_key` works.
    pub dev: bool,
    /// `--webhook-allow-private`: outgoing webhooks may reach private networks.
    pub webhook_allow_private: bool,
    /// When each bot's owner was last told about the bot's failed sends (by realm and
    /// bot): at most one notice a minute (`api::messages::remind_bot_owner`).
    pub owner_notices: dashmap::DashMap<(String, UserId), std::time::Instant>,
    /// Upload settings and the file store.
    pub uploads: Arc<attachments::Uploads>,
    /// Resumable uploads in progress (`/api/v1/tus`).
    pub tus: tus::Partials,
    /// `--push-relay-url`: E2EE push devices and notifications.
    pub push_relay: Option<Arc<crate::push_relay::PushRelay>>,
    /// Outgoing email (`--smtp-url`; the log on a development server without it).
    pub mailer: Option<crate::mail::MailQueue>,
    /// API rate limits (`--rate-limit`).
    pub rate_limits: Arc<crate::limits::RateLimiter>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`--trusted-proxy`).
    pub trusted_proxies: Arc<[ipnet::IpNet]>,
    /// Which requests the log gets a line for (`--access-log`).
    pub access_log: middleware::logging::AccessLogPolicy,
}

/// One path and its methods; any other method on it answers 405 with Zulip's body.
macro_rules! endpoint {
    ($path:literal, $($method:ident => $handler:path),+ $(,)?) => {
        web::resource($path)
            $(.route(method::$method().to($handler)))+
            .default_service(web::to(|| error::method_not_allowed(&[$(stringify!($method)),+])))
    };
}

/// The route of each method the route table names: actix-web's, and `OPTIONS`, which
/// it has no helper for (the tus protocol asks for it).
mod method {
    pub use actix_web::web::{delete, get, head, patch, post, put};

    pub fn options() -> actix_web::Route {
        actix_web::web::method(actix_web::http::Method::OPTIONS)
    }
}

/// The route table: every endpoint in one place.
pub fn routes(cfg: &mut web::ServiceConfig) {
    // The API first, each path in full. The router tries the services in order, and
    // a pattern with a parameter (`/join/{key}/`) costs a regex match for every request
    // it is tried on; a scope for `/api/v1` would be one more layer to route through (a
    // match of its prefix and a boxed call) for every API request.
    cfg
        // What every client sends all day (presence pings, long-polls, messages, its
        // own user), first: each place before a route costs its requests a match.
        .service(endpoint!("/api/v1/users/me/presence", post => presence::update_presence))
        .service(endpoint!("/api/v1/events", get => events::get_events, delete => events::delete_events))
        .service(endpoint!("/api/v1/messages", get => messages::get_messages, post => messages::send_message))
        .service(endpoint!("/api/v1/users/me", get => users::get_own_user, delete => lifecycle::deactivate_own_user))
        .service(endpoint!("/api/v1/register", post => events::register))
        .service(endpoint!("/api/v1/messages/flags", post => messages::update_flags))
        .service(endpoint!("/api/v1/typing", post => messages::set_typing_status))
        // The rest of the API.
        .service(endpoint!("/api/v1/server_settings", get => server::server_settings))
        .service(endpoint!("/static/generated/emoji/emoji_api.json", get => server::emoji_data))
        .service(endpoint!("/api/v1/dev_fetch_api_key", post => server::dev_fetch_api_key))
        .service(endpoint!("/api/v1/fetch_api_key", post => server::fetch_api_key))
        .service(endpoint!("/api/v1/users", get => users::get_users, post => users::create_user))
        .service(endpoint!("/api/v1/users/me/subscriptions", get => channels::get_subscriptions, post => channels::subscribe, patch => channels::update_subscriptions, delete => channels::unsubscribe))
        .service(endpoint!("/api/v1/users/me/subscriptions/properties", post => channels::update_subscription_properties))
        .service(endpoint!("/api/v1/users/me/apns_device_token", post => push::add_apns_device_token, delete => push::remove_apns_device_token))
        .service(endpoint!("/api/v1/users/me/android_gcm_reg_id", post => push::add_android_reg_id, delete => push::remove_android_reg_id))
        .service(endpoint!("/api/v1/mobile_push/register", post => push::register_push_device))
        .service(endpoint!("/api/v1/mobile_push/e2ee/test_notification", post => push::e2ee_test_notification))
        .service(endpoint!("/api/v1/users/me/status", post => status::update_status))
        // Topics and people: topic visibility, muted users, alert words.
        .service(endpoint!("/api/v1/user_topics", post => user_topics::update_user_topic))
        .service(endpoint!("/api/v1/users/me/subscriptions/muted_topics", patch => user_topics::update_muted_topic))
        .service(endpoint!("/api/v1/users/me/muted_users/{muted_user_id}", post => muted_users::mute_user, delete => muted_users::unmute_user))
        .service(endpoint!("/api/v1/users/me/alert_words", get => alert_words::get_alert_words, post => alert_words::add_alert_words, delete => alert_words::remove_alert_words))
        .service(endpoint!("/api/v1/users/{user_id_or_email}/presence", get => presence::get_user_presence))
        .service(endpoint!("/api/v1/users/{user_id}/status", get => status::get_user_status, post => status::update_user_status_admin))
        .service(endpoint!("/api/v1/realm/presence", get => presence::get_realm_presence))
        .service(endpoint!("/api/v1/realm/emoji", get => emoji::get_realm_emoji))
        .service(endpoint!("/api/v1/realm/emoji/{emoji_name:.+}", post => emoji::upload_emoji, delete => emoji::deactivate_emoji))
        .service(endpoint!("/api/v1/users/{user_id}/subscriptions/{stream_id}", get => channels::get_subscription_status))
        .service(endpoint!("/api/v1/users/{user}", get => users::get_user, patch => lifecycle::update_user, delete => lifecycle::deactivate_user))
        .service(endpoint!("/api/v1/users/{user_id}/reactivate", post => lifecycle::reactivate_user))
        .service(endpoint!("/api/v1/channels/create", post => channels::create_channel))
        .service(endpoint!("/api/v1/streams", get => channels::get_streams))
        .service(endpoint!("/api/v1/streams/{stream_id}", get => channels::get_stream, patch => channels::update_stream, delete => channels::archive_stream))
        .service(endpoint!("/api/v1/streams/{stream_id}/members", get => channels::get_stream_members))
        .service(endpoint!("/api/v1/get_stream_id", get => channels::get_stream_id))
        .service(endpoint!("/api/v1/default_streams", post => channels::add_default_stream, delete => channels::remove_default_stream))
        .service(endpoint!("/api/v1/channel_folders/create", post => channels::create_channel_folder))
        .service(endpoint!("/api/v1/channel_folders", get => channels::get_channel_folders, patch => channels::reorder_channel_folders))
        .service(endpoint!("/api/v1/channel_folders/{channel_folder_id}", patch => channels::update_channel_folder))
        .service(endpoint!("/api/v1/bots", post => bots::create_bot, get => bots::get_bots))
        .service(endpoint!("/api/v1/bots/{bot_id}", patch => bots::update_bot, delete => lifecycle::deactivate_bot))
        .service(endpoint!("/api/v1/bot_storage", get => bots::get_storage, put => bots::update_storage, delete => bots::remove_storage))
        .service(endpoint!("/api/v1/messages/flags/narrow", post => messages::update_flags_for_narrow))
        .service(endpoint!("/api/v1/messages/render", post => messages::render_message))
        .service(endpoint!("/api/v1/messages/matches_narrow", get => messages::messages_match_narrow))
        .service(endpoint!("/api/v1/mark_all_as_read", post => messages::mark_all_as_read))
        .service(endpoint!("/api/v1/mark_stream_as_read", post => messages::mark_stream_as_read))
        .service(endpoint!("/api/v1/mark_topic_as_read", post => messages::mark_topic_as_read))
        .service(endpoint!("/api/v1/messages/{message_id}", get => messages::get_message, patch => messages::update_message, delete => messages::delete_message))
        .service(endpoint!("/api/v1/messages/{message_id}/history", get => messages::get_message_history))
        .service(endpoint!("/api/v1/messages/{message_id}/reactions", post => messages::add_reaction, delete => messages::remove_reaction))
        .service(endpoint!("/api/v1/users/me/{stream_id}/topics", get => messages::get_topics))
        .service(endpoint!("/api/v1/scheduled_messages", get => messages::get_scheduled_messages, post => messages::create_scheduled_message))
        .service(endpoint!("/api/v1/scheduled_messages/{scheduled_message_id}", patch => messages::update_scheduled_message, delete => messages::delete_scheduled_message))
        .service(endpoint!("/api/v1/user_groups/create", post => groups::create_user_group))
        .service(endpoint!("/api/v1/user_groups", get => groups::get_user_groups))
        .service(endpoint!("/api/v1/user_groups/{user_group_id}", patch => groups::update_user_group))
        .service(endpoint!("/api/v1/user_groups/{user_group_id}/members", get => groups::get_user_group_members, post => groups::update_user_group_members))
        .service(endpoint!("/api/v1/user_groups/{user_group_id}/members/{user_id}", get => groups::get_is_user_group_member))
        .service(endpoint!("/api/v1/user_groups/{user_group_id}/subgroups", get => groups::get_user_group_subgroups, post => groups::update_user_group_subgroups))
        .service(endpoint!("/api/v1/user_groups/{user_group_id}/deactivate", post => groups::deactivate_user_group))
        .service(endpoint!("/api/v1/realm", patch => realm::update_realm))
        // Onboarding: the Welcome Bot's custom message, as a test.
        .service(endpoint!("/api/v1/realm/test_welcome_bot_custom_message", post => realm::test_welcome_bot_custom_message))
        .service(endpoint!("/api/v1/navigation_views", get => navigation::get_navigation_views, post => navigation::add_navigation_view))
        .service(endpoint!("/api/v1/navigation_views/{fragment:.*}", patch => navigation::update_navigation_view, delete => navigation::remove_navigation_view))
        // Personal data: drafts, saved snippets, message reminders.
        .service(endpoint!("/api/v1/drafts", get => drafts::get_drafts, post => drafts::create_drafts))
        .service(endpoint!("/api/v1/drafts/{draft_id}", patch => drafts::edit_draft, delete => drafts::delete_draft))
        .service(endpoint!("/api/v1/saved_snippets", get => saved_snippets::get_saved_snippets, post => saved_snippets::create_saved_snippet))
        .service(endpoint!("/api/v1/saved_snippets/{saved_snippet_id}", patch => saved_snippets::edit_saved_snippet, delete => saved_snippets::delete_saved_snippet))
        .service(endpoint!("/api/v1/reminders", get => reminders::get_reminders, post => reminders::create_reminder))
        .service(endpoint!("/api/v1/reminders/{reminder_id}", delete => reminders::delete_reminder))
        .service(endpoint!("/api/v1/realm/linkifiers", get => linkifiers::get_linkifiers, patch => linkifiers::reorder_linkifiers))
        .service(endpoint!("/api/v1/realm/filters", post => linkifiers::add_linkifier))
        .service(endpoint!("/api/v1/realm/filters/{filter_id}", patch => linkifiers::update_linkifier, delete => linkifiers::remove_linkifier))
        .service(endpoint!("/api/v1/realm/profile_fields", get => profile_fields::get_profile_fields, post => profile_fields::create_profile_field, patch => profile_fields::reorder_profile_fields))
        .service(endpoint!("/api/v1/realm/profile_fields/{field_id}", patch => profile_fields::update_profile_field, delete => profile_fields::delete_profile_field))
        .service(endpoint!("/api/v1/users/me/profile_data", patch => profile_fields::update_profile_data, delete => profile_fields::remove_profile_data))
        .service(endpoint!("/api/v1/user_uploads", post => attachments::upload_file))
        .service(endpoint!("/api/v1/user_uploads/{realm_id}/{path:.*}", get => attachments::get_file_temporary_url))
        .service(endpoint!("/api/v1/tus", options => tus::capabilities, post => tus::create_upload))
        .service(endpoint!("/api/v1/tus/{upload_id}", options => tus::capabilities, head => tus::upload_offset, patch => tus::append_to_upload, delete => tus::terminate_upload))
        .service(endpoint!("/api/v1/attachments", get => attachments::get_attachments))
        .service(endpoint!("/api/v1/attachments/{attachment_id}", delete => attachments::remove_attachment))
        // Personal settings, their realm defaults, and read receipts.
        .service(endpoint!("/api/v1/settings", patch => settings::update_settings))
        .service(endpoint!("/api/v1/settings/display", patch => settings::update_settings))
        .service(endpoint!("/api/v1/settings/notifications", patch => settings::update_settings))
        .service(endpoint!("/api/v1/realm/user_settings_defaults", patch => settings::update_settings_defaults))
        .service(endpoint!("/api/v1/messages/{message_id}/read_receipts", get => messages::get_read_receipts))
        // Invitations.
        .service(endpoint!("/api/v1/invites", get => invites::get_invites, post => invites::invite_users))
        .service(endpoint!("/api/v1/invites/multiuse", post => invites::create_invite_link))
        .service(endpoint!("/api/v1/invites/multiuse/{invite_id}", delete => invites::revoke_invite_link))
        .service(endpoint!("/api/v1/invites/{invite_id}", delete => invites::revoke_invite))
        .service(endpoint!("/api/v1/invites/{invite_id}/resend", post => invites::resend_invite))
        // Smaller endpoints: edit typing, topic deletion, reports, playgrounds, calls, push test.
        .service(endpoint!("/api/v1/messages/{message_id}/typing", post => messages::set_typing_status_for_edit))
        .service(endpoint!("/api/v1/streams/{stream_id}/delete_topic", post => channels::delete_topic))
        .service(endpoint!("/api/v1/users/{user_id}/channels", get => channels::get_user_channels))
        .service(endpoint!("/api/v1/bots/{bot_id}/api_key", get => bots::get_bot_api_key))
        .service(endpoint!("/api/v1/streams/{stream_id}/email_address", get => channels::get_stream_email_address))
        .service(endpoint!("/api/v1/messages/{message_id}/report", post => messages::report_message))
        .service(endpoint!("/api/v1/realm/playgrounds", post => playgrounds::add_playground))
        .service(endpoint!("/api/v1/realm/playgrounds/{playground_id}", delete => playgrounds::remove_playground))
        // Data exports of the organization (realm archives).
        .service(endpoint!("/api/v1/export/realm", get => realm_export::get_realm_exports, post => realm_export::export_realm))
        .service(endpoint!("/api/v1/export/realm/consents", get => realm_export::get_export_consents))
        .service(endpoint!("/api/v1/export/realm/{export_id}", delete => realm_export::delete_realm_export))
        .service(endpoint!("/api/v1/calls/bigbluebutton/create", get => calls::create_bigbluebutton_call))
        .service(endpoint!("/api/v1/calls/constructorgroups/create", post => calls::create_constructor_groups_call))
        .service(endpoint!("/api/v1/mobile_push/test_notification", post => push::test_notification))
        // Incoming webhooks: one URL per integration (`crate::integrations`).
        .service(endpoint!("/api/v1/external/{integration_name}", post => webhooks::incoming))
        .service(endpoint!("/health", get => server::health))
        // The icon `realm_icon` names, and the browser's favicon.
        .service(endpoint!("/static/images/logo/zulip-icon-128x128.png", get => server::icon))
        .service(endpoint!("/favicon.ico", get => server::icon))
        .service(endpoint!("/health/ready", get => server::ready))
        // The sign-up page of invitation links (HTML).
        .service(endpoint!("/join/{key}/", get => signup::show, post => signup::submit))
        .service(endpoint!("/join/{key}", get => signup::add_slash))
        // The web client: its page and assets; its sessions' login pages, logout, the
        // development login.
        .service(endpoint!("/", get => webapp::home))
        .service(endpoint!("/static/app/{file:.*}", get => webapp::asset))
        .service(endpoint!("/login/", get => session::show_login))
        .service(endpoint!("/accounts/login/", get => session::show_login, post => session::submit_login))
        .service(endpoint!("/accounts/logout/", post => session::logout))
        .service(endpoint!("/accounts/password/reset/", get => password_reset::show_request, post => password_reset::submit_request))
        .service(endpoint!("/accounts/password/reset/done/", get => password_reset::show_sent))
        .service(endpoint!("/accounts/password/reset/{user_id}/{token}/", get => password_reset::show_set, post => password_reset::submit_set))
        .service(endpoint!("/devlogin/", get => session::show_dev_login))
        .service(endpoint!("/accounts/login/local/", post => session::submit_dev_login))
        .service(web::scope("/json").default_service(web::to(error::session_required)))
        .service(
            web::scope("/user_uploads")
                .service(endpoint!("/temporary/{token}/{filename}", get => attachments::serve_temporary))
                .service(endpoint!("/{realm_id}/{path:.*}", get => attachments::serve_file)),
        )
        .service(
            web::resource("/user_avatars/{realm}/emoji/images/{file_name}")
                .route(web::get().to(emoji::emoji_image)),
        )
        .service(
            web::resource("/user_avatars/exports/{realm}/{token}/{file_name}")
                .route(web::get().to(realm_export::download)),
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
    /// Writes to the realm go through here.
    pub realm: RealmClient,
    pub hub: Arc<EventHub>,
    pub credentials: Result<Credentials, ApiError>,
    pub params: Params,
    /// The files of a multipart body.
    pub files: Vec<UploadedFile>,
    pub state: web::Data<AppState>,
    clock: Arc<dyn Clock>,
    server_url: Arc<str>,
    /// The realm's message rows (reads on this worker), through the realm's port.
    pub messages: MessageRowsHandle,
    /// The client's name: the `client` parameter, else the `User-Agent` product.
    pub client: String,
    /// The client takes gzip answers (`Accept-Encoding`): for handlers that send a
    /// shared body's compressed copy (`middleware::compress` compresses the others).
    pub accepts_gzip: bool,
    /// The body as sent, for incoming webhooks (`/api/v1/external/...`), whose services
    /// post JSON; `None` elsewhere.
    pub raw_body: Option<Vec<u8>>,
    /// Whether an incoming webhook bot may make this request: Zulip lets it send
    /// messages (`POST /messages`, the webhook URLs) and nothing else.
    pub(crate) webhook_bot_allowed: bool,
    /// The version and user the credentials were already found valid for (the rate
    /// limit authenticates them), if they were.
    checked: Option<(Arc<Realm>, UserId)>,
}

impl ApiRequest {
    /// The realm's message store, once the message database is open: at start-up the
    /// request waits here (bounded, then a 503) so that neither this worker nor the realm
    /// actor blocks on the opening (see `storage::messages`).
    pub async fn message_store(&self) -> ApiResult<MessageRowsHandle> {
        self.messages.ready().await.map_err(|why| {
            tracing::warn!("message store unavailable: {why}");
            ApiError::messages_unavailable()
        })?;
        Ok(self.messages.clone())
    }

    /// The realm's URL, as the server serves it.
    pub fn server_url(&self) -> Arc<str> {
        self.server_url.clone()
    }

    /// The server's time (UNIX seconds), for checks made on this worker.
    pub fn now_secs(&self) -> i64 {
        self.clock.now_secs()
    }
}

/// Zulip's client name for a request: the `User-Agent`'s first product name
/// (`ZulipPython/0.9.1 ...` is `ZulipPython`), or "Unspecified".
fn client_name(req: &HttpRequest) -> String {
    req.headers()
        .get(actix_web::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split(['/', ' ']).next())
        .filter(|s| !s.is_empty())
        .map_or_else(
            || "Unspecified".to_owned(),
            |name| {
                // At most 30 characters, cut on a character boundary.
                match name.char_indices().nth(30) {
                    Some((end, _)) => name[..end].to_owned(),
                    None => name.to_owned(),
                }
            },
        )
}

/// A file as a response body, read a megabyte at a time on the blocking pool (memory
/// holds one piece); `held` lives as long as the stream (a scratch folder the file is
/// in, say).
pub(crate) fn file_pieces<T: Send + 'static>(
    file: std::fs::File,
    held: T,
) -> impl futures_util::Stream<Item = Result<web::Bytes, std::io::Error>> {
    futures_util::stream::unfold(Some((file, held)), |st| async move {
        let (mut file, held) = st?;
        let read = web::block(move || {
            use std::io::Read;
            let mut buf = vec![0u8; 1 << 20];
            let n = file.read(&mut buf)?;
            buf.truncate(n);
            Ok::<_, std::io::Error>((file, buf))
        })
        .await;
        match read {
            Ok(Ok((_, buf))) if buf.is_empty() => None,
            Ok(Ok((file, buf))) => Some((Ok(web::Bytes::from(buf)), Some((file, held)))),
            Ok(Err(e)) => Some((Err(e), None)),
            Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
        }
    })
}

/// A write's typed request, parsed on the worker, and its authenticated caller.
pub struct Parsed<Q> {
    pub me: UserId,
    pub req: Q,
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
        let me = self.authenticate_any(version)?;
        if me.bot_type == Some(INCOMING_WEBHOOK_BOT) && !self.webhook_bot_allowed {
            return Err(ApiError::bad_request(
                "This API is not available to incoming webhook bots.",
            ));
        }
        Ok(me)
    }

    /// The caller, whatever kind of user it is.
    fn authenticate_any<'r>(&self, version: &'r Realm) -> ApiResult<&'r User> {
        let c = self.credentials.as_ref().map_err(Clone::clone)?;
        if let Some((checked, id)) = &self.checked {
            // The same credentials against the same version: the same answer.
            if std::ptr::eq(Arc::as_ptr(checked), version) {
                if let Some(me) = version.user(*id) {
                    c.logged.set(me.id);
                    return Ok(me);
                }
            }
        }
        let me = c.user_in(version, self.clock.now_secs())?;
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

    /// What a task needs to write to this realm after the request was answered.
    pub fn writer(&self) -> RealmClient {
        self.realm.clone()
    }

    /// The first half of a write, on this worker: authenticates the caller against the
    /// published version, then `parse` checks what Zulip checks before reading (a role)
    /// and turns the parameters into the write's typed request.
    pub fn parse<Q>(
        &self,
        parse: impl FnOnce(&Realm, &User, &Params) -> ApiResult<Q>,
    ) -> ApiResult<Parsed<Q>> {
        let version = self.hub.current();
        let me = self.authenticate(&version)?;
        // As for reads: a panic while parsing answers a 500, not a dead worker.
        let req = catch_unwind(AssertUnwindSafe(|| parse(&version, me, &self.params))).map_err(
            |_| {
                tracing::error!("a write's parameter parsing panicked");
                ApiError::internal()
            },
        )??;
        Ok(Parsed { me: me.id, req })
    }

    /// The second half: sends the typed request and its rule (`Realm::decide_*`) to the
    /// realm actor; returns the rule's answer once what it wrote is durable and visible.
    pub async fn commit<Q, A>(&self, parsed: Parsed<Q>, decide: Rule<Q, A>) -> ApiResult<A>
    where
        Q: Send + 'static,
        A: Send + 'static,
    {
        self.realm.commit(parsed.me, parsed.req, decide).await
    }

    /// `parse`, then `commit`.
    pub async fn write<Q, A>(
        &self,
        parse: impl FnOnce(&Realm, &User, &Params) -> ApiResult<Q>,
        decide: Rule<Q, A>,
    ) -> ApiResult<A>
    where
        Q: Send + 'static,
        A: Send + 'static,
    {
        let parsed = self.parse(parse)?;
        self.commit(parsed, decide).await
    }

    /// A success answer with `body`, listing the parameters no one read.
    pub fn reply(&self, body: Map<String, Value>) -> ApiResponse {
        Ok(success(with_ignored(body, self.params.unused())))
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
            .insert_header(crate::api::json_content_type())
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

/// Zulip's success answer without data.
const SUCCESS_EMPTY: &[u8] = br#"{"result":"success","msg":""}"#;

/// Renders a success body: `result`, `msg`, then the data.
pub fn success(body: Map<String, Value>) -> HttpResponse {
    if body.is_empty() {
        // The same bytes the encoding below makes, without making them.
        return HttpResponse::Ok()
            .insert_header(crate::api::json_content_type())
            .body(web::Bytes::from_static(SUCCESS_EMPTY));
    }
    HttpResponse::Ok().json(success_value(body))
}

/// `Content-Type: application/json`, as a header ready to insert: a builder's
/// `content_type` would parse and check the text again for every answer.
pub fn json_content_type() -> (actix_web::http::header::HeaderName, HeaderValue) {
    (CONTENT_TYPE, HeaderValue::from_static("application/json"))
}

/// The `Content-Security-Policy` of every answer whose bytes a user chose (uploads,
/// custom emoji, data exports), as Zulip serves user content: nothing it holds runs or
/// loads anything, and opened as a page it is a sandbox of its own origin.
pub const USER_CONTENT_CSP: &str = "default-src 'none'; sandbox";

/// Marks an answer as user content: `X-Content-Type-Options: nosniff` (the browser
/// keeps to the type it is given, so an upload said to be an image is never run as
/// a page or a script) and `USER_CONTENT_CSP`.
pub fn user_content(
    builder: &mut actix_web::HttpResponseBuilder,
) -> &mut actix_web::HttpResponseBuilder {
    use actix_web::http::header::{CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
    builder
        .insert_header((X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .insert_header((
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(USER_CONTENT_CSP),
        ))
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
            let host = origin::host(&req);
            let handle = state.registry.for_host(&host).ok_or_else(|| {
                if req.path() == "/api/v1/events" && state.registry.departed(&host) {
                    // The realm left this node: its queues are gone, so its clients
                    // register again (through the router, on its new node).
                    let id =
                        serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
                            .ok()
                            .and_then(|q| q.into_iter().find(|(k, _)| k == "queue_id"))
                            .map(|(_, v)| v)
                            .unwrap_or_default();
                    return crate::hub::bad_queue(&id);
                }
                ApiError::new(404, ErrorCode::NonexistentSubdomain, "Invalid subdomain")
            })?;
            let query = form_pairs(req.query_string().as_bytes());
            let webhook = is_webhook_path(req.path());
            let mut raw_body = None;
            let (body, files) = if req.method() == actix_web::http::Method::GET {
                (Vec::new(), Vec::new())
            } else {
                middleware::limits::check_before_body(&req, &handle)?;
                if webhook && !is_multipart(&req) {
                    // Services post JSON; Django reads form fields only from a form.
                    let bytes = read_limited(payload).await?;
                    let pairs = if is_form(&req) {
                        form_pairs(&bytes)
                    } else {
                        Vec::new()
                    };
                    raw_body = Some(bytes);
                    (pairs, Vec::new())
                } else {
                    read_body(&req, payload).await?
                }
            };
            let webhook_bot_allowed = webhook
                || (req.method() == actix_web::http::Method::POST
                    && req.path() == "/api/v1/messages");
            let params = Params::new(query, body);
            let client = params
                .opt_str("client")
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| client_name(&req));
            let (credentials, checked) = credentials_of(&req);
            Ok(ApiRequest {
                realm: handle.client,
                hub: handle.hub,
                credentials,
                checked,
                params,
                files,
                state,
                clock: handle.clock,
                server_url: handle.server_url,
                messages: handle.messages,
                client,
                accepts_gzip: middleware::compress::accepts_gzip(&req),
                raw_body,
                webhook_bot_allowed,
            })
        })
    }
}

/// The request's credentials, and the version and user they were already found valid
/// for, if they were (`auth::Authenticated`).
type CheckedCredentials = (Result<Credentials, ApiError>, Option<(Arc<Realm>, UserId)>);

fn credentials_of(req: &HttpRequest) -> CheckedCredentials {
    match auth::Authenticated::take(req) {
        Some(a) => (Ok(a.credentials), Some((a.version, a.user_id))),
        None => (auth::credentials(req), None),
    }
}

/// Form parameters and file parts.
type Body = (Vec<(String, String)>, Vec<UploadedFile>);

/// Reads form parameters (and files) from an urlencoded or multipart body.
async fn read_body(req: &HttpRequest, payload: Payload) -> ApiResult<Body> {
    if is_multipart(req) {
        return read_multipart(req, payload).await;
    }
    let bytes = read_limited(payload).await?;
    if bytes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    Ok((form_pairs(&bytes), Vec::new()))
}

/// Where incoming webhooks post (`POST /api/v1/external/<integration>`).
pub(crate) fn is_webhook_path(path: &str) -> bool {
    path.starts_with(WEBHOOK_PREFIX)
}

/// The path of the incoming webhook URLs, up to the integration's name.
pub(crate) const WEBHOOK_PREFIX: &str = "/api/v1/external/";

/// Whether the request's `Content-Type` is `application/x-www-form-urlencoded`.
fn is_form(req: &HttpRequest) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// Whether the request's `Content-Type` is `multipart/form-data` (in any case).
pub(crate) fn is_multipart(req: &HttpRequest) -> bool {
    const MULTIPART: &str = "multipart/form-data";
    req.headers()
        .get(CONTENT_TYPE)
        // Visible ASCII only, as before: a value with other bytes is not multipart.
        .filter(|v| v.to_str().is_ok())
        .and_then(|v| v.as_bytes().get(..MULTIPART.len()))
        .is_some_and(|start| start.eq_ignore_ascii_case(MULTIPART.as_bytes()))
}

/// The name-value pairs of a query string or urlencoded body: `+` is a space, escapes
/// are decoded, and bytes that are not UTF-8 become U+FFFD (as `serde_urlencoded`
/// reads pairs: no input is refused).
fn form_pairs(input: &[u8]) -> Vec<(String, String)> {
    if input.is_empty() {
        return Vec::new();
    }
    // Nothing to decode (no `%`, no `+`, UTF-8 already): the pieces as they are, cut
    // where `form_urlencoded` cuts them (`&` between pairs, empty pieces skipped, the
    // first `=` between name and value). `form_pairs_take_what_form_urlencoded_gives`
    // checks the two agree.
    if !input.iter().any(|&b| b == b'%' || b == b'+') {
        if let Ok(text) = std::str::from_utf8(input) {
            return text
                .split('&')
                .filter(|piece| !piece.is_empty())
                .map(|piece| {
                    let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                    (name.to_owned(), value.to_owned())
                })
                .collect();
        }
    }
    form_urlencoded::parse(input).into_owned().collect()
}

pub(crate) fn too_large() -> ApiError {
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
    // A form with no fields (zulip-js's `queues.register({})`) is sent as a body
    // holding only the closing boundary, or nothing at all; Django reads either as
    // an empty form, where actix-multipart refuses it. A short body is read whole
    // and looked at first.
    let headers = req.headers();
    let short = match headers.get(actix_web::http::header::CONTENT_LENGTH) {
        Some(length) => length
            .to_str()
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|n| n <= EMPTY_FORM_MAX),
        // Neither a length nor chunks: no body at all.
        None => !headers.contains_key(actix_web::http::header::TRANSFER_ENCODING),
    };
    if short {
        let bytes = read_limited(payload).await?;
        if is_empty_form(req, &bytes) {
            return Ok((Vec::new(), Vec::new()));
        }
        let stream = futures_util::stream::once(async move {
            Ok::<_, actix_web::error::PayloadError>(bytes::Bytes::from(bytes))
        });
        let mut form = actix_multipart::Multipart::new(req.headers(), stream);
        return read_parts(&mut form).await;
    }
    // Every byte counts, part headers and boundaries included.
    let (payload, over) = middleware::limits::counted(payload, MULTIPART_LIMIT);
    let mut form = actix_multipart::Multipart::new(req.headers(), payload);
    let result = read_parts(&mut form).await;
    if over.get() {
        return Err(too_large());
    }
    result
}

/// Bodies up to this length are read whole before parsing (see `read_multipart`).
const EMPTY_FORM_MAX: usize = 256;

/// Whether a multipart body holds no part at all: empty, or only the closing
/// delimiter `--BOUNDARY--` (blank lines around it allowed, as RFC 2046's
/// preamble and epilogue).
fn is_empty_form(req: &HttpRequest, body: &[u8]) -> bool {
    let text = match std::str::from_utf8(body) {
        Ok(text) => text.trim(),
        Err(_) => return false,
    };
    if text.is_empty() {
        return true;
    }
    let boundary = actix_web::HttpMessage::mime_type(req)
        .ok()
        .flatten()
        .and_then(|m| m.get_param("boundary").map(|b| b.as_str().to_owned()));
    boundary.is_some_and(|b| text == format!("--{b}--"))
}

async fn read_parts(form: &mut actix_multipart::Multipart) -> ApiResult<Body> {
    let malformed = |_| ApiError::bad_request("Malformed multipart body");
    let (mut params, mut files) = (Vec::new(), Vec::new());
    let (mut total, mut file_total) = (0usize, 0usize);
    while let Some(mut field) = form.try_next().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field
            .content_disposition()
            .and_then(|cd| cd.get_filename())
            .map(str::to_owned);
        let content_type = field.content_type().map(|m| m.to_string());
        // A part's name and headers count against the parameters' limit.
        total += name.len() + PART_OVERHEAD;
        if total > BODY_LIMIT {
            return Err(too_large());
        }
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

#[cfg(test)]
mod tests {
    use super::{form_pairs, is_multipart};
    use actix_web::http::header::{HeaderValue, CONTENT_TYPE};
    use proptest::prelude::*;

    #[test]
    fn multipart_is_told_by_a_visible_ascii_content_type_in_any_case() {
        let with = |value: &[u8]| {
            let req = actix_web::test::TestRequest::default()
                .insert_header((CONTENT_TYPE, HeaderValue::from_bytes(value).unwrap()))
                .to_http_request();
            is_multipart(&req)
        };
        assert!(with(b"multipart/form-data; boundary=x"));
        assert!(with(b"Multipart/Form-Data; boundary=x"));
        assert!(!with(b"application/x-www-form-urlencoded"));
        assert!(!with(b"multipart/form"));
        // Not visible ASCII: read as a form, as a `to_str` check always did.
        assert!(!with(b"multipart/form-data; boundary=\xe9"));
        let none = actix_web::test::TestRequest::default().to_http_request();
        assert!(!is_multipart(&none));
    }

    fn decoded(input: &[u8]) -> Vec<(String, String)> {
        form_urlencoded::parse(input).into_owned().collect()
    }

    #[test]
    fn form_pairs_cut_as_form_urlencoded_does() {
        for input in [
            &b"status=active&ping_only=true"[..],
            b"a=1&&b=2",
            b"&a",
            b"a=",
            b"=v",
            b"a=b=c",
            b"a&b=",
            b"&&",
            b"a=1&a=2",
            b"to=%5B1%5D&content=hi+there",
            b"bad=\xff\xfe",
            b"x=%ZZ",
        ] {
            assert_eq!(form_pairs(input), decoded(input), "{input:?}");
        }
    }

    proptest! {
        #[test]
        fn form_pairs_take_what_form_urlencoded_gives(
            input in proptest::collection::vec(
                prop_oneof![
                    Just(b'&'), Just(b'='), Just(b'%'), Just(b'+'), Just(b'a'), Just(b'1'),
                    Just(0xc3u8), Just(0xa9u8), Just(0xffu8), Just(b' '),
                ],
                0..24,
            )
        ) {
            prop_assert_eq!(form_pairs(&input), decoded(&input));
        }
    }
}

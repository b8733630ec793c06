//! Presence: pings, the realm's presence, one user's presence. None of these reaches
//! the realm actor: presence is soft state beside the event hub (`crate::hub::presence`).

use std::io::Write;

use actix_web::body::SizedStream;
use actix_web::http::header::{CONTENT_ENCODING, VARY};
use actix_web::web::Bytes;
use actix_web::{web, HttpResponse};
use serde_json::Map;

use super::middleware::compress;
use super::{success, with_ignored, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::gzip::Joined;
use crate::hub::presence::{Listing, PresenceQuery};
use crate::realm::presence::PresenceStatus;
use crate::realm::status::require_human;
use crate::realm::{Realm, User};

/// A presence answer: `presences` is pre-rendered JSON (often a cached listing shared
/// by many answers): the body is its bytes between a head and a tail, in Zulip's key
/// order, sent without copying them. A client that takes gzip gets the listing's
/// shared compressed pieces between a stored head and tail (`crate::gzip`).
async fn presence_response(
    req: &ApiRequest,
    listing: Listing,
    now_ms: i64,
    with_update_id: bool,
) -> ApiResponse {
    let ignored = req.params.unused();
    let head = Bytes::from_static(br#"{"result":"success","msg":"","presences":"#);
    let mut tail = Vec::with_capacity(160);
    let server_timestamp =
        serde_json::to_string(&(now_ms as f64 / 1000.0)).map_err(|_| ApiError::internal())?;
    // Writing to a Vec cannot fail.
    let _ = write!(tail, ",\"server_timestamp\":{server_timestamp}");
    if with_update_id {
        let _ = write!(
            tail,
            ",\"presence_last_update_id\":{}",
            listing.last_update_id
        );
    }
    if !ignored.is_empty() {
        tail.extend_from_slice(b",\"ignored_parameters_unsupported\":");
        serde_json::to_writer(&mut tail, &ignored).map_err(|_| ApiError::internal())?;
    }
    tail.push(b'}');
    let len = (head.len() + listing.presences.len() + tail.len()) as u64;
    let mut response = HttpResponse::Ok();
    response.insert_header(crate::api::json_content_type());
    if len >= compress::MIN_BYTES {
        response.insert_header((VARY, "accept-encoding"));
    }
    // A streamed body: the middleware leaves it alone; the gzip copy is made here.
    let parts = if len >= compress::MIN_BYTES && req.accepts_gzip {
        let pieces = if listing.gzip_ready() {
            listing.gzip_pieces()
        } else {
            web::block(move || listing.gzip_pieces())
                .await
                .map_err(|_| ApiError::internal())?
        };
        let mut joined = Joined::new();
        joined.push_text(&head);
        pieces.iter().for_each(|p| joined.push(p));
        joined.push_text(&tail);
        response.insert_header((CONTENT_ENCODING, "gzip"));
        joined.finish()
    } else {
        vec![head, listing.presences, Bytes::from(tail)]
    };
    let len = parts.iter().map(Bytes::len).sum::<usize>() as u64;
    let stream =
        futures_util::stream::iter(parts.into_iter().map(Ok::<_, std::convert::Infallible>));
    Ok(response.body(SizedStream::new(len, stream)))
}

/// The listing a query asks for; one that is neither cached nor of a small realm is
/// rendered on the blocking pool (its cost grows with the realm).
async fn listing(req: &ApiRequest, q: PresenceQuery, now: i64) -> ApiResult<Listing> {
    let (realm, presence) = (req.hub.current(), req.hub.presence().clone());
    if let Some(hit) = presence.cached(&realm, q, now) {
        return Ok(hit);
    }
    if presence.renders_inline() {
        return Ok(presence.listing(&realm, q, now));
    }
    web::block(move || presence.listing(&realm, q, now))
        .await
        .map_err(|_| ApiError::internal())
}

/// # `POST /users/me/presence`
///
/// Reports the caller's presence (unless their `presence_enabled` setting is off) and,
/// unless `ping_only`, answers the realm's presence: legacy by default, modern with
/// `slim_presence` or `last_update_id` (then only what changed since).
pub async fn update_presence(req: ApiRequest) -> ApiResponse {
    let presence = req.hub.presence().clone();
    let (q, ping_only, now_ms, events) = req.check(|realm, me| {
        require_human(me)?;
        let p = &req.params;
        let history_limit_days = p.opt_int("history_limit_days")?;
        let last_update_id = p.opt_int("last_update_id")?;
        p.bool_or("new_user_input", false)?;
        let ping_only = p.bool_or("ping_only", false)?;
        // `last_update_id` means a modern client.
        let slim = p.bool_or("slim_presence", false)? || last_update_id.is_some();
        let status = PresenceStatus::parse(&p.str("status")?)?;
        let now_ms = presence.now_ms();
        let mut events = Vec::new();
        if realm.presence_enabled(me.id) {
            let out = presence.ping(me.id, now_ms.div_euclid(1000), status);
            if let (Some(entry), true) = (out.changed, out.newsworthy) {
                if realm.sends_presence_events() {
                    events = realm.presence_events(me, &entry, now_ms);
                }
            }
        }
        let q = PresenceQuery {
            slim,
            last_update_id,
            history_limit_days,
        };
        Ok((q, ping_only, now_ms, events))
    })?;
    req.hub.publish(events);
    if ping_only {
        return Ok(success(with_ignored(Map::new(), req.params.unused())));
    }
    let listing = listing(&req, q, now_ms.div_euclid(1000)).await?;
    presence_response(&req, listing, now_ms, true).await
}

/// # `GET /realm/presence`
///
/// Every active human's presence of the last 14 days, legacy format (seed 4.15).
pub async fn get_realm_presence(req: ApiRequest) -> ApiResponse {
    req.check(|_, _| Ok(()))?;
    let now_ms = req.hub.presence().now_ms();
    let listing = listing(&req, PresenceQuery::default(), now_ms.div_euclid(1000)).await?;
    presence_response(&req, listing, now_ms, false).await
}

/// An active user by id, or by API email (Zulip's `get_active_user*`).
fn active_user<'r>(realm: &'r Realm, key: &str) -> ApiResult<&'r User> {
    let user = match key.trim().parse::<i64>() {
        Ok(id) => u64::try_from(id).ok().and_then(|id| realm.user(id)),
        Err(_) => realm.user_by_api_email(key.trim()),
    };
    user.filter(|u| u.is_active)
        .ok_or_else(|| ApiError::bad_request("No such user"))
}

/// # `GET /users/{user_id_or_email}/presence`
pub async fn get_user_presence(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let key = path.into_inner();
    req.read(CallOpts::USER, move |c| {
        c.me()?;
        let slim = c.params.bool_or("slim_presence", false)?;
        let target = active_user(c.realm, &key)?;
        let entry = c.hub.presence().get(target.id);
        let presence =
            c.realm
                .view_user_presence(target, &key, entry.as_ref(), slim, c.cx.now_secs())?;
        let mut body = Map::new();
        body.insert("presence".into(), presence);
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

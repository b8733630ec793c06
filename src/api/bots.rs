//! Bots: creation, listing and editing (outgoing-webhook services included), and the
//! bots' key-value storage (`/bot_storage`).

use serde_json::{json, Map, Value};

use super::params::path_int;
use super::Outcome;
use super::{ApiRequest, ApiResponse, CallOpts};
use crate::error::{ApiError, ApiResult};
use crate::realm::bot_services::{check_payload_url, StorageRequest, UpdateBot};
use crate::realm::users::{gravatar_url, CreateBot};
use crate::realm::Realm;

/// # `POST /bots`
pub async fn create_bot(req: ApiRequest) -> ApiResponse {
    let bot = req
        .write(
            |realm, me, p| {
                // `add_bot_backend` is `require_member_or_admin`: no guests, no bots.
                realm.require_member_or_admin(me)?;
                let full_name = p.str("full_name")?;
                let short_name = p.str("short_name")?;
                let bot_type = p.opt_int("bot_type")?.unwrap_or(1);
                // Zulip's `Json[str]` with `check_url`, "" when absent.
                let payload_url = match p.opt_json("payload_url")? {
                    None => String::new(),
                    Some(Value::String(s)) => check_payload_url("payload_url", &s)?,
                    Some(_) => {
                        return Err(ApiError::bad_request("payload_url is not a string"));
                    }
                };
                Ok(CreateBot {
                    full_name,
                    short_name,
                    bot_type,
                    payload_url,
                    interface_type: p.opt_int("interface_type")?.unwrap_or(1),
                    service_name: p.opt_str("service_name"),
                })
            },
            Realm::decide_create_bot,
        )
        .await?;
    let mut body = Map::new();
    body.insert("user_id".into(), json!(bot.user_id));
    body.insert("api_key".into(), json!(bot.api_key));
    body.insert("avatar_url".into(), json!(gravatar_url(&bot.email, 1)));
    body.insert("default_sending_stream".into(), Value::Null);
    body.insert("default_events_register_stream".into(), Value::Null);
    body.insert("default_all_public_streams".into(), json!(false));
    req.reply(body)
}

/// # `PATCH /bots/{bot_id}`
///
/// The bot's name and its outgoing-webhook service (`service_payload_url`,
/// `service_interface`), for its owner and administrators.
pub async fn update_bot(req: ApiRequest, path: actix_web::web::Path<String>) -> ApiResponse {
    let bot_id = path_int("bot_id", &path)?;
    let parsed = req.parse(move |realm, me, p| {
        realm.require_member_or_admin(me)?;
        let interface = p.opt_int("service_interface")?.unwrap_or(1);
        let service = match p.opt_json("service_payload_url")? {
            None => None,
            Some(Value::String(s)) => {
                Some((check_payload_url("service_payload_url", &s)?, interface))
            }
            Some(_) => {
                return Err(ApiError::bad_request("service_payload_url is not a string"));
            }
        };
        Ok(UpdateBot {
            bot_id,
            full_name: p.opt_str("full_name"),
            service,
            interface,
        })
    })?;
    // Zulip answers the service parameters as given.
    let echo_url = parsed.req.service.as_ref().map(|(u, _)| u.clone());
    let echo_interface = parsed.req.interface;
    let bot = req.commit(parsed, Realm::decide_update_bot).await?;
    let mut body = Map::new();
    body.insert("full_name".into(), json!(bot.full_name));
    body.insert(
        "avatar_url".into(),
        json!(gravatar_url(&bot.email, bot.avatar_version)),
    );
    body.insert("service_interface".into(), json!(echo_interface));
    body.insert("service_payload_url".into(), json!(echo_url));
    body.insert("config_data".into(), Value::Null);
    body.insert("default_sending_stream".into(), Value::Null);
    body.insert("default_events_register_stream".into(), Value::Null);
    body.insert("default_all_public_streams".into(), json!(false));
    if let Some(owner) = bot.owner_email {
        body.insert("bot_owner".into(), json!(owner));
    }
    req.reply(body)
}

/// # `GET /bot_storage`
///
/// The caller's stored entries (`keys`, a JSON list; every entry when absent).
pub async fn get_storage(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let keys = c.params.opt_str_list("keys")?;
        let storage = c.realm.view_bot_storage(me, keys.as_deref())?;
        let mut body = Map::new();
        body.insert("storage".into(), json!(storage));
        Ok(Outcome::read(body))
    })
    .await
    .map(super::success)
}

/// # `PUT /bot_storage`
///
/// Sets entries: `storage`, a JSON object of strings.
pub async fn update_storage(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, _, p| {
            let Some(storage) = p.opt_object("storage")? else {
                return Err(ApiError::missing("storage"));
            };
            let entries = storage
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    _ => Err(ApiError::bad_request(format!(
                        "storage[\"{k}\"] is not a string"
                    ))),
                })
                .collect::<ApiResult<Vec<_>>>()?;
            Ok(StorageRequest::Put(entries))
        },
        Realm::decide_bot_storage,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /bot_storage`
///
/// Removes entries: `keys` (every entry when absent).
pub async fn remove_storage(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, _, p| Ok(StorageRequest::Remove(p.opt_str_list("keys")?)),
        Realm::decide_bot_storage,
    )
    .await?;
    req.reply(Map::new())
}

/// # `GET /bots`
pub async fn get_bots(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        // `get_bots_backend` is `require_member_or_admin`.
        c.realm.require_member_or_admin(me)?;
        let mut body = Map::new();
        body.insert("bots".into(), Value::Array(c.realm.view_bots(me)));
        Ok(Outcome::read(body))
    })
    .await
}

/// # `GET /bots/{bot_id}/api_key`
///
/// The bot's API key, for its owner and administrators (feature level 463).
pub async fn get_bot_api_key(req: ApiRequest, path: actix_web::web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    // Zulip's route takes digits only (`<int:bot_id>`).
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(super::error::not_found_error());
    }
    let bot_id = raw.parse::<i64>().unwrap_or(-1);
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let key = c.realm.view_bot_api_key(me, bot_id)?;
        let mut body = Map::new();
        body.insert("api_key".into(), json!(key));
        Ok(Outcome::read(body))
    })
    .await
    .map(super::success)
}

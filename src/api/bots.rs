//! Bots: creation and listing (enough for bot owners to manage their bots' channels).

use serde_json::{json, Map, Value};

use super::Outcome;
use super::{ApiRequest, ApiResponse, CallOpts};
use crate::realm::users::{gravatar_url, CreateBot};
use crate::realm::Realm;

/// # `POST /bots`
pub async fn create_bot(req: ApiRequest) -> ApiResponse {
    let bot = req
        .write(
            |realm, me, p| {
                // `add_bot_backend` is `require_member_or_admin`: no guests, no bots.
                realm.require_member_or_admin(me)?;
                Ok(CreateBot {
                    full_name: p.str("full_name")?,
                    short_name: p.str("short_name")?,
                    bot_type: p.opt_int("bot_type")?.unwrap_or(1),
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

//! Bots: creation and listing (enough for bot owners to manage their bots' channels).

use serde_json::{json, Map, Value};

use super::Outcome;
use super::{success, ApiRequest, ApiResponse, CallOpts};
use crate::realm::users::gravatar_url;

/// # `POST /bots`
pub async fn create_bot(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        // `add_bot_backend` is `require_member_or_admin`: no guests, no bots.
        c.realm.require_member_or_admin(me)?;
        let full_name = c.params.str("full_name")?;
        let short_name = c.params.str("short_name")?;
        let bot_type = c.params.opt_int("bot_type")?.unwrap_or(1);
        let (changes, user_id, api_key) =
            c.realm
                .decide_create_bot(me, &full_name, &short_name, bot_type, c.cx)?;
        let email = format!(
            "{}-bot@{}",
            short_name.trim(),
            c.realm.settings.fake_email_domain
        );
        let mut body = Map::new();
        body.insert("user_id".into(), json!(user_id));
        body.insert("api_key".into(), json!(api_key));
        body.insert("avatar_url".into(), json!(gravatar_url(&email, 1)));
        body.insert("default_sending_stream".into(), Value::Null);
        body.insert("default_events_register_stream".into(), Value::Null);
        body.insert("default_all_public_streams".into(), json!(false));
        Ok(Outcome::write(changes, body))
    })
    .await
    .map(success)
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

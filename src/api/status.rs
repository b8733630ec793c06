//! User status: `POST /users/me/status`, `GET /users/{user_id}/status`, and
//! administrators' `POST /users/{user_id}/status`.

use actix_web::web;
use serde_json::Map;

use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::realm::status::{parse_status_text, require_human, AdminStatusRequest, StatusRequest};
use crate::realm::Realm;

/// # `POST /users/me/status`
///
/// Changes only what is passed (seed 4.4). `away` sets the `presence_enabled` setting
/// to its inverse and, as Zulip does, refreshes the caller's presence at once
/// (`Realm::presence_refresh`).
pub async fn update_status(req: ApiRequest) -> ApiResponse {
    let parsed = req.parse(|_, me, p| {
        // `human_users_only` comes before any parameter is read.
        require_human(me)?;
        // Zulip's parameter order: away, emoji_code, emoji_name, reaction_type,
        // status_text.
        let away = p.opt_bool("away")?;
        let emoji_code = p.opt_str("emoji_code");
        let emoji_name = p.opt_str("emoji_name");
        let reaction_type = p.opt_str("reaction_type");
        let status_text = p
            .opt_str("status_text")
            .map(|t| parse_status_text(&t))
            .transpose()?;
        Ok(StatusRequest {
            away,
            status_text,
            emoji_name,
            emoji_code,
            reaction_type,
        })
    })?;
    let away = parsed.req.away;
    req.commit(parsed, Realm::decide_update_status).await?;
    if away.is_some() {
        // The presence the change refreshes (the hub's renderer makes it, in the
        // realm's order) is seen by whoever reads after this answer.
        req.hub.settled().await;
    }
    req.reply(Map::new())
}

/// # `GET /users/{user_id}/status`
pub async fn get_user_status(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    // Zulip's route takes digits only (`<int:user_id>`); anything else is not found.
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(super::error::not_found_error());
    }
    let id = raw.parse::<i64>().unwrap_or(-1);
    req.read(CallOpts::USER, move |c| {
        c.me()?;
        Ok(Outcome::read(c.realm.view_user_status(id)?))
    })
    .await
    .map(success)
}

/// # `POST /users/{user_id}/status`
///
/// An administrator sets another user's status (feature level 407); `away` is not a
/// parameter here.
pub async fn update_user_status_admin(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    // Zulip's route takes digits only (`<int:user_id>`); anything else is not found.
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(super::error::not_found_error());
    }
    let user_id = raw.parse::<i64>().unwrap_or(-1);
    req.write(
        |_, _, p| {
            // Zulip's parameter order: status_text, emoji_name, emoji_code, reaction_type.
            let status_text = p
                .opt_str("status_text")
                .map(|t| parse_status_text(&t))
                .transpose()?;
            Ok(AdminStatusRequest {
                user_id,
                req: StatusRequest {
                    away: None,
                    status_text,
                    emoji_name: p.opt_str("emoji_name"),
                    emoji_code: p.opt_str("emoji_code"),
                    reaction_type: p.opt_str("reaction_type"),
                },
            })
        },
        Realm::decide_update_status_admin,
    )
    .await?;
    req.reply(Map::new())
}

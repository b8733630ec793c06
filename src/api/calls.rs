//! Video calls: `GET /calls/bigbluebutton/create` and `POST
//! /calls/constructorgroups/create` (Zulip's `zerver/views/video_calls.py`). hearth has
//! no video-call provider configuration, so both answer Zulip's error for a provider
//! the server was not configured with, once the caller is authenticated and the
//! parameters are read. (Zulip signs a BigBlueButton join link without checking the
//! configuration and refuses only when the link is followed; hearth serves no join
//! page, so it refuses at once, with that message.)

use super::{ApiRequest, ApiResponse, CallOpts};
use crate::error::ApiError;

/// # `GET /calls/bigbluebutton/create`
pub async fn create_bigbluebutton_call(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        // Zulip's signature: `meeting_name` (required), `voice_only` (JSON boolean).
        c.params.str("meeting_name")?;
        c.params.opt_bool("voice_only")?;
        Err(ApiError::bad_request("BigBlueButton is not configured."))
    })
    .await
    .map(super::success)
}

/// # `POST /calls/constructorgroups/create`
pub async fn create_constructor_groups_call(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        Err(ApiError::bad_request(
            "Constructor Groups is not configured.",
        ))
    })
    .await
    .map(super::success)
}

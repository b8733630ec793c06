//! Drafts (Zulip's `zerver/views/drafts.py`): list, create, edit and delete the
//! caller's drafts. Every route first checks that the caller synchronizes drafts
//! (`draft_endpoint`), then parses (`typed_endpoint`).

use actix_web::web;
use serde_json::{Map, Value};

use super::params::path_int;
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::drafts::{
    check_synced, drafts_body, parse_draft, CreateDrafts, DeleteDraft, DraftData, EditDraft,
};
use crate::realm::Realm;

/// # `GET /drafts`
pub async fn get_drafts(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        check_synced(c.realm, me)?;
        Ok(Outcome::read(drafts_body(c.realm, me)))
    })
    .await
    .map(success)
}

/// `drafts`: a JSON list of drafts.
fn parse_drafts(v: Value) -> ApiResult<Vec<DraftData>> {
    let Value::Array(items) = v else {
        return Err(ApiError::bad_request("drafts is not a list"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, d)| parse_draft(&format!("drafts[{i}]"), d))
        .collect()
}

/// # `POST /drafts`
pub async fn create_drafts(req: ApiRequest) -> ApiResponse {
    let ids = req
        .write(
            |version, me, p| {
                check_synced(version, me)?;
                let drafts = p
                    .opt_json("drafts")?
                    .ok_or_else(|| ApiError::missing("drafts"))?;
                Ok(CreateDrafts {
                    drafts: parse_drafts(drafts)?,
                })
            },
            Realm::decide_create_drafts,
        )
        .await?;
    let mut body = Map::new();
    body.insert("ids".into(), ids.into());
    req.reply(body)
}

/// # `PATCH /drafts/{draft_id}`
pub async fn edit_draft(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("draft_id", &path)?;
    req.write(
        |version, me, p| {
            check_synced(version, me)?;
            let draft = p
                .opt_json("draft")?
                .ok_or_else(|| ApiError::missing("draft"))?;
            Ok(EditDraft {
                id,
                draft: parse_draft("draft", &draft)?,
            })
        },
        Realm::decide_edit_draft,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /drafts/{draft_id}`
pub async fn delete_draft(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("draft_id", &path)?;
    req.write(
        |version, me, _| {
            check_synced(version, me)?;
            Ok(DeleteDraft { id })
        },
        Realm::decide_delete_draft,
    )
    .await?;
    req.reply(Map::new())
}

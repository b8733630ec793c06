//! Saved snippets (Zulip's `zerver/views/saved_snippets.py`): list, create, edit and
//! delete the caller's snippets.

use actix_web::web;
use serde_json::Map;

use super::params::path_int;
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::realm::saved_snippets::{
    snippet_content, snippet_title, CreateSnippet, DeleteSnippet, EditSnippet,
};
use crate::realm::Realm;

/// # `GET /saved_snippets`
pub async fn get_saved_snippets(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let mut body = Map::new();
        body.insert(
            "saved_snippets".into(),
            c.realm.view_saved_snippets(me).into(),
        );
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// # `POST /saved_snippets`
pub async fn create_saved_snippet(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |_, _, p| {
                // `typed_endpoint` reads the parameters in order: each is looked for,
                // then checked, before the next.
                let title = snippet_title(&p.str("title")?)?;
                let content = snippet_content(&p.str("content")?)?;
                Ok(CreateSnippet { title, content })
            },
            Realm::decide_create_snippet,
        )
        .await?;
    let mut body = Map::new();
    body.insert("saved_snippet_id".into(), id.into());
    req.reply(body)
}

/// # `PATCH /saved_snippets/{saved_snippet_id}`
///
/// Neither `title` nor `content`: success, and nothing happens (not even the lookup),
/// as in Zulip.
pub async fn edit_saved_snippet(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("saved_snippet_id", &path)?;
    let parsed = req.parse(|_, _, p| {
        let title = p.opt_str("title").map(|t| snippet_title(&t)).transpose()?;
        let content = p
            .opt_str("content")
            .map(|c| snippet_content(&c))
            .transpose()?;
        Ok(EditSnippet { id, title, content })
    })?;
    if parsed.req.title.is_some() || parsed.req.content.is_some() {
        req.commit(parsed, Realm::decide_edit_snippet).await?;
    }
    req.reply(Map::new())
}

/// # `DELETE /saved_snippets/{saved_snippet_id}`
pub async fn delete_saved_snippet(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("saved_snippet_id", &path)?;
    req.write(
        |_, _, _| Ok(DeleteSnippet { id }),
        Realm::decide_delete_snippet,
    )
    .await?;
    req.reply(Map::new())
}

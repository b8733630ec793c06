//! Navigation views (seed 4.8, 4.10): list, add, update and remove the caller's views.

use actix_web::web;
use serde_json::{Map, Value};

use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::ApiError;
use crate::realm::navigation::{
    stripped_nonblank, AddNavigationView, RemoveNavigationView, UpdateNavigationView,
};
use crate::realm::Realm;

/// # `GET /navigation_views`
pub async fn get_navigation_views(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let mut body = Map::new();
        body.insert(
            "navigation_views".into(),
            Value::Array(c.realm.view_navigation_views(me)),
        );
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// # `POST /navigation_views`
pub async fn add_navigation_view(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, _, p| {
            // Every required parameter is looked for before any is validated.
            if let Some(missing) = ["fragment", "is_pinned"]
                .into_iter()
                .find(|n| p.peek(n).is_none())
            {
                return Err(ApiError::missing(missing));
            }
            let fragment = stripped_nonblank("fragment", &p.str("fragment")?)?;
            let is_pinned = p
                .opt_bool("is_pinned")?
                .ok_or_else(|| ApiError::missing("is_pinned"))?;
            let name = p
                .opt_str("name")
                .map(|n| stripped_nonblank("name", &n))
                .transpose()?;
            Ok(AddNavigationView {
                fragment,
                is_pinned,
                name,
            })
        },
        Realm::decide_add_navigation_view,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /navigation_views/{fragment}` (the fragment may hold slashes)
pub async fn update_navigation_view(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let fragment = stripped_nonblank("fragment", &path.into_inner())?;
    req.write(
        |_, _, p| {
            let is_pinned = p.opt_bool("is_pinned")?;
            let name = p
                .opt_str("name")
                .map(|n| stripped_nonblank("name", &n))
                .transpose()?;
            Ok(UpdateNavigationView {
                fragment,
                is_pinned,
                name,
            })
        },
        Realm::decide_update_navigation_view,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /navigation_views/{fragment}` (the fragment may hold slashes)
pub async fn remove_navigation_view(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let fragment = path.into_inner();
    req.write(
        |_, _, _| Ok(RemoveNavigationView { fragment }),
        Realm::decide_remove_navigation_view,
    )
    .await?;
    req.reply(Map::new())
}

//! Linkifiers (seed 4.11): list, add, update, remove, reorder. Administrators only,
//! checked before any parameter (Zulip's `require_realm_admin`); patterns are compiled
//! here on the worker, the realm actor only looks up and records.

use actix_web::web;
use serde_json::{Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::linkifiers::{
    LinkifierSpec, RemoveLinkifier, ReorderLinkifiers, UpdateLinkifier,
};
use crate::realm::Realm;

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

fn spec(p: &Params) -> ApiResult<LinkifierSpec> {
    let pattern = p.str("pattern")?;
    let url_template = p.str("url_template")?;
    Ok(LinkifierSpec::check(&pattern, &url_template))
}

/// # `GET /realm/linkifiers`
pub async fn get_linkifiers(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        Ok(Outcome::read(one(
            "linkifiers",
            Value::Array(c.realm.view_linkifiers()),
        )))
    })
    .await
    .map(success)
}

/// # `POST /realm/filters`
pub async fn add_linkifier(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                spec(p)
            },
            Realm::decide_add_linkifier,
        )
        .await?;
    req.reply(one("id", id.into()))
}

/// # `PATCH /realm/filters/{filter_id}`
pub async fn update_linkifier(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("filter_id", &path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            Ok(UpdateLinkifier { id, spec: spec(p)? })
        },
        Realm::decide_update_linkifier,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /realm/filters/{filter_id}`
pub async fn remove_linkifier(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("filter_id", &path.into_inner())?;
    req.write(
        |_, _, _| Ok(RemoveLinkifier { id }),
        Realm::decide_remove_linkifier,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /realm/linkifiers`
pub async fn reorder_linkifiers(req: ApiRequest) -> ApiResponse {
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            let ids = p
                .opt_int_list("ordered_linkifier_ids")?
                .ok_or_else(|| ApiError::missing("ordered_linkifier_ids"))?;
            Ok(ReorderLinkifiers { ids })
        },
        Realm::decide_reorder_linkifiers,
    )
    .await?;
    req.reply(Map::new())
}

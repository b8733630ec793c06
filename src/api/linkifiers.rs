//! Linkifiers (seed 4.11): list, add, update, remove, reorder. Administrators only,
//! checked before any parameter (Zulip's `require_realm_admin`); patterns are compiled
//! here on the worker, the realm actor only looks up and records.

use actix_web::web;
use serde_json::{Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::linkifiers::LinkifierSpec;

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
    req.check(|realm, me| realm.require_admin(me))?;
    req.write(CallOpts::USER, spec, |c, spec| {
        c.realm.require_admin(c.me()?)?;
        let (changes, id) = c.realm.decide_add_linkifier(&spec)?;
        Ok(Outcome::write(changes, one("id", id.into())))
    })
    .await
    .map(success)
}

/// # `PATCH /realm/filters/{filter_id}`
pub async fn update_linkifier(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("filter_id", &path.into_inner())?;
    req.check(|realm, me| realm.require_admin(me))?;
    req.write(CallOpts::USER, spec, move |c, spec| {
        c.realm.require_admin(c.me()?)?;
        let changes = c.realm.decide_update_linkifier(id, &spec)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `DELETE /realm/filters/{filter_id}`
pub async fn remove_linkifier(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("filter_id", &path.into_inner())?;
    req.call(CallOpts::USER, move |c| {
        c.realm.require_admin(c.me()?)?;
        let changes = c.realm.decide_remove_linkifier(id)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `PATCH /realm/linkifiers`
pub async fn reorder_linkifiers(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        c.realm.require_admin(c.me()?)?;
        let ids = c
            .params
            .opt_int_list("ordered_linkifier_ids")?
            .ok_or_else(|| ApiError::missing("ordered_linkifier_ids"))?;
        let changes = c.realm.decide_reorder_linkifiers(&ids)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

//! Custom profile fields (seed 4.3) and users' values for them. Role checks come before
//! any parameter, as Zulip's decorators (`require_realm_admin`, `human_users_only`);
//! parameters are read in Zulip's declaration order, so the first bad one is reported.

use actix_web::web;
use serde_json::{Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::profile_fields::{
    parse_field_data, parse_profile_data, DeleteProfileField, FieldUpdate, NewField,
    RemoveProfileData, ReorderProfileFields, UpdateProfileData, UpdateProfileField,
};
use crate::realm::status::require_human;
use crate::realm::Realm;

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

fn field_data(p: &Params) -> ApiResult<Option<Map<String, Value>>> {
    p.opt_json("field_data")?.map(parse_field_data).transpose()
}

/// # `GET /realm/profile_fields`
pub async fn get_profile_fields(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        c.me()?;
        Ok(Outcome::read(one(
            "custom_fields",
            Value::Array(c.realm.view_profile_fields()),
        )))
    })
    .await
    .map(success)
}

/// # `POST /realm/profile_fields`
pub async fn create_profile_field(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                Ok(NewField {
                    display_in_profile_summary: p.bool_or("display_in_profile_summary", false)?,
                    editable_by_user: p.bool_or("editable_by_user", true)?,
                    field_data: field_data(p)?.unwrap_or_default(),
                    field_type: p.int("field_type")?,
                    hint: p.opt_str("hint").unwrap_or_default(),
                    name: p.opt_str("name").unwrap_or_default().trim().to_owned(),
                    required: p.bool_or("required", false)?,
                })
            },
            Realm::decide_create_profile_field,
        )
        .await?;
    req.reply(one("id", id.into()))
}

/// # `PATCH /realm/profile_fields/{field_id}`
pub async fn update_profile_field(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("field_id", &path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            let update = FieldUpdate {
                display_in_profile_summary: p.opt_bool("display_in_profile_summary")?,
                editable_by_user: p.opt_bool("editable_by_user")?,
                field_data: field_data(p)?,
                hint: p.opt_str("hint"),
                name: p.opt_str("name").map(|n| n.trim().to_owned()),
                required: p.opt_bool("required")?,
            };
            Ok(UpdateProfileField { id, update })
        },
        Realm::decide_update_profile_field,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /realm/profile_fields/{field_id}`
pub async fn delete_profile_field(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("field_id", &path.into_inner())?;
    req.write(
        |realm, me, _| {
            realm.require_admin(me)?;
            Ok(DeleteProfileField { id })
        },
        Realm::decide_delete_profile_field,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /realm/profile_fields`
pub async fn reorder_profile_fields(req: ApiRequest) -> ApiResponse {
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            let order = p
                .opt_int_list("order")?
                .ok_or_else(|| ApiError::missing("order"))?;
            Ok(ReorderProfileFields { order })
        },
        Realm::decide_reorder_profile_fields,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /users/me/profile_data`
pub async fn update_profile_data(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, me, p| {
            require_human(me)?;
            let v = p
                .opt_json("data")?
                .ok_or_else(|| ApiError::missing("data"))?;
            Ok(UpdateProfileData {
                data: parse_profile_data(v)?,
            })
        },
        Realm::decide_update_profile_data,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /users/me/profile_data`
pub async fn remove_profile_data(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, me, p| {
            require_human(me)?;
            let ids = p
                .opt_int_list("data")?
                .ok_or_else(|| ApiError::missing("data"))?;
            Ok(RemoveProfileData { ids })
        },
        Realm::decide_remove_profile_data,
    )
    .await?;
    req.reply(Map::new())
}

//! User groups: create, list, update, members and subgroups, deactivate (seed 4.9,
//! 4.16). Role checks come before parameters, and parameters are read in Zulip's order
//! (missing ones first, then each value in the order of the view's signature).

use actix_web::web;
use serde_json::{json, Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::groups::{
    DeactivateGroup, GroupPatch, GroupPermission, MembersEndpoint, MembersUpdate, NewGroup,
    SettingValue, UpdateGroup, UpdateGroupMembers,
};
use crate::realm::Realm;

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

fn group_id_path(raw: &str) -> ApiResult<i64> {
    path_int("user_group_id", raw)
}

/// `Missing 'x' argument` for the first of `names` not sent (Zulip checks every
/// required parameter before validating any).
fn require(p: &Params, names: &[&str]) -> ApiResult<()> {
    match names.iter().find(|n| p.peek(n).is_none()) {
        Some(n) => Err(ApiError::missing(n)),
        None => Ok(()),
    }
}

/// A JSON list of integers, `[]` when absent.
fn int_list(p: &Params, name: &str) -> ApiResult<Vec<i64>> {
    Ok(p.opt_int_list(name)?.unwrap_or_default())
}

/// # `POST /user_groups/create`
pub async fn create_user_group(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_member_or_admin(me)?;
                realm.check_can_create_groups(me)?;
                require(p, &["description", "members", "name"])?;
                let mut settings = Vec::new();
                for perm in GroupPermission::ALL {
                    if let Some(v) = p.opt_json(perm.name())? {
                        settings.push((perm, SettingValue::parse(perm.name(), &v)?));
                    }
                }
                let description = p.str("description")?;
                let members = int_list(p, "members")?;
                let name = p.str("name")?;
                let subgroups = int_list(p, "subgroups")?;
                Ok(NewGroup {
                    name,
                    description,
                    members,
                    subgroups,
                    settings,
                })
            },
            Realm::decide_create_group,
        )
        .await?;
    req.reply(one("group_id", json!(id)))
}

/// # `GET /user_groups`
pub async fn get_user_groups(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_member_or_admin(me)?;
        let include = c.params.bool_or("include_deactivated_groups", false)?;
        let groups = c.realm.view_user_groups(include);
        Ok(Outcome::read(one("user_groups", Value::Array(groups))))
    })
    .await
}

/// # `PATCH /user_groups/{user_group_id}`
pub async fn update_user_group(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_member_or_admin(me)?;
            let mut settings = Vec::new();
            for perm in GroupPermission::ALL {
                if let Some(v) = p.opt_json(perm.name())? {
                    let (new, old) = SettingValue::parse_change(perm.name(), &v)?;
                    settings.push((perm, new, old));
                }
            }
            let patch = GroupPatch {
                deactivated: p.opt_bool("deactivated")?,
                description: p.opt_str("description"),
                name: p.opt_str("name"),
                settings,
            };
            Ok(UpdateGroup { id, patch })
        },
        Realm::decide_update_group,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /user_groups/{user_group_id}/deactivate`
pub async fn deactivate_user_group(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.write(
        |_, _, _| Ok(DeactivateGroup { id }),
        Realm::decide_deactivate_group,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /user_groups/{user_group_id}/members`
pub async fn update_user_group_members(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_member_or_admin(me)?;
            let update = MembersUpdate {
                add: int_list(p, "add")?,
                add_subgroups: int_list(p, "add_subgroups")?,
                delete: int_list(p, "delete")?,
                delete_subgroups: int_list(p, "delete_subgroups")?,
            };
            Ok(UpdateGroupMembers {
                id,
                update,
                endpoint: MembersEndpoint::Members,
            })
        },
        Realm::decide_update_members,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /user_groups/{user_group_id}/subgroups`
pub async fn update_user_group_subgroups(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_member_or_admin(me)?;
            let update = MembersUpdate {
                add_subgroups: int_list(p, "add")?,
                delete_subgroups: int_list(p, "delete")?,
                ..MembersUpdate::default()
            };
            Ok(UpdateGroupMembers {
                id,
                update,
                endpoint: MembersEndpoint::Subgroups,
            })
        },
        Realm::decide_update_members,
    )
    .await?;
    req.reply(Map::new())
}

/// # `GET /user_groups/{user_group_id}/members`
pub async fn get_user_group_members(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.read_large(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_member_or_admin(me)?;
        let direct = c.params.bool_or("direct_member_only", false)?;
        let members = c.realm.view_group_members(id, direct)?;
        Ok(Outcome::read(one("members", json!(members))))
    })
    .await
}

/// # `GET /user_groups/{user_group_id}/members/{user_id}`
pub async fn get_is_user_group_member(
    req: ApiRequest,
    path: web::Path<(String, String)>,
) -> ApiResponse {
    let (group, user) = path.into_inner();
    let id = group_id_path(&group)?;
    let user_id = path_int("user_id", &user)?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_member_or_admin(me)?;
        let direct = c.params.bool_or("direct_member_only", false)?;
        let is = c.realm.view_is_group_member(id, user_id, direct)?;
        Ok(Outcome::read(one("is_user_group_member", json!(is))))
    })
    .await
    .map(success)
}

/// # `GET /user_groups/{user_group_id}/subgroups`
pub async fn get_user_group_subgroups(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = group_id_path(&path.into_inner())?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_member_or_admin(me)?;
        let direct = c.params.bool_or("direct_subgroup_only", false)?;
        let subgroups = c.realm.view_group_subgroups(id, direct)?;
        Ok(Outcome::read(one("subgroups", json!(subgroups))))
    })
    .await
    .map(success)
}

//! Channels, subscriptions, default channels and channel folders.

use actix_web::web;
use serde_json::{json, Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts};
use super::{Ctx, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::{
    parse_message_retention_days, ChannelPatch, ChannelSetting, ChannelSpec, StreamFilter,
    SubscribeItem, SubscribeRequest,
};
use crate::realm::groups::GroupSetting;
use crate::realm::topics_policy::TopicsPolicy;
use crate::realm::{Realm, User};

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// Group-setting parameters; on updates each is `{"new": value, "old": value}`.
fn group_settings(
    realm: &Realm,
    p: &Params,
    update: bool,
) -> ApiResult<Vec<(ChannelSetting, GroupSetting)>> {
    let mut out = Vec::new();
    for s in ChannelSetting::ALL {
        let name = s.name();
        let Some(v) = p.opt_json(name)? else {
            continue;
        };
        let v = if update {
            match v {
                Value::Object(mut m) if m.contains_key("new") => {
                    m.remove("new").unwrap_or(Value::Null)
                }
                Value::Object(_) => {
                    return Err(ApiError::bad_request(format!(
                        "{name}[\"new\"] field is missing: Field required"
                    )))
                }
                other => other,
            }
        } else {
            v
        };
        out.push((s, realm.parse_group_setting(name, &v)?));
    }
    Ok(out)
}

/// `message_retention_days`: a positive integer, "unlimited" (-1) or "realm_default"
/// (None), with Zulip's texts.
fn retention(p: &Params) -> ApiResult<Option<i64>> {
    match p.opt_json("message_retention_days")? {
        None => Ok(None),
        Some(v) => parse_message_retention_days(&v),
    }
}

fn channel_spec(c: &Ctx<'_>) -> ApiResult<ChannelSpec> {
    let p = &*c.params;
    Ok(ChannelSpec {
        invite_only: p.bool_or("invite_only", false)?,
        is_web_public: p.bool_or("is_web_public", false)?,
        history_public_to_subscribers: p.opt_bool("history_public_to_subscribers")?,
        is_default_stream: p.bool_or("is_default_stream", false)?,
        folder_id: p.opt_int("folder_id")?,
        message_retention_days: retention(p)?,
        // JSON-encoded here (`Json[...]`), unlike on `PATCH /streams/{stream_id}`.
        topics_policy: match p.opt_json("topics_policy")? {
            None => None,
            Some(v) => TopicsPolicy::parse_json(&v)?,
        },
        settings: group_settings(c.realm, p, false)?,
    })
}

fn principals(c: &Ctx<'_>) -> ApiResult<Option<Vec<u64>>> {
    match c.params.opt_json("principals")? {
        None => Ok(None),
        Some(v) => c.realm.resolve_principals(&v).map(Some),
    }
}

fn stream_id_path(raw: &str) -> ApiResult<i64> {
    path_int("stream_id", raw)
}

/// Zulip's `require_non_guest_user`: guests are refused before any parameter is read.
fn require_non_guest(me: &User) -> ApiResult<()> {
    if me.is_guest() {
        return Err(ApiError::bad_request("Not allowed for guest users"));
    }
    Ok(())
}

/// # `POST /channels/create`
pub async fn create_channel(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        require_non_guest(me)?;
        let name = c.params.str("name")?;
        let description = c.params.opt_str("description").unwrap_or_default();
        let subscribers = match c.params.opt_json("subscribers")? {
            None => vec![me.id],
            Some(v) => c.realm.resolve_principals(&v).map_err(|e| {
                if e.msg == "principals is not a list" {
                    ApiError::bad_request("subscribers is not a list")
                } else {
                    e
                }
            })?,
        };
        // Notification messages are not sent (hearth has no messages yet): the two
        // flags are type-checked as Zulip does, then reported as ignored.
        c.params.check_unread_bool("announce")?;
        c.params
            .check_unread_bool("send_new_subscription_messages")?;
        let spec = channel_spec(c)?;
        let (changes, id) =
            c.realm
                .decide_create_channel(me, &name, &description, subscribers, spec, c.cx)?;
        Ok(Outcome::write(changes, one("id", json!(id))))
    })
    .await
    .map(success)
}

/// Parses `subscriptions` of `POST /users/me/subscriptions`.
fn subscribe_items(p: &Params) -> ApiResult<Vec<SubscribeItem>> {
    let v = p
        .opt_json("subscriptions")?
        .ok_or_else(|| ApiError::missing("subscriptions"))?;
    let list = v
        .as_array()
        .ok_or_else(|| ApiError::bad_request("subscriptions is not a list"))?;
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let obj = item.as_object().ok_or_else(|| {
                ApiError::bad_request(format!("subscriptions[{i}] is not a dict"))
            })?;
            let string = |k: &str| -> ApiResult<Option<String>> {
                match obj.get(k) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(ApiError::bad_request(format!(
                        "subscriptions[{i}][\"{k}\"] is not a string"
                    ))),
                }
            };
            let name = string("name")?.ok_or_else(|| {
                ApiError::bad_request(format!(
                    "subscriptions[{i}][\"name\"] field is missing: Field required"
                ))
            })?;
            Ok(SubscribeItem {
                name,
                description: string("description")?,
                color: string("color")?,
            })
        })
        .collect()
}

/// # `POST /users/me/subscriptions`
pub async fn subscribe(req: ApiRequest) -> ApiResponse {
    // Guests subscribe nobody, themselves included (`add_subscriptions_backend`).
    req.check(|_, me| require_non_guest(me))?;
    req.write_legacy(CallOpts::USER, subscribe_items, |c, items| {
        let me = c.me()?;
        let principals = principals(c)?;
        let authorization_errors_fatal = c.params.bool_or("authorization_errors_fatal", true)?;
        // Notification messages are not sent (hearth has no messages yet): the two
        // flags are type-checked as Zulip does, then reported as ignored.
        c.params.check_unread_bool("announce")?;
        c.params
            .check_unread_bool("send_new_subscription_messages")?;
        let spec = channel_spec(c)?;
        let out = c.realm.decide_subscribe(
            me,
            SubscribeRequest {
                items,
                principals,
                spec,
                authorization_errors_fatal,
            },
            c.cx,
        )?;
        let by_user = |m: &std::collections::BTreeMap<u64, Vec<String>>| {
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect::<Map<String, Value>>(),
            )
        };
        let mut body = Map::new();
        body.insert("subscribed".into(), by_user(&out.subscribed));
        body.insert(
            "already_subscribed".into(),
            by_user(&out.already_subscribed),
        );
        if !out.unauthorized.is_empty() {
            body.insert("unauthorized".into(), json!(out.unauthorized));
        }
        Ok(Outcome::write(out.changes, body))
    })
    .await
    .map(success)
}

/// # `GET /users/me/subscriptions`
pub async fn get_subscriptions(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        let include = c.params.bool_or("include_subscribers", false)?;
        let subs = c.realm.view_subscriptions(me, include);
        Ok(Outcome::read(one("subscriptions", Value::Array(subs))))
    })
    .await
}

/// # `DELETE /users/me/subscriptions`
pub async fn unsubscribe(req: ApiRequest) -> ApiResponse {
    let names = |p: &Params| {
        p.opt_str_list("subscriptions")?
            .ok_or_else(|| ApiError::missing("subscriptions"))
    };
    req.write_legacy(CallOpts::USER, names, |c, names| {
        let me = c.me()?;
        if let Some(v) = c.params.opt_json("principals")? {
            Realm::check_principals_type(&v)?;
        }
        let principals = principals(c)?;
        let (changes, removed, not_removed) = c.realm.decide_unsubscribe(me, &names, principals)?;
        let mut body = Map::new();
        body.insert("removed".into(), json!(removed));
        body.insert("not_removed".into(), json!(not_removed));
        Ok(Outcome::write(changes, body))
    })
    .await
    .map(success)
}

/// # `POST /users/me/subscriptions/properties`
pub async fn update_subscription_properties(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        let data = c
            .params
            .opt_json("subscription_data")?
            .ok_or_else(|| ApiError::missing("subscription_data"))?;
        let changes = c.realm.decide_subscription_properties(me, &data)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `GET /streams`
pub async fn get_streams(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        let p = &*c.params;
        let f = StreamFilter {
            include_public: p.bool_or("include_public", true)?,
            include_web_public: p.bool_or("include_web_public", false)?,
            include_subscribed: p.bool_or("include_subscribed", true)?,
            exclude_archived: p.bool_or("exclude_archived", true)?,
            include_all_active: p.bool_or("include_all_active", false)?,
            include_all: p.bool_or("include_all", false)?,
            include_default: p.bool_or("include_default", false)?,
            include_owner_subscribed: p.bool_or("include_owner_subscribed", false)?,
            include_can_access_content: p.bool_or("include_can_access_content", false)?,
        };
        let streams = c.realm.view_streams(me, &f)?;
        Ok(Outcome::read(one("streams", Value::Array(streams))))
    })
    .await
}

/// # `GET /streams/{stream_id}`
pub async fn get_stream(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = stream_id_path(&path.into_inner())?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        Ok(Outcome::read(one("stream", c.realm.view_stream(me, id)?)))
    })
    .await
    .map(success)
}

/// # `GET /streams/{stream_id}/members`
pub async fn get_stream_members(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = stream_id_path(&path.into_inner())?;
    req.read_large(CallOpts::USER, move |c| {
        let me = c.me()?;
        let ids = c.realm.view_stream_members(me, id)?;
        Ok(Outcome::read(one("subscribers", json!(ids))))
    })
    .await
}

/// # `GET /get_stream_id`
pub async fn get_stream_id(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let name = c.params.str("stream")?;
        let id = c.realm.view_stream_id(me, &name)?;
        Ok(Outcome::read(one("stream_id", json!(id))))
    })
    .await
    .map(success)
}

/// # `GET /users/{user_id}/subscriptions/{stream_id}`
pub async fn get_subscription_status(
    req: ApiRequest,
    path: web::Path<(String, String)>,
) -> ApiResponse {
    let (user, stream) = path.into_inner();
    let user_id = path_int("user_id", &user)?;
    let stream_id = stream_id_path(&stream)?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let is = c.realm.view_is_subscribed(me, user_id, stream_id)?;
        Ok(Outcome::read(one("is_subscribed", json!(is))))
    })
    .await
    .map(success)
}

/// # `PATCH /streams/{stream_id}`
pub async fn update_stream(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = stream_id_path(&path.into_inner())?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        let p = &*c.params;
        let folder_id = match p.opt_json("folder_id")? {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => match v.as_i64() {
                Some(-1) => Some(None),
                Some(id) => Some(Some(id)),
                None => return Err(ApiError::bad_request("folder_id is not an integer")),
            },
        };
        let patch = ChannelPatch {
            description: p.opt_str("description"),
            new_name: p.opt_str("new_name"),
            is_private: p.opt_bool("is_private")?,
            is_web_public: p.opt_bool("is_web_public")?,
            history_public_to_subscribers: p.opt_bool("history_public_to_subscribers")?,
            is_default_stream: p.opt_bool("is_default_stream")?,
            is_archived: p.opt_bool("is_archived")?,
            folder_id,
            message_retention_days: p.opt_json("message_retention_days")?,
            // A plain string here (`str` with `parse_enum_from_string_value`).
            topics_policy: p
                .opt_str("topics_policy")
                .map(|v| TopicsPolicy::parse_channel(&v))
                .transpose()?,
            settings: group_settings(c.realm, p, true)?,
        };
        let changes = c.realm.decide_update_channel(me, id, patch, c.cx)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `DELETE /streams/{stream_id}`
pub async fn archive_stream(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = stream_id_path(&path.into_inner())?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        let changes = c.realm.decide_archive_channel(me, id)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `POST /default_streams`
pub async fn add_default_stream(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let id = c.params.int("stream_id")?;
        let changes = c.realm.decide_add_default_channel(me, id)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `DELETE /default_streams`
pub async fn remove_default_stream(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let id = c.params.int("stream_id")?;
        let changes = c.realm.decide_remove_default_channel(me, id)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `POST /channel_folders/create`
pub async fn create_channel_folder(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let name = c.params.str("name")?;
        let description = c.params.opt_str("description").unwrap_or_default();
        let (changes, id) = c
            .realm
            .decide_create_folder(me, &name, &description, c.cx)?;
        Ok(Outcome::write(changes, one("channel_folder_id", json!(id))))
    })
    .await
    .map(success)
}

/// # `GET /channel_folders`
pub async fn get_channel_folders(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        c.me()?;
        let include_archived = c.params.bool_or("include_archived", false)?;
        let folders: Vec<Value> = c
            .realm
            .folders_sorted(include_archived)
            .into_iter()
            .map(|f| c.realm.folder_json(f))
            .collect();
        Ok(Outcome::read(one("channel_folders", Value::Array(folders))))
    })
    .await
}

/// # `PATCH /channel_folders`
pub async fn reorder_channel_folders(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let order = c
            .params
            .opt_int_list("order")?
            .ok_or_else(|| ApiError::missing("order"))?;
        let changes = c.realm.decide_reorder_folders(order)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

/// # `PATCH /channel_folders/{channel_folder_id}`
pub async fn update_channel_folder(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("channel_folder_id", &path.into_inner())?;
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let name = c.params.opt_str("name");
        let description = c.params.opt_str("description");
        let is_archived = c.params.opt_bool("is_archived")?;
        let changes = c
            .realm
            .decide_update_folder(id, name, description, is_archived)?;
        Ok(Outcome::write(changes, Map::new()))
    })
    .await
    .map(success)
}

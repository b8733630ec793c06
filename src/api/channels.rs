//! Channels, subscriptions, default channels and channel folders.

use std::collections::BTreeMap;

use actix_web::web;
use serde_json::{json, Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::channels::email::ChannelEmailRequest;
use crate::realm::channels::{
    is_hex_color, parse_message_retention_days, require_non_guest, ArchiveChannel, ChannelPatch,
    ChannelSetting, ChannelSpec, CreateChannel, CreateFolder, DefaultChannel, Principal,
    ReorderFolders, StreamFilter, SubscribeItem, SubscribeOutcome, SubscribeRequest,
    SubscriptionProperties, Unsubscribe, UpdateChannel, UpdateFolder, UpdateSubscriptions,
};
use crate::realm::groups::SettingValue;
use crate::realm::messages::edit::{DeleteTopic, DELETE_TOPIC_BATCH};
use crate::realm::topics_policy::TopicsPolicy;
use crate::realm::{Realm, User, UserId};

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// Group-setting parameters, as sent (the rule looks them up); on updates each is
/// `{"new": value, "old": value}`.
fn group_settings(p: &Params, update: bool) -> ApiResult<Vec<(ChannelSetting, SettingValue)>> {
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
        out.push((s, SettingValue::parse(name, &v)?));
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

fn channel_spec(p: &Params) -> ApiResult<ChannelSpec> {
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
        settings: group_settings(p, false)?,
    })
}

/// `principals`, decoded (the rule resolves them).
fn principals(p: &Params) -> ApiResult<Option<Vec<Principal>>> {
    p.opt_json("principals")?
        .map(|v| Principal::parse_list(&v))
        .transpose()
}

fn stream_id_path(raw: &str) -> ApiResult<i64> {
    path_int("stream_id", raw)
}

/// Notification messages are not sent (hearth has no messages yet): the two flags are
/// type-checked as Zulip does, then reported as ignored.
fn check_announce_flags(p: &Params) -> ApiResult<()> {
    p.check_unread_bool("announce")?;
    p.check_unread_bool("send_new_subscription_messages")
}

/// # `POST /channels/create`
pub async fn create_channel(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |_, me, p| {
                require_non_guest(me)?;
                let name = p.str("name")?;
                let description = p.opt_str("description").unwrap_or_default();
                let subscribers = match p.opt_json("subscribers")? {
                    None => None,
                    Some(v) => Some(Principal::parse_list(&v).map_err(|e| {
                        if e.msg == "principals is not a list" {
                            ApiError::bad_request("subscribers is not a list")
                        } else {
                            e
                        }
                    })?),
                };
                check_announce_flags(p)?;
                Ok(CreateChannel {
                    name,
                    description,
                    subscribers,
                    spec: channel_spec(p)?,
                })
            },
            Realm::decide_create_channel,
        )
        .await?;
    req.reply(one("id", json!(id)))
}

/// Parses `subscriptions` of `POST /users/me/subscriptions`.
fn subscribe_items(p: &Params) -> ApiResult<Vec<SubscribeItem>> {
    subscribe_list(p, "subscriptions")?.ok_or_else(|| ApiError::missing("subscriptions"))
}

/// A JSON list of `{name, description?, color?}` objects under `key`, if given.
fn subscribe_list(p: &Params, key: &str) -> ApiResult<Option<Vec<SubscribeItem>>> {
    let Some(v) = p.opt_json(key)? else {
        return Ok(None);
    };
    let list = v
        .as_array()
        .ok_or_else(|| ApiError::bad_request(format!("{key} is not a list")))?;
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let obj = item
                .as_object()
                .ok_or_else(|| ApiError::bad_request(format!("{key}[{i}] is not a dict")))?;
            let string = |k: &str| -> ApiResult<Option<String>> {
                match obj.get(k) {
                    None => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(ApiError::bad_request(format!(
                        "{key}[{i}][\"{k}\"] is not a string"
                    ))),
                }
            };
            let name = string("name")?.ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{key}[{i}][\"name\"] field is missing: Field required"
                ))
            })?;
            Ok(SubscribeItem {
                name,
                description: string("description")?,
                color: string("color")?,
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

/// # `POST /users/me/subscriptions`
pub async fn subscribe(req: ApiRequest) -> ApiResponse {
    let out = req
        .write(
            |_, me, p| {
                // Guests subscribe nobody, themselves included (`add_subscriptions_backend`).
                require_non_guest(me)?;
                let items = subscribe_items(p)?;
                let principals = principals(p)?;
                let authorization_errors_fatal = p.bool_or("authorization_errors_fatal", true)?;
                check_announce_flags(p)?;
                Ok(SubscribeRequest {
                    items,
                    principals,
                    spec: channel_spec(p)?,
                    authorization_errors_fatal,
                })
            },
            Realm::decide_subscribe,
        )
        .await?;
    req.reply(subscribed_body(&out))
}

/// The answer of a subscription: who joined what, who was in already, and what the
/// caller could not join (only when something was refused).
fn subscribed_body(out: &SubscribeOutcome) -> Map<String, Value> {
    let by_user = |m: &BTreeMap<UserId, Vec<String>>| {
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
    body
}

/// # `PATCH /users/me/subscriptions`
///
/// Joins (`add`) and leaves (`delete`) channels in one request; the answer holds both
/// halves' keys.
pub async fn update_subscriptions(req: ApiRequest) -> ApiResponse {
    let out = req
        .write(
            |_, _, p| {
                let add = subscribe_list(p, "add")?.unwrap_or_default();
                // `AddSubscriptionData`: `check_color("add.color", ...)`.
                if add
                    .iter()
                    .any(|i| i.color.as_deref().is_some_and(|c| !is_hex_color(c)))
                {
                    return Err(ApiError::bad_request(
                        "add.color is not a valid hex color code",
                    ));
                }
                let delete = p.opt_str_list("delete")?.unwrap_or_default();
                Ok(UpdateSubscriptions { add, delete })
            },
            Realm::decide_update_subscriptions,
        )
        .await?;
    let mut body = subscribed_body(&out.added);
    body.insert("removed".into(), json!(out.removed.removed));
    body.insert("not_removed".into(), json!(out.removed.not_removed));
    req.reply(body)
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
    let out = req
        .write(
            |_, _, p| {
                let names = p
                    .opt_str_list("subscriptions")?
                    .ok_or_else(|| ApiError::missing("subscriptions"))?;
                if let Some(v) = p.opt_json("principals")? {
                    Realm::check_principals_type(&v)?;
                }
                Ok(Unsubscribe {
                    names,
                    principals: principals(p)?,
                })
            },
            Realm::decide_unsubscribe,
        )
        .await?;
    let mut body = Map::new();
    body.insert("removed".into(), json!(out.removed));
    body.insert("not_removed".into(), json!(out.not_removed));
    req.reply(body)
}

/// # `POST /users/me/subscriptions/properties`
pub async fn update_subscription_properties(req: ApiRequest) -> ApiResponse {
    req.write(
        |_, _, p| {
            let data = p
                .opt_json("subscription_data")?
                .ok_or_else(|| ApiError::missing("subscription_data"))?;
            SubscriptionProperties::parse(&data)
        },
        Realm::decide_subscription_properties,
    )
    .await?;
    req.reply(Map::new())
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
    req.write(
        |_, _, p| {
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
                settings: group_settings(p, true)?,
            };
            Ok(UpdateChannel { id, patch })
        },
        Realm::decide_update_channel,
    )
    .await?;
    req.reply(Map::new())
}

/// # `DELETE /streams/{stream_id}`
pub async fn archive_stream(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = stream_id_path(&path.into_inner())?;
    req.write(
        |_, _, _| Ok(ArchiveChannel { id }),
        Realm::decide_archive_channel,
    )
    .await?;
    req.reply(Map::new())
}

/// `stream_id` of `/default_streams`, after `require_admin`.
fn default_channel(realm: &Realm, me: &User, p: &Params) -> ApiResult<DefaultChannel> {
    realm.require_admin(me)?;
    Ok(DefaultChannel {
        stream_id: p.int("stream_id")?,
    })
}

/// # `POST /default_streams`
pub async fn add_default_stream(req: ApiRequest) -> ApiResponse {
    req.write(default_channel, Realm::decide_add_default_channel)
        .await?;
    req.reply(Map::new())
}

/// # `DELETE /default_streams`
pub async fn remove_default_stream(req: ApiRequest) -> ApiResponse {
    req.write(default_channel, Realm::decide_remove_default_channel)
        .await?;
    req.reply(Map::new())
}

/// # `POST /channel_folders/create`
pub async fn create_channel_folder(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                Ok(CreateFolder {
                    name: p.str("name")?,
                    description: p.opt_str("description").unwrap_or_default(),
                })
            },
            Realm::decide_create_folder,
        )
        .await?;
    req.reply(one("channel_folder_id", json!(id)))
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
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            let order = p
                .opt_int_list("order")?
                .ok_or_else(|| ApiError::missing("order"))?;
            Ok(ReorderFolders { order })
        },
        Realm::decide_reorder_folders,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /channel_folders/{channel_folder_id}`
pub async fn update_channel_folder(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("channel_folder_id", &path.into_inner())?;
    req.write(
        |realm, me, p| {
            realm.require_admin(me)?;
            Ok(UpdateFolder {
                id,
                name: p.opt_str("name"),
                description: p.opt_str("description"),
                is_archived: p.opt_bool("is_archived")?,
            })
        },
        Realm::decide_update_folder,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /streams/{stream_id}/delete_topic`
///
/// One batch of the topic's messages per request; `complete: false` while more remain.
pub async fn delete_topic(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    req.message_store().await?;
    let complete = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                let stream_id = path_int("stream_id", &path)?;
                let mut topic = p.str("topic_name")?;
                if topic == realm.settings.empty_topic_display_name {
                    topic.clear();
                }
                Ok(DeleteTopic {
                    stream_id,
                    topic,
                    batch: DELETE_TOPIC_BATCH,
                })
            },
            Realm::decide_delete_topic,
        )
        .await?;
    req.reply(one("complete", complete.into()))
}

/// # `GET /users/{user_id}/channels`
///
/// The ids of the channels a user is subscribed to whose subscribers the caller may
/// see (feature level 440).
pub async fn get_user_channels(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    // Zulip's route takes digits only (`<int:user_id>`).
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(super::error::not_found_error());
    }
    let user_id = raw.parse::<i64>().unwrap_or(-1);
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let ids = c.realm.view_user_channels(me, user_id)?;
        Ok(Outcome::read(one("subscribed_channel_ids", json!(ids))))
    })
    .await
    .map(success)
}

/// # `GET /streams/{stream_id}/email_address`
///
/// The channel's address at the email gateway, in Zulip's format at the realm's host.
/// hearth has no email gateway: mail sent there reaches nothing.
pub async fn get_stream_email_address(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let stream_id = stream_id_path(&path.into_inner())?;
    let server_url = req.server_url();
    let email = req
        .write(
            |realm, _, p| {
                let url = realm.url(&server_url);
                let host = url
                    .split("://")
                    .nth(1)
                    .unwrap_or(url)
                    .split(['/', ':'])
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                Ok(ChannelEmailRequest {
                    stream_id,
                    sender_id: p.opt_int("sender_id")?,
                    host,
                })
            },
            Realm::decide_channel_email,
        )
        .await?;
    req.reply(one("email", json!(email)))
}

//! Users: own user, user listings, single users, user creation.

use std::panic::{catch_unwind, AssertUnwindSafe};

use actix_web::{web, HttpResponse};
use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::Outcome;
use super::{success, success_value, ApiRequest, ApiResponse, CallOpts, Parsed};
use crate::error::{ApiError, ApiResult};
use crate::realm::users::{password_is_strong, CreateUser, UserView};
use crate::realm::{Realm, User};

fn view_opts(c: &super::Ctx<'_>) -> Result<UserView, ApiError> {
    Ok(UserView {
        client_gravatar: c.params.bool_or("client_gravatar", true)?,
        include_custom_profile_fields: c.params.bool_or("include_custom_profile_fields", false)?,
    })
}

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// # `GET /users/me`
///
/// The body but `max_message_id` is rendered once per user and kept while the user,
/// the email visibility and the profile fields are unchanged (`hub::answers`); the
/// newest message id is kept while no row was written and no newer message became
/// visible.
pub async fn get_own_user(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    let version = req.hub.current();
    let me = req.authenticate(&version)?;
    let user = version.users.get(&me.id).ok_or_else(ApiError::internal)?;
    let head = req
        .hub
        .own_user_bodies()
        .get_or_render(&version, user, || own_user_head(&version, me))?;
    // The generation first: a write after it bumps it, so what is kept is never
    // taken for a later state.
    let key = (store.generation(), version.messages.max_visible());
    let newest = req
        .hub
        .own_user_bodies()
        .newest_received(me.id, key, || version.max_message_id(&store, me))?;
    let ignored = req.params.unused();
    let mut body = Vec::with_capacity(head.len() + 64);
    body.extend_from_slice(&head);
    match newest {
        Some(id) => body.extend_from_slice(id.to_string().as_bytes()),
        None => body.extend_from_slice(b"-1"),
    }
    if !ignored.is_empty() {
        body.extend_from_slice(b",\"ignored_parameters_unsupported\":");
        serde_json::to_writer(&mut body, &ignored).map_err(|_| ApiError::internal())?;
    }
    body.push(b'}');
    Ok(HttpResponse::Ok()
        .insert_header(crate::api::json_content_type())
        .body(body))
}

/// The success answer of `GET /users/me` up to `max_message_id`'s value: the
/// encoding of `success(own_user_json)` with `max_message_id` taken out wherever the
/// rendering put it, reopened for that key to be written last, per request.
fn own_user_head(version: &Realm, me: &User) -> ApiResult<Bytes> {
    let mut fields = version.own_user_json(me);
    fields.shift_remove("max_message_id");
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        serde_json::to_vec(&success_value(fields))
    }))
    .map_err(|_| {
        tracing::error!("rendering /users/me panicked");
        ApiError::internal()
    })?
    .map_err(|_| ApiError::internal())?;
    // An object with keys (`result` at least): its closing brace becomes the key.
    let Some(open) = rendered.strip_suffix(b"}") else {
        tracing::error!("/users/me is not an object");
        return Err(ApiError::internal());
    };
    let mut head = Vec::with_capacity(open.len() + 20);
    head.extend_from_slice(open);
    head.extend_from_slice(b",\"max_message_id\":");
    Ok(Bytes::from(head))
}

/// # `GET /users`
pub async fn get_users(req: ApiRequest) -> ApiResponse {
    req.read_large(CallOpts::USER, |c| {
        let me = c.me()?;
        let view = view_opts(c)?;
        let ids = c.params.opt_int_list("user_ids")?;
        let members = c.realm.view_users(me, ids.as_deref(), view)?;
        Ok(Outcome::read(one("members", Value::Array(members))))
    })
    .await
}

/// # `GET /users/{user_id}` and `GET /users/{email}`
pub async fn get_user(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let key = path.into_inner();
    enum Key {
        Id(i64),
        Email(String),
    }
    let key = if !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit()) {
        // Digits too large for an id cannot name a user.
        Key::Id(key.parse().unwrap_or(-1))
    } else if key.contains('@') {
        Key::Email(key)
    } else {
        return Err(super::error::not_found_error());
    };
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let view = view_opts(c)?;
        let user = match key {
            Key::Id(id) => c.realm.view_user(me, id, view)?,
            Key::Email(email) => c.realm.view_user_by_email(me, &email, view)?,
        };
        Ok(Outcome::read(one("user", user)))
    })
    .await
    .map(success)
}

/// # `POST /users`
pub async fn create_user(req: ApiRequest) -> ApiResponse {
    let parsed = req.parse(|realm, me, p| {
        realm.require_admin(me)?;
        let email = p.str("email")?;
        let password = p.str("password")?;
        let full_name = p.str("full_name")?;
        Ok((email, password, full_name))
    })?;
    // argon2 is deliberately slow and zxcvbn can be: both run off the realm actor, once
    // the caller is known to be an administrator (the rule checks everything again).
    let Parsed {
        me,
        req: (email, password, full_name),
    } = parsed;
    let strength = password.clone();
    let password_strong = web::block(move || password_is_strong(&strength))
        .await
        .map_err(|_| ApiError::internal())?;
    let password_hash = crate::passwords::hash(password).await?;
    let q = CreateUser {
        email,
        full_name,
        password_strong,
        password_hash,
    };
    let user_id = req
        .commit(Parsed { me, req: q }, Realm::decide_create_user)
        .await?;
    req.reply(one("user_id", json!(user_id)))
}

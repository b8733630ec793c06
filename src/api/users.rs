//! Users: own user, user listings, single users, user creation.

use actix_web::web;
use serde_json::{json, Map, Value};

use super::Outcome;
use super::{success, ApiRequest, ApiResponse, CallOpts};
use crate::error::ApiError;
use crate::realm::users::{CreateUser, UserView};

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
pub async fn get_own_user(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    req.read(CallOpts::USER, move |c| {
        let me = c.me()?;
        let mut body = c.realm.own_user_json(me);
        super::messages::fill_max_message_id(&store, c.realm, me, &mut body)?;
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
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
    // argon2 is deliberately slow: hash off the realm actor, and only once the caller
    // is known to be an administrator (the rule checks everything again).
    let hash = match req.params.peek("password") {
        Some(pw) => {
            req.check(|realm, me| realm.require_admin(me))?;
            Some(crate::passwords::hash(pw).await?)
        }
        None => None,
    };
    req.call(CallOpts::USER, move |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let email = c.params.str("email")?;
        let password = c.params.str("password")?;
        let full_name = c.params.str("full_name")?;
        let password_hash = hash.ok_or_else(ApiError::internal)?;
        let req = CreateUser {
            email,
            full_name,
            password,
            password_hash,
        };
        let (changes, user_id) = c.realm.decide_create_user(me, req, c.cx)?;
        Ok(Outcome::write(changes, one("user_id", json!(user_id))))
    })
    .await
    .map(success)
}

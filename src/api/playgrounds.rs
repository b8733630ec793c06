//! Code playgrounds: `POST /realm/playgrounds`, `DELETE /realm/playgrounds/{id}`.
//! Administrators only, checked before any parameter (Zulip's `require_realm_admin`).

use actix_web::web;
use serde_json::{Map, Value};

use super::params::path_int;
use super::{ApiRequest, ApiResponse};
use crate::realm::playgrounds::{check_pygments_language, AddPlayground, RemovePlayground};
use crate::realm::Realm;

/// # `POST /realm/playgrounds`
pub async fn add_playground(req: ApiRequest) -> ApiResponse {
    let id = req
        .write(
            |realm, me, p| {
                realm.require_admin(me)?;
                // Zulip's signature order: name, url_template, pygments_language.
                let name = p.str("name")?;
                let url_template = p.str("url_template")?;
                let pygments_language = p.str("pygments_language")?;
                check_pygments_language(&pygments_language)?;
                Ok(AddPlayground {
                    name: name.trim().to_owned(),
                    pygments_language: pygments_language.trim().to_owned(),
                    url_template: url_template.trim().to_owned(),
                })
            },
            Realm::decide_add_playground,
        )
        .await?;
    let mut body = Map::new();
    body.insert("id".into(), Value::from(id));
    req.reply(body)
}

/// # `DELETE /realm/playgrounds/{playground_id}`
pub async fn remove_playground(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    req.write(
        |realm, me, _| {
            realm.require_admin(me)?;
            Ok(RemovePlayground {
                id: path_int("playground_id", &raw)?,
            })
        },
        Realm::decide_remove_playground,
    )
    .await?;
    req.reply(Map::new())
}

//! Message reminders (Zulip's `zerver/views/reminders.py`): create, list and delete
//! the caller's reminders. Delivery is the realm's tick (`realm/messages/reminders.rs`).

use actix_web::web;
use serde_json::Map;

use super::params::path_int;
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::realm::messages::reminders::{CreateReminder, DeleteReminder};
use crate::realm::Realm;

/// # `GET /reminders`
pub async fn get_reminders(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let mut body = Map::new();
        body.insert("reminders".into(), c.realm.view_reminders(me).into());
        Ok(Outcome::read(body))
    })
    .await
    .map(success)
}

/// # `POST /reminders`
///
/// The reminder's text is written and rendered here, on the worker, from the message
/// as this version sees it; the rule writes it again only if it came out different.
pub async fn create_reminder(req: ApiRequest) -> ApiResponse {
    let store = req.message_store().await?;
    let id = req
        .write(
            |version, me, p| {
                let message_id = p.int("message_id")?;
                let deliver_at = p.int("scheduled_delivery_timestamp")?;
                let note = p.opt_str("note");
                let mut q = CreateReminder {
                    message_id,
                    deliver_at,
                    note,
                    prepared: None,
                };
                q.prepared = version.prerender_reminder(&store, me, &q);
                Ok(q)
            },
            Realm::decide_create_reminder,
        )
        .await?;
    let mut body = Map::new();
    body.insert("reminder_id".into(), id.into());
    req.reply(body)
}

/// # `DELETE /reminders/{reminder_id}`
pub async fn delete_reminder(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let id = path_int("reminder_id", &path)?;
    req.write(
        |_, _, _| Ok(DeleteReminder { id }),
        Realm::decide_delete_reminder,
    )
    .await?;
    req.reply(Map::new())
}

//! Invitations: list, send by email, reusable links, revoke, resend. Parameters are
//! read in the order of Zulip's `typed_endpoint` signatures (`zerver/views/invite.py`),
//! after `require_member_or_admin`; the rules (`realm/invites.rs`) check the rest.
//!
//! Emails go out after the invitations are durable, off the realm actor, through
//! `--smtp-url` (the log on a development server without it), queued for the server's
//! one sender (`mail::MailQueue`, bounded; a request waits only while it is full); a
//! failed delivery is logged and tried again twice, as Zulip's `email_senders` queue.
//! A realm sends at most Zulip's `max_invites` (100) invitations a day. A production server without SMTP refuses email
//! invitations (nothing is stored); links work everywhere.

use actix_web::web;
use serde_json::{Map, Value};

use super::params::{path_int, Params};
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::mail::{Email, MailQueue};
use crate::realm::invites::{
    invitation_error, invite_link, invitee_emails, parse_invite_as, CreateInviteLink, Invite,
    InviteSpec, InviteUsers, RevokeInvite, DEFAULT_VALIDITY_MINUTES, MAX_INVITES,
};
use crate::realm::{Realm, Role, User};

fn one(key: &str, value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.to_owned(), value);
    m
}

/// The text of a server that cannot send email (Zulip's `send_test_email` wording; a
/// Zulip server without email accepts invitations and drops their emails, hearth says
/// so instead).
pub const NO_EMAIL: &str = "Outgoing email not yet configured, see \
     https://zulip.readthedocs.io/en/latest/production/email.html";

/// The parameters both creating views take, in their signature order up to
/// `invite_expires_in_minutes`; `stream_ids` is left empty for the caller (its place
/// and requiredness differ).
fn spec_head(p: &Params) -> ApiResult<InviteSpec> {
    let group_ids = p.opt_int_list("group_ids")?;
    let include = p.bool_or("include_realm_default_subscriptions", false)?;
    let invite_as = match p.opt_int("invite_as")? {
        Some(v) => parse_invite_as(v)?,
        None => Role::Member,
    };
    let expires =
        match p.opt_json("invite_expires_in_minutes")? {
            None => Some(DEFAULT_VALIDITY_MINUTES),
            Some(Value::Null) => None,
            Some(v) => Some(v.as_i64().ok_or_else(|| {
                ApiError::bad_request("invite_expires_in_minutes is not an integer")
            })?),
        };
    Ok(InviteSpec {
        group_ids,
        include_realm_default_subscriptions: include,
        invite_as,
        expires_in_minutes: expires,
        stream_ids: Vec::new(),
    })
}

/// # `GET /invites`
pub async fn get_invites(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let url = c.realm.url(c.server_url).to_owned();
        let invites = c.realm.view_invites(me, c.cx.now_secs(), &url)?;
        Ok(Outcome::read(one("invites", Value::Array(invites))))
    })
    .await
    .map(success)
}

/// The mail queue, or Zulip's refusal for a server without email.
fn mailer(req: &ApiRequest) -> ApiResult<MailQueue> {
    req.state
        .mailer
        .clone()
        .ok_or_else(|| ApiError::bad_request(NO_EMAIL))
}

/// # `POST /invites`
pub async fn invite_users(req: ApiRequest) -> ApiResponse {
    let now = req.now_secs();
    let parsed = req.parse(|realm: &Realm, me: &User, p: &Params| {
        realm.require_member_or_admin(me)?;
        let mut spec = spec_head(p)?;
        let raw = p.str("invitee_emails")?;
        let notify = p.bool_or("notify_referrer_on_join", true)?;
        spec.stream_ids = p
            .opt_int_list("stream_ids")?
            .ok_or_else(|| ApiError::missing("stream_ids"))?;
        let emails = if raw.is_empty() {
            Vec::new()
        } else {
            invitee_emails(&raw, MAX_INVITES)
        };
        let q = InviteUsers {
            spec,
            emails,
            notify_referrer_on_join: notify,
        };
        realm.check_invite_users(me, &q, now)?;
        Ok(q)
    })?;
    let mailer = mailer(&req)?;
    let me = parsed.me;
    let sent = req.commit(parsed, Realm::decide_invite_users).await?;
    send_invitations(&req, &mailer, me, &sent.created).await;
    if !sent.skipped.is_empty() {
        return Err(invitation_error(
            "Some of those addresses are already using Zulip, so we didn't send them an \
             invitation. We did send invitations to everyone else!",
            &sent.skipped,
            true,
        ));
    }
    req.reply(Map::new())
}

/// # `POST /invites/multiuse`
pub async fn create_invite_link(req: ApiRequest) -> ApiResponse {
    let key = req
        .write(
            |realm: &Realm, me: &User, p: &Params| {
                realm.require_member_or_admin(me)?;
                let mut spec = spec_head(p)?;
                spec.stream_ids = p.opt_int_list("stream_ids")?.unwrap_or_default();
                let q = CreateInviteLink { spec };
                realm.check_create_invite_link(me, &q)?;
                Ok(q)
            },
            Realm::decide_create_invite_link,
        )
        .await?;
    let version = req.hub.current();
    let link = invite_link(version.url(&req.server_url()), &key);
    req.reply(one("invite_link", link.into()))
}

/// # `DELETE /invites/{invite_id}`
pub async fn revoke_invite(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    revoke(req, false, &path.into_inner()).await
}

/// # `DELETE /invites/multiuse/{invite_id}`
pub async fn revoke_invite_link(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    revoke(req, true, &path.into_inner()).await
}

async fn revoke(req: ApiRequest, multiuse: bool, raw: &str) -> ApiResponse {
    req.write(
        |realm: &Realm, me: &User, _: &Params| {
            realm.require_member_or_admin(me)?;
            let id = path_int("invite_id", raw)?;
            realm.access_invite(me, multiuse, id)?;
            Ok(RevokeInvite { multiuse, id })
        },
        Realm::decide_revoke_invite,
    )
    .await?;
    req.reply(Map::new())
}

/// # `POST /invites/{invite_id}/resend`
///
/// Zulip's `resend_user_invite_email` stores nothing (`do_send_user_invite_email`
/// only queues the email): a read of the published version, then the email.
pub async fn resend_invite(req: ApiRequest, path: web::Path<String>) -> ApiResponse {
    let raw = path.into_inner();
    let now = req.now_secs();
    let (me, invite) = req.check(|realm: &Realm, me: &User| {
        realm.require_member_or_admin(me)?;
        let id = path_int("invite_id", &raw)?;
        let invite = realm.access_invite(me, false, id)?.clone();
        // `do_send_user_invite_email` checks the limit for one more.
        realm.check_invite_limit(1, now)?;
        Ok((me.id, invite))
    })?;
    let mailer = mailer(&req)?;
    send_invitations(&req, &mailer, me, &[invite]).await;
    req.reply(Map::new())
}

/// Zulip's `zerver/emails/invitation` in plain text.
fn invitation_email(realm: &Realm, site: &str, referrer: &User, invite: &Invite) -> Option<Email> {
    let to = invite.email()?.to_owned();
    let link = invite_link(site, &invite.key);
    let name = &realm.settings.name;
    let expiry = match invite.expiry {
        Some(at) => format!(
            "This invitation expires on {} (UTC).",
            chrono::DateTime::from_timestamp(at, 0)
                .unwrap_or_default()
                .format("%Y-%m-%d %H:%M")
        ),
        None => "This invitation does not expire.".to_owned(),
    };
    Some(Email {
        to,
        subject: format!("{} invited you to join {name}", referrer.full_name),
        body: format!(
            "Hi there,\n\n{} ({}) wants you to join them on Zulip,\nin the organization \
             {name} at {site}.\n\nTo get started, open this link and choose your name and \
             password:\n\n    {link}\n\n{expiry}\n",
            referrer.full_name, referrer.delivery_email
        ),
        ..Email::default()
    })
}

/// Queues each invitation's email; the answer waits only while the queue is full.
async fn send_invitations(req: &ApiRequest, mailer: &MailQueue, referrer: u64, invites: &[Invite]) {
    // The version is not held across the waits below.
    let (site, emails) = {
        let version = req.hub.current();
        let server_url = req.server_url();
        let site = version.url(&server_url).trim_end_matches('/').to_owned();
        let Some(referrer) = version.user(referrer) else {
            return;
        };
        let emails: Vec<Email> = invites
            .iter()
            .filter_map(|invite| invitation_email(&version, &site, referrer, invite))
            .collect();
        (site, emails)
    };
    for email in emails {
        mailer.send(&site, email).await;
    }
}

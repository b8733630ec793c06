//! Invitations: email invitations (Zulip's `PreregistrationUser` with its
//! `Confirmation`) and reusable invitation links (`MultiuseInvite`), and accepting one
//! on the sign-up page.
//!
//! Rules and texts follow `zerver/views/invite.py` (check order, role limits of
//! `check_role_based_permissions`, `access_streams_for_invite`,
//! `access_user_groups_for_invite`) and `zerver/actions/invites.py`
//! (`do_invite_users`: "Some emails did not validate, so we didn't send any
//! invitations.", "We weren't able to invite anyone.", the per-address texts of
//! `zerver/lib/email_validation.py`; `do_get_invites_controlled_by_user` for the
//! listing). Every change sends `invites_changed` to the realm's administrators (bots
//! with the role included) and the invitation's creator (`notify_invites_changed`).
//!
//! Each invitation carries a confirmation key of 24 lower-case letters and digits, as
//! Zulip's `generate_key`; its link is `<realm url>/join/<key>/`, served by hearth's
//! sign-up page (`api/signup.rs`).

use imbl::{HashMap, OrdMap};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::channels::ChannelId;
use super::events::{Audience, Event};
use super::groups::{GroupId, GroupPermission, RealmSetting};
use super::users::{check_full_name, check_not_system_bot, email_is_valid, NewHuman};
use super::{Change, Cx, Decided, Realm, RealmChange, Role, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// An invitation id: email invitations and links are numbered apart, as Zulip's two
/// tables are.
pub type InviteId = u64;

/// Zulip's `INVITATION_LINK_VALIDITY_DAYS` (10) in minutes: the default expiry.
pub const DEFAULT_VALIDITY_MINUTES: i64 = 10 * 24 * 60;

/// Zulip's `max_invites` of a self-hosted realm: `get_default_max_invites_for_realm_plan_type`
/// gives `PLAN_TYPE_SELF_HOSTED` none, and `Realm.max_invites` then answers
/// `INVITES_DEFAULT_REALM_DAILY_MAX` (100). Email invitations a realm may send in a day,
/// and so the most one request may carry.
pub const MAX_INVITES: usize = 100;
/// The day `max_invites` counts over (`estimate_recent_invites(days=1)`), in seconds.
const INVITE_LIMIT_WINDOW_SECS: i64 = 24 * 60 * 60;
/// Zulip's `check_invite_limit` text.
pub const DAILY_LIMIT_REACHED: &str = "To protect users, Zulip limits the number of \
     invitations you can send in one day. Because you have reached the limit, no \
     invitations were sent.";

/// Zulip's `CONFIRMATION_LINK_DEFAULT_VALIDITY_DAYS` (1) in seconds: how long the
/// confirmation of a reusable link's sign-up stays valid.
pub const CONFIRMATION_VALIDITY_SECS: i64 = 24 * 60 * 60;
/// An address gets at most one confirmation email in this time.
pub const CONFIRMATION_RESEND_SECS: i64 = 60 * 60;
/// Sign-up confirmations through reusable links a realm sends in a day: as many as
/// invitations, so that a link cannot be used to send email without bound.
pub const MAX_CONFIRMATIONS: usize = MAX_INVITES;

/// Characters of a confirmation key (Zulip's `generate_key`: base32, lower case).
const KEY_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Length of a confirmation key.
pub const KEY_LENGTH: usize = 24;

/// What an invitation is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InviteKind {
    /// An email invitation to one address.
    Email {
        email: String,
        notify_referrer_on_join: bool,
    },
    /// A reusable link.
    Multiuse,
    /// The confirmation of an address typed on a reusable link's page (Zulip's
    /// `PreregistrationUser` of a `MultiuseInvite`, with its `USER_REGISTRATION`
    /// confirmation): emailed to that address, it signs up as an email invitation
    /// does, with the link's role, channels and groups. Not an invitation: never listed,
    /// no `invites_changed`.
    Confirmation { email: String, link: InviteId },
}

/// Where an invitation stands (Zulip's confirmation `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum InviteStatus {
    Active,
    /// An email invitation someone signed up with (or whose address signed up through
    /// another invitation).
    Used,
    Revoked,
}

/// One invitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invite {
    pub id: InviteId,
    pub kind: InviteKind,
    /// Who created it (Zulip's `referred_by`).
    pub referred_by: UserId,
    pub invited_as: Role,
    /// UNIX seconds.
    pub invited_at: i64,
    /// UNIX seconds; `None` never expires.
    pub expiry: Option<i64>,
    /// Channels the new user joins, besides the defaults when
    /// `include_realm_default_subscriptions`.
    pub stream_ids: Vec<ChannelId>,
    pub group_ids: Vec<GroupId>,
    pub include_realm_default_subscriptions: bool,
    /// The confirmation key of its link.
    pub key: String,
    pub status: InviteStatus,
}

impl Invite {
    pub fn is_multiuse(&self) -> bool {
        matches!(self.kind, InviteKind::Multiuse)
    }

    /// The address of an email invitation.
    pub fn email(&self) -> Option<&str> {
        match &self.kind {
            InviteKind::Email { email, .. } | InviteKind::Confirmation { email, .. } => Some(email),
            InviteKind::Multiuse => None,
        }
    }

    /// Whether this is an email invitation (made by `POST /invites`).
    pub fn is_email_invitation(&self) -> bool {
        matches!(self.kind, InviteKind::Email { .. })
    }

    /// Whether this is the confirmation of a reusable link's sign-up.
    pub fn is_confirmation(&self) -> bool {
        matches!(self.kind, InviteKind::Confirmation { .. })
    }

    pub fn expired(&self, now: i64) -> bool {
        self.expiry.is_some_and(|e| e < now)
    }

    /// Zulip's `filter_to_valid_prereg_users` / the multiuse listing: not used, not
    /// revoked, not expired.
    pub fn is_valid(&self, now: i64) -> bool {
        self.status == InviteStatus::Active && !self.expired(now)
    }
}

/// The realm's invitations.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InviteState {
    pub email: OrdMap<InviteId, Invite>,
    pub multiuse: OrdMap<InviteId, Invite>,
    pub next_email_id: InviteId,
    pub next_multiuse_id: InviteId,
    /// Confirmation key -> (is multiuse, id). Derived; rebuilt after loading.
    #[serde(skip)]
    by_key: HashMap<String, (bool, InviteId)>,
    /// Lower-cased address -> its email invitations, whatever their state. Derived;
    /// rebuilt after loading. A sign-up asks for an address's invitations without a
    /// scan.
    #[serde(skip)]
    by_email: HashMap<String, Vec<InviteId>>,
}

impl InviteState {
    /// Drops every invitation (a data export holds none); the ids go on from where
    /// they were.
    pub fn clear(&mut self) {
        self.email = OrdMap::new();
        self.multiuse = OrdMap::new();
        self.rebuild_index();
    }

    pub fn rebuild_index(&mut self) {
        self.by_key = self
            .email
            .values()
            .chain(self.multiuse.values())
            .map(|i| (i.key.clone(), (i.is_multiuse(), i.id)))
            .collect();
        self.by_email = HashMap::new();
        for i in self.email.values() {
            if let Some(email) = i.email() {
                self.by_email
                    .entry(email.to_lowercase())
                    .or_default()
                    .push(i.id);
            }
        }
    }

    /// The email invitations to an address (any state).
    fn to_address(&self, email: &str) -> impl Iterator<Item = &Invite> {
        self.by_email
            .get(email.to_lowercase().as_str())
            .into_iter()
            .flatten()
            .filter_map(|id| self.email.get(id))
    }

    pub fn by_key(&self, key: &str) -> Option<&Invite> {
        let (multiuse, id) = self.by_key.get(key)?;
        self.map(*multiuse).get(id)
    }

    fn map(&self, multiuse: bool) -> &OrdMap<InviteId, Invite> {
        if multiuse {
            &self.multiuse
        } else {
            &self.email
        }
    }

    fn map_mut(&mut self, multiuse: bool) -> &mut OrdMap<InviteId, Invite> {
        if multiuse {
            &mut self.multiuse
        } else {
            &mut self.email
        }
    }

    fn next_id(&self, multiuse: bool) -> InviteId {
        if multiuse {
            self.next_multiuse_id.max(1)
        } else {
            self.next_email_id.max(1)
        }
    }
}

/// Facts about invitations (appended to `RealmChange`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InviteChange {
    /// Invitations were created (one request's worth; all by one referrer).
    Created { invites: Vec<Invite> },
    /// An invitation was revoked.
    Revoked { multiuse: bool, id: InviteId },
    /// A user signed up through an invitation: an email invitation is used, and every
    /// other active email invitation to the same address with it.
    Accepted {
        multiuse: bool,
        id: InviteId,
        user_id: UserId,
    },
}

/// The roles an invitation may carry, by wire value (Zulip's `INVITE_AS`).
pub fn parse_invite_as(v: i64) -> ApiResult<Role> {
    Role::from_value(v).ok_or_else(|| ApiError::bad_request("Invalid invite_as"))
}

/// What the two creating operations share, parsed on the worker.
#[derive(Debug, Clone)]
pub struct InviteSpec {
    pub group_ids: Option<Vec<i64>>,
    pub include_realm_default_subscriptions: bool,
    pub invite_as: Role,
    /// `None`: never expires.
    pub expires_in_minutes: Option<i64>,
    pub stream_ids: Vec<i64>,
}

/// `POST /invites`, parsed.
#[derive(Debug, Clone)]
pub struct InviteUsers {
    pub spec: InviteSpec,
    /// The addresses as `get_invitee_emails_set` extracts them, first-seen order.
    pub emails: Vec<String>,
    pub notify_referrer_on_join: bool,
}

/// What `POST /invites` decided: the invitations made (to email), and the addresses
/// skipped because they already have an account.
#[derive(Debug, Clone)]
pub struct InvitesSent {
    pub created: Vec<Invite>,
    pub skipped: Vec<(String, String, bool)>,
}

/// `POST /invites/multiuse`, parsed.
#[derive(Debug, Clone)]
pub struct CreateInviteLink {
    pub spec: InviteSpec,
}

/// `DELETE /invites/{id}` and `DELETE /invites/multiuse/{id}`.
#[derive(Debug, Clone)]
pub struct RevokeInvite {
    pub multiuse: bool,
    pub id: i64,
}

/// The sign-up form, checked on the worker (the password hashed there).
#[derive(Debug, Clone)]
pub struct AcceptInvite {
    pub key: String,
    /// The address typed on the form (reusable links only; an email invitation's
    /// address is its own).
    pub email: Option<String>,
    pub full_name: String,
    pub password_strong: bool,
    pub password_hash: String,
    /// The server sends email: a reusable link's address must be confirmed first
    /// (`decide_confirm_address`), so the link alone makes no account.
    pub links_need_confirmation: bool,
}

/// A reusable link's sign-up form on a server that sends email: the address to
/// confirm, checked on the worker (`email_is_valid`, not a system bot's).
#[derive(Debug, Clone)]
pub struct ConfirmAddress {
    /// The link's key.
    pub key: String,
    pub email: String,
}

/// The account the sign-up made.
#[derive(Debug, Clone)]
pub struct NewAccount {
    pub user_id: UserId,
    pub email: String,
    pub api_key: String,
}

/// Zulip's `get_invitee_emails_set`: split on commas and newlines, `Name <address>`
/// keeps the address, each stripped; repeats dropped (first-seen order). Stops once it
/// has `max + 1` addresses: a request with more is refused whatever the rest says, and
/// a large body must not cost more than that to read.
pub fn invitee_emails(raw: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for part in raw.split([',', '\n']) {
        let email = match (part.find('<'), part.rfind('>')) {
            (Some(a), Some(b)) if a < b => &part[a + 1..b],
            _ => part,
        };
        let email = email.trim();
        if seen.insert(email) {
            out.push(email.to_owned());
            if out.len() > max {
                break;
            }
        }
    }
    out
}

/// `check_invite_limit`'s refusal: an `InvitationError` with `daily_limit_reached`.
pub fn daily_limit_error() -> ApiError {
    invitation_error(DAILY_LIMIT_REACHED, &[], false).with("daily_limit_reached", true)
}

/// `InvitationError`: 400 `INVITATION_FAILED` with Zulip's data fields.
pub fn invitation_error(msg: &str, errors: &[(String, String, bool)], sent: bool) -> ApiError {
    let errors: Vec<Value> = errors.iter().map(|(e, m, d)| json!([e, m, d])).collect();
    ApiError::new(400, ErrorCode::InvitationFailed, msg)
        .with("errors", errors)
        .with("sent_invitations", sent)
        .with("license_limit_reached", false)
        .with("daily_limit_reached", false)
}

/// The text of a link that no longer leads anywhere.
pub const LINK_EXPIRED: &str = "This invitation link has expired or been revoked.";
/// An email invitation someone already signed up with.
pub const LINK_USED: &str = "This invitation link has already been used.";
/// Whether inviting at `role` takes an administrator (`require_realm_admin` for the
/// roles above member in Zulip's `invite_users_backend`).
fn needs_admin(role: Role) -> bool {
    matches!(role, Role::Owner | Role::Administrator | Role::Moderator)
}

/// An invitation whose creator has since lost the right to invite at its role.
pub const LINK_CREATOR_CANNOT_GRANT: &str = "The person who sent this invitation can no \
     longer invite users with this role. Ask them, or an administrator, for a new one.";
/// A reusable link's sign-up for an address that has an email invitation of its own.
pub const INVITED_SEPARATELY: &str = "This address has an invitation of its own: sign \
     up through the link in the email sent to it.";
/// A reusable link's sign-up with a password on a server that confirms addresses.
pub const CONFIRM_FIRST: &str = "Confirm your address first: follow the link in the \
     email sent to it.";
/// Too many reusable-link confirmations today.
pub const CONFIRMATIONS_LIMIT_REACHED: &str = "Too many sign-ups through invitation links \
     today. Please try again tomorrow.";
/// A key no invitation has.
pub const LINK_UNKNOWN: &str = "This invitation link is not valid.";

impl Realm {
    /// `check_role_based_permissions`.
    fn check_invite_role(me: &User, invited_as: Role, require_admin: bool) -> ApiResult<()> {
        if invited_as == Role::Owner && !me.is_owner() {
            return Err(ApiError::must_be_owner());
        }
        // A plain `JsonableError` in Zulip's view, not `OrganizationAdministratorRequiredError`.
        if require_admin && !me.is_admin() {
            return Err(ApiError::bad_request(
                "Must be an organization administrator",
            ));
        }
        Ok(())
    }

    /// The checks of the creating views after their parameters, in Zulip's order:
    /// the realm setting, the role limits, (the addresses), the channels, the groups.
    /// Returns the channel and group ids.
    fn check_invite_spec(
        &self,
        me: &User,
        spec: &InviteSpec,
        setting: RealmSetting,
        emails: Option<&[String]>,
    ) -> ApiResult<(Vec<ChannelId>, Vec<GroupId>)> {
        self.require_member_or_admin(me)?;
        if !self.has_realm_permission(me, setting) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        Self::check_invite_role(me, spec.invite_as, needs_admin(spec.invite_as))?;
        if emails.is_some_and(<[String]>::is_empty) {
            return Err(ApiError::bad_request(
                "You must specify at least one email address.",
            ));
        }
        // `access_streams_for_invite`.
        let mut channels = Vec::with_capacity(spec.stream_ids.len());
        for id in &spec.stream_ids {
            let ch = self.access_channel(me, *id).map_err(|_| {
                ApiError::bad_request(format!("Invalid channel ID {id}. No invites were sent."))
            })?;
            channels.push(ch.id);
        }
        let forbidden = channels.iter().any(|id| {
            !self.default_channels.contains(id)
                && self
                    .channel(*id)
                    .is_some_and(|ch| !self.can_subscribe_others(me, ch))
        });
        if forbidden {
            return Err(ApiError::bad_request(
                "You do not have permission to subscribe other users to channels.",
            ));
        }
        // `access_user_groups_for_invite`.
        let mut groups = Vec::new();
        for id in spec.group_ids.iter().flatten() {
            let g = self.access_group_for_update(me, *id, GroupPermission::CanAddMembers, false)?;
            groups.push(g.id);
        }
        channels.dedup();
        Ok((channels, groups))
    }

    /// The cheap checks of `POST /invites`, for the worker before anything costly.
    pub fn check_invite_users(&self, me: &User, q: &InviteUsers, now: i64) -> ApiResult<()> {
        self.check_invite_spec(me, &q.spec, RealmSetting::CanInviteUsers, Some(&q.emails))?;
        self.check_invite_limit(q.emails.len(), now)
    }

    /// Email invitations made in the day before `now`, counted up to one past the
    /// limit. They are the newest (ids grow with time), so this reads at most
    /// `MAX_INVITES + 1` of them from the end whatever the realm's history; and it is
    /// the stored invitations themselves, so the count holds across a restart.
    fn invites_sent_recently(&self, now: i64) -> usize {
        self.sent_recently(now).0
    }

    /// Email invitations and reusable-link confirmations made in the day before
    /// `now`, each counted up to one past its limit. Both live in the email table, in
    /// the order made; each kind is capped by its limit, so this reads at most both
    /// limits' worth.
    fn sent_recently(&self, now: i64) -> (usize, usize) {
        let since = now.saturating_sub(INVITE_LIMIT_WINDOW_SECS);
        let (mut invitations, mut confirmations) = (0, 0);
        for i in self
            .invites
            .email
            .values()
            .rev()
            .take_while(|i| i.invited_at > since)
            .take(MAX_INVITES + MAX_CONFIRMATIONS + 2)
        {
            if i.is_confirmation() {
                confirmations += 1;
            } else {
                invitations += 1;
            }
        }
        (
            invitations.min(MAX_INVITES + 1),
            confirmations.min(MAX_CONFIRMATIONS + 1),
        )
    }

    /// Zulip's `check_invite_limit`: `invitees` more would pass `max_invites` in a day.
    pub fn check_invite_limit(&self, invitees: usize, now: i64) -> ApiResult<()> {
        if invitees > MAX_INVITES || invitees + self.invites_sent_recently(now) > MAX_INVITES {
            return Err(daily_limit_error());
        }
        Ok(())
    }

    /// The cheap checks of `POST /invites/multiuse`.
    pub fn check_create_invite_link(&self, me: &User, q: &CreateInviteLink) -> ApiResult<()> {
        self.check_invite_spec(me, &q.spec, RealmSetting::CreateMultiuseInvite, None)
            .map(|_| ())
    }

    fn new_invite(
        me: &User,
        id: InviteId,
        kind: InviteKind,
        spec: &InviteSpec,
        channels: &[ChannelId],
        groups: &[GroupId],
        cx: &mut Cx,
    ) -> Invite {
        let now = cx.now_secs();
        let bytes: [u8; KEY_LENGTH] = cx.random_bytes();
        let key = confirmation_key(&bytes);
        Invite {
            id,
            kind,
            referred_by: me.id,
            invited_as: spec.invite_as,
            invited_at: now,
            expiry: spec
                .expires_in_minutes
                .map(|m| now.saturating_add(m.saturating_mul(60))),
            stream_ids: channels.to_vec(),
            group_ids: groups.to_vec(),
            include_realm_default_subscriptions: spec.include_realm_default_subscriptions,
            key,
            status: InviteStatus::Active,
        }
    }

    /// `POST /invites` (`invite_users_backend`, then `do_invite_users`).
    pub fn decide_invite_users(
        &self,
        me: &User,
        q: InviteUsers,
        cx: &mut Cx,
    ) -> ApiResult<Decided<InvitesSent>> {
        let (channels, groups) =
            self.check_invite_spec(me, &q.spec, RealmSetting::CanInviteUsers, Some(&q.emails))?;
        // `do_invite_users` checks the limit first, with every address asked for.
        self.check_invite_limit(q.emails.len(), cx.now_secs())?;
        let mut errors = Vec::new();
        let mut good = Vec::new();
        for email in &q.emails {
            if email_is_valid(email) {
                good.push(email.clone());
            } else {
                errors.push((email.clone(), "Invalid address.".to_owned(), false));
            }
        }
        // `get_existing_user_errors`.
        let mut skipped = Vec::new();
        good.retain(|email| {
            if super::messages::moves::is_system_bot_email(email) {
                skipped.push((email.clone(), "Reserved for system bots.".to_owned(), false));
                return false;
            }
            match self.user_by_delivery_email(email) {
                None => true,
                Some(u) if u.is_active => {
                    skipped.push((email.clone(), "Already has an account.".to_owned(), false));
                    false
                }
                Some(_) => {
                    skipped.push((
                        email.clone(),
                        "Account has been deactivated.".to_owned(),
                        true,
                    ));
                    false
                }
            }
        });
        if !errors.is_empty() {
            errors.extend(skipped);
            return Err(invitation_error(
                "Some emails did not validate, so we didn't send any invitations.",
                &errors,
                false,
            ));
        }
        if !skipped.is_empty() && skipped.len() == q.emails.len() {
            return Err(invitation_error(
                "We weren't able to invite anyone.",
                &skipped,
                false,
            ));
        }
        let first = self.invites.next_id(false);
        let created: Vec<Invite> = good
            .into_iter()
            .zip(first..)
            .map(|(email, id)| {
                let kind = InviteKind::Email {
                    email,
                    notify_referrer_on_join: q.notify_referrer_on_join,
                };
                Self::new_invite(me, id, kind, &q.spec, &channels, &groups, cx)
            })
            .collect();
        let change = Change::Realm(RealmChange::Invite(InviteChange::Created {
            invites: created.clone(),
        }));
        Ok(Decided::new(vec![change], InvitesSent { created, skipped }))
    }

    /// `POST /invites/multiuse` (`generate_multiuse_invite_backend`); answers the link's
    /// key.
    pub fn decide_create_invite_link(
        &self,
        me: &User,
        q: CreateInviteLink,
        cx: &mut Cx,
    ) -> ApiResult<Decided<String>> {
        let (channels, groups) =
            self.check_invite_spec(me, &q.spec, RealmSetting::CreateMultiuseInvite, None)?;
        let id = self.invites.next_id(true);
        let invite = Self::new_invite(
            me,
            id,
            InviteKind::Multiuse,
            &q.spec,
            &channels,
            &groups,
            cx,
        );
        let key = invite.key.clone();
        let change = Change::Realm(RealmChange::Invite(InviteChange::Created {
            invites: vec![invite],
        }));
        Ok(Decided::new(vec![change], key))
    }

    /// `access_invite_by_id` / `access_multiuse_invite_by_id`.
    pub fn access_invite(&self, me: &User, multiuse: bool, id: i64) -> ApiResult<&Invite> {
        self.require_member_or_admin(me)?;
        let invite = u64::try_from(id)
            .ok()
            .and_then(|id| self.invites.map(multiuse).get(&id))
            .filter(|i| !i.is_confirmation())
            .ok_or_else(|| ApiError::bad_request("No such invitation"))?;
        if invite.referred_by != me.id {
            Self::check_invite_role(me, invite.invited_as, true)?;
        }
        if multiuse && invite.status == InviteStatus::Revoked {
            return Err(ApiError::bad_request("Invitation has already been revoked"));
        }
        Ok(invite)
    }

    /// `DELETE /invites/{id}`, `DELETE /invites/multiuse/{id}`.
    pub fn decide_revoke_invite(
        &self,
        me: &User,
        q: RevokeInvite,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let invite = self.access_invite(me, q.multiuse, q.id)?;
        Ok(Decided::changes(vec![Change::Realm(RealmChange::Invite(
            InviteChange::Revoked {
                multiuse: q.multiuse,
                id: invite.id,
            },
        ))]))
    }

    /// Whether `referrer` may still invite at `role` (the role limits of
    /// `check_role_based_permissions` and `require_member_or_admin`, against the
    /// creator's role of now). Zulip applies them when an invitation is made and not
    /// again at sign-up, so a demoted administrator's links kept making
    /// administrators; hearth refuses them instead.
    fn may_grant(referrer: &User, role: Role) -> bool {
        !referrer.is_guest()
            && !referrer.is_bot()
            && Self::check_invite_role(referrer, role, needs_admin(role)).is_ok()
    }

    /// An address a sign-up may take: no system bot's, no account's yet.
    fn check_address_free(&self, email: &str) -> ApiResult<()> {
        check_not_system_bot(email)?;
        if self.user_by_delivery_email(email).is_some() {
            return Err(ApiError::bad_request(format!(
                "{email} already has an account"
            )));
        }
        Ok(())
    }

    /// An email invitation to `email` that could still be accepted (valid, and its
    /// creator active). A reusable link confirms no address: without a confirmation
    /// by email, whoever holds the link could take this address, with the link's role
    /// instead of the invitation's, and leave the invitation dead.
    pub fn pending_invitation(&self, email: &str, now: i64) -> Option<&Invite> {
        self.invites.to_address(email).find(|i| {
            i.is_email_invitation()
                && i.is_valid(now)
                && self.user(i.referred_by).is_some_and(|u| u.is_active)
        })
    }

    /// The invitation a sign-up key opens, or the text of the page that says why not.
    pub fn invite_for_signup(&self, key: &str, now: i64) -> Result<&Invite, &'static str> {
        let invite = self.invites.by_key(key).ok_or(LINK_UNKNOWN)?;
        match invite.status {
            InviteStatus::Used if !invite.is_multiuse() => Err(LINK_USED),
            InviteStatus::Active if !invite.expired(now) => {
                let Some(referrer) = self.user(invite.referred_by).filter(|u| u.is_active) else {
                    return Err(LINK_EXPIRED);
                };
                let link_gone = match &invite.kind {
                    InviteKind::Confirmation { link, .. } => self
                        .invites
                        .multiuse
                        .get(link)
                        .is_none_or(|l| !l.is_valid(now)),
                    _ => false,
                };
                if link_gone {
                    Err(LINK_EXPIRED)
                } else if Self::may_grant(referrer, invite.invited_as) {
                    Ok(invite)
                } else {
                    Err(LINK_CREATOR_CANNOT_GRANT)
                }
            }
            _ => Err(LINK_EXPIRED),
        }
    }

    /// The sign-up page's form: a new user with the invitation's role, channels and
    /// groups, made by the rule every new user is made by (`decide_new_human`).
    pub fn decide_accept_invite(
        &self,
        q: AcceptInvite,
        cx: &mut Cx,
    ) -> ApiResult<Decided<NewAccount>> {
        let invite = self
            .invite_for_signup(&q.key, cx.now_secs())
            .map_err(ApiError::bad_request)?;
        let email = match (invite.email(), &q.email) {
            (Some(e), _) => e.to_owned(),
            (None, Some(e)) => e.trim().to_owned(),
            (None, None) => return Err(ApiError::missing("email")),
        };
        if !email_is_valid(&email) {
            return Err(ApiError::bad_request("Enter a valid email address."));
        }
        if invite.is_multiuse() && q.links_need_confirmation {
            return Err(ApiError::bad_request(CONFIRM_FIRST));
        }
        if invite.is_multiuse() && self.pending_invitation(&email, cx.now_secs()).is_some() {
            return Err(ApiError::bad_request(INVITED_SEPARATELY));
        }
        self.check_address_free(&email)?;
        let full_name = check_full_name(&q.full_name)?;
        if !q.password_strong {
            return Err(ApiError::bad_request("The password is too weak."));
        }
        let mut channels: Vec<ChannelId> = Vec::new();
        if invite.include_realm_default_subscriptions {
            channels.extend(self.default_channels.iter().copied());
        }
        for id in &invite.stream_ids {
            if !channels.contains(id) {
                channels.push(*id);
            }
        }
        let groups: Vec<GroupId> = invite
            .group_ids
            .iter()
            .copied()
            .filter(|g| self.groups.contains_key(g) && !self.is_group_deactivated(*g))
            .collect();
        let human = NewHuman {
            email: email.clone(),
            full_name,
            role: invite.invited_as,
            password_hash: Some(q.password_hash),
            channels,
            groups,
        };
        let (user_id, api_key, mut changes) = self.decide_new_human(human, cx);
        let notify = match &invite.kind {
            InviteKind::Email {
                notify_referrer_on_join,
                ..
            } => *notify_referrer_on_join,
            // The sign-up of a reusable link makes a `PreregistrationUser` with the
            // field's default.
            InviteKind::Multiuse | InviteKind::Confirmation { .. } => true,
        };
        if notify && self.user(invite.referred_by).is_some_and(|u| u.is_active) {
            changes.push(self.referrer_notice(invite.referred_by, user_id, &changes, cx));
        }
        changes.push(Change::Realm(RealmChange::Invite(InviteChange::Accepted {
            multiuse: invite.is_multiuse(),
            id: invite.id,
            user_id,
        })));
        Ok(Decided::new(
            changes,
            NewAccount {
                user_id,
                email,
                api_key,
            },
        ))
    }

    /// A reusable link's sign-up on a server that sends email (Zulip's
    /// `maybe_send_to_registration` with a `MultiuseInvite`): the address is not
    /// taken yet; a confirmation with the link's role, channels and groups is made, to
    /// be emailed to that address. The account is made only when its key is followed.
    pub fn decide_confirm_address(
        &self,
        q: ConfirmAddress,
        cx: &mut Cx,
    ) -> ApiResult<Decided<Invite>> {
        let now = cx.now_secs();
        let link = self
            .invite_for_signup(&q.key, now)
            .map_err(ApiError::bad_request)?;
        if !link.is_multiuse() {
            return Err(ApiError::bad_request(LINK_UNKNOWN));
        }
        let email = q.email.trim().to_owned();
        if !email_is_valid(&email) {
            return Err(ApiError::bad_request("Enter a valid email address."));
        }
        self.check_address_free(&email)?;
        // One confirmation an hour per address: a link holder cannot flood an inbox.
        let recent = self.invites.to_address(&email).any(|i| {
            i.is_confirmation() && now.saturating_sub(i.invited_at) < CONFIRMATION_RESEND_SECS
        });
        if recent {
            return Err(ApiError::bad_request(format!(
                "A confirmation email was sent to {email} less than an hour ago: follow the \
                 link in it, or try again later."
            )));
        }
        if self.sent_recently(now).1 >= MAX_CONFIRMATIONS {
            return Err(ApiError::bad_request(CONFIRMATIONS_LIMIT_REACHED));
        }
        let bytes: [u8; KEY_LENGTH] = cx.random_bytes();
        let confirmation = Invite {
            id: self.invites.next_id(false),
            kind: InviteKind::Confirmation {
                email,
                link: link.id,
            },
            referred_by: link.referred_by,
            invited_as: link.invited_as,
            invited_at: now,
            expiry: Some(now.saturating_add(CONFIRMATION_VALIDITY_SECS)),
            stream_ids: link.stream_ids.clone(),
            group_ids: link.group_ids.clone(),
            include_realm_default_subscriptions: link.include_realm_default_subscriptions,
            key: confirmation_key(&bytes),
            status: InviteStatus::Active,
        };
        let change = Change::Realm(RealmChange::Invite(InviteChange::Created {
            invites: vec![confirmation.clone()],
        }));
        Ok(Decided::new(vec![change], confirmation))
    }

    /// The Notification Bot's direct message to an invitation's creator once it is
    /// accepted (`process_new_human_user`): "@_**Name|id** accepted your invitation to
    /// join Zulip!", unread. Rendered against the realm with the sign-up's `changes`
    /// applied (the mention names the new user); its id follows the messages those
    /// changes already send.
    fn referrer_notice(
        &self,
        referrer: UserId,
        new_user: UserId,
        changes: &[Change],
        cx: &mut Cx,
    ) -> Change {
        use super::messages::moves::NOTIFICATION_BOT_ID;
        use super::messages::{Message, MessageChange, Recipient};
        let mut after = self.clone();
        for c in changes {
            after.apply(c);
        }
        let name = after
            .user(new_user)
            .map(|u| u.full_name.clone())
            .unwrap_or_default();
        let content = format!("@_**{name}|{new_user}** accepted your invitation to join Zulip!");
        let sent_before = changes
            .iter()
            .filter(|c| matches!(c, Change::Message(m) if m.delivered().is_some()))
            .count() as u64;
        let mut users = vec![referrer, NOTIFICATION_BOT_ID];
        users.sort_unstable();
        let rendered = after.render_message(&content).html;
        let message = Message::internal(
            self.messages.next_id + sent_before,
            NOTIFICATION_BOT_ID,
            Recipient::Direct { users },
            content,
            rendered,
            cx.now_secs(),
        );
        Change::Message(MessageChange::Notice {
            message: Box::new(message),
            read_by: NOTIFICATION_BOT_ID,
            all_read: false,
        })
    }

    /// `GET /invites` (`do_get_invites_controlled_by_user`): valid email invitations,
    /// then valid links; administrators see every one, others their own.
    pub fn view_invites(&self, me: &User, now: i64, realm_url: &str) -> ApiResult<Vec<Value>> {
        self.require_member_or_admin(me)?;
        // A deactivated user's invitations are dead (Zulip revokes them).
        let mine = |i: &&Invite| {
            (me.is_admin() || i.referred_by == me.id)
                && i.is_valid(now)
                && self.user(i.referred_by).is_some_and(|u| u.is_active)
        };
        // An address that has an account since (made by `POST /users`) is no longer
        // invited.
        let open = |i: &&Invite| {
            i.email()
                .is_none_or(|e| self.user_by_delivery_email(e).is_none())
        };
        let mut out: Vec<Value> = Vec::new();
        let invitations = self
            .invites
            .email
            .values()
            .filter(|i| i.is_email_invitation());
        for i in invitations.filter(mine).filter(open) {
            let mut m = Map::new();
            m.insert("email".into(), i.email().unwrap_or_default().into());
            m.insert("invited_by_user_id".into(), i.referred_by.into());
            m.insert("invited".into(), i.invited_at.into());
            m.insert("expiry_date".into(), json!(i.expiry));
            m.insert("id".into(), i.id.into());
            m.insert("invited_as".into(), i.invited_as.value().into());
            m.insert("is_multiuse".into(), false.into());
            let notify = matches!(
                i.kind,
                InviteKind::Email {
                    notify_referrer_on_join: true,
                    ..
                }
            );
            m.insert("notify_referrer_on_join".into(), notify.into());
            out.push(Value::Object(m));
        }
        for i in self.invites.multiuse.values().filter(mine) {
            let mut m = Map::new();
            m.insert("invited_by_user_id".into(), i.referred_by.into());
            m.insert("invited".into(), i.invited_at.into());
            m.insert("expiry_date".into(), json!(i.expiry));
            m.insert("id".into(), i.id.into());
            m.insert("link_url".into(), invite_link(realm_url, &i.key).into());
            m.insert("invited_as".into(), i.invited_as.value().into());
            m.insert("is_multiuse".into(), true.into());
            out.push(Value::Object(m));
        }
        Ok(out)
    }

    pub(super) fn apply_invite_change(&mut self, c: &InviteChange) {
        match c {
            InviteChange::Created { invites } => {
                for i in invites {
                    let multiuse = i.is_multiuse();
                    let state = &mut self.invites;
                    if multiuse {
                        state.next_multiuse_id = state.next_id(true).max(i.id + 1);
                    } else {
                        state.next_email_id = state.next_id(false).max(i.id + 1);
                    }
                    state.by_key.insert(i.key.clone(), (multiuse, i.id));
                    if let Some(email) = i.email() {
                        state
                            .by_email
                            .entry(email.to_lowercase())
                            .or_default()
                            .push(i.id);
                    }
                    state.map_mut(multiuse).insert(i.id, i.clone());
                }
            }
            InviteChange::Revoked { multiuse, id } => {
                if let Some(i) = self.invites.map_mut(*multiuse).get_mut(id) {
                    i.status = InviteStatus::Revoked;
                }
            }
            InviteChange::Accepted {
                multiuse,
                id,
                user_id,
            } => {
                let Some(email) = self.user(*user_id).map(|u| u.delivery_email.to_lowercase())
                else {
                    return;
                };
                // Zulip's `process_new_human_user`: the invitation used, the address's
                // other invitations revoked.
                let others: Vec<InviteId> = self
                    .invites
                    .to_address(&email)
                    .filter(|i| i.status == InviteStatus::Active)
                    .map(|i| i.id)
                    .collect();
                for other in others {
                    if let Some(i) = self.invites.email.get_mut(&other) {
                        i.status = InviteStatus::Revoked;
                    }
                }
                if !*multiuse {
                    if let Some(i) = self.invites.email.get_mut(id) {
                        i.status = InviteStatus::Used;
                    }
                }
            }
        }
    }

    /// `notify_invites_changed`: active administrators (bots included) and the
    /// invitation's creator.
    pub(super) fn invite_events(&self, c: &InviteChange) -> Vec<Event> {
        // A confirmation is not an invitation: nobody's list of them changed.
        if let InviteChange::Created { invites } = c {
            if invites.first().is_some_and(Invite::is_confirmation) {
                return Vec::new();
            }
        }
        let referrer = match c {
            InviteChange::Created { invites } => invites.first().map(|i| i.referred_by),
            InviteChange::Revoked { multiuse, id }
            | InviteChange::Accepted { multiuse, id, .. } => {
                self.invites.map(*multiuse).get(id).map(|i| i.referred_by)
            }
        };
        let mut ids: Vec<UserId> = self
            .users
            .values()
            .filter(|u| u.is_active && u.is_admin())
            .map(|u| u.id)
            .collect();
        ids.extend(referrer.filter(|r| self.user(*r).is_some_and(|u| u.is_active)));
        vec![Event::new(
            json!({"type": "invites_changed"}),
            Audience::users(ids),
        )]
    }
}

/// A confirmation key of random bytes (Zulip's `generate_key`).
fn confirmation_key(bytes: &[u8; KEY_LENGTH]) -> String {
    bytes
        .iter()
        .map(|b| KEY_ALPHABET[usize::from(*b) % KEY_ALPHABET.len()] as char)
        .collect()
}

/// An invitation's link: `<realm url>/join/<key>/`.
pub fn invite_link(realm_url: &str, key: &str) -> String {
    format!("{}/join/{key}/", realm_url.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invitee_emails_as_zulip_splits_them() {
        assert_eq!(
            invitee_emails("a@x.com, B <b@x.com>\nc@x.com,a@x.com", 10),
            vec!["a@x.com", "b@x.com", "c@x.com"]
        );
        assert_eq!(invitee_emails(" ", 10), vec![""]);
        // One past the limit is enough to refuse; repeats do not count.
        assert_eq!(
            invitee_emails("a@x.com,a@x.com,b@x.com,c@x.com,d@x.com", 2),
            vec!["a@x.com", "b@x.com", "c@x.com"]
        );
    }

    fn dev_realm() -> Realm {
        crate::realm::dev::testing::dev_realm(&mut Cx::seeded(0, 7))
    }

    /// On a server that sends email, the rule itself refuses a reusable link's sign-up
    /// that skipped the confirmation, whatever the handler does.
    #[test]
    fn a_link_makes_no_account_without_its_confirmation_where_email_is_sent() {
        let mut realm = dev_realm();
        let iago = realm
            .user_by_delivery_email("iago@zulip.com")
            .expect("iago")
            .clone();
        let mut cx = Cx::seeded(1_000, 1);
        let spec = InviteSpec {
            group_ids: None,
            include_realm_default_subscriptions: true,
            invite_as: Role::Member,
            expires_in_minutes: None,
            stream_ids: Vec::new(),
        };
        let made = realm
            .decide_create_invite_link(&iago, CreateInviteLink { spec }, &mut cx)
            .expect("a link");
        made.changes.iter().for_each(|c| realm.apply(c));
        let key = realm
            .invites
            .multiuse
            .values()
            .next()
            .expect("the link")
            .key
            .clone();
        let accept = |confirm: bool| AcceptInvite {
            key: key.clone(),
            email: Some("newcomer@example.test".into()),
            full_name: "New Comer".into(),
            password_strong: true,
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            links_need_confirmation: confirm,
        };
        let Err(refused) = realm.decide_accept_invite(accept(true), &mut cx) else {
            panic!("a link made an account without its confirmation");
        };
        assert_eq!(refused.msg, CONFIRM_FIRST);
        assert!(realm.decide_accept_invite(accept(false), &mut cx).is_ok());
    }

    #[test]
    fn links() {
        assert_eq!(
            invite_link("http://z.test/", "abc"),
            "http://z.test/join/abc/"
        );
    }
}

//! Users: authentication, creation and the user objects of seed 2.5 and 2.7.

use md5::{Digest, Md5};
use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;

use super::groups::RealmSetting;
use super::{Change, Cx, Decided, NewUser, Realm, Role, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::realm::UserChange;

/// Zulip's API key length; a key of any other length is "Malformed".
pub const API_KEY_LENGTH: usize = 32;
/// Zulip's `UserProfile.MAX_NAME_LENGTH`.
pub const MAX_NAME_LENGTH: usize = 100;
/// Zulip's production `PASSWORD_MIN_LENGTH`.
pub const PASSWORD_MIN_LENGTH: usize = 6;
/// Zulip's production `PASSWORD_MIN_GUESSES` (zxcvbn).
pub const PASSWORD_MIN_GUESSES: u64 = 10_000;

/// How a user object is rendered for a viewer (seed 2.5 options).
#[derive(Debug, Clone, Copy, Default)]
pub struct UserView {
    pub client_gravatar: bool,
    pub include_custom_profile_fields: bool,
}

/// `POST /users`, parsed on the worker: the password is hashed and its strength
/// checked there too (both are slow), so the actor never sees it.
#[derive(Debug, Clone)]
pub struct CreateUser {
    pub email: String,
    pub full_name: String,
    /// Whether the password passes `password_is_strong`.
    pub password_strong: bool,
    /// Its argon2 hash, computed off the realm actor.
    pub password_hash: String,
}

/// A human account about to be made, by whatever made it (`POST /users`, an
/// invitation's sign-up page): `Realm::decide_new_human` is the one rule for it.
#[derive(Debug, Clone)]
pub struct NewHuman {
    pub email: String,
    /// Already checked (`check_full_name`).
    pub full_name: String,
    pub role: Role,
    pub password_hash: Option<String>,
    /// Channels the user joins (archived ones are skipped).
    pub channels: Vec<super::channels::ChannelId>,
    /// Groups the user joins as a direct member.
    pub groups: Vec<super::groups::GroupId>,
}

/// `POST /bots`, as sent.
#[derive(Debug, Clone)]
pub struct CreateBot {
    pub full_name: String,
    pub short_name: String,
    /// Zulip's `bot_type` (1 when absent: a generic bot).
    pub bot_type: i64,
    /// `payload_url` (checked on the worker; "" when absent, as Zulip stores it).
    pub payload_url: String,
    /// `interface_type` (1 when absent).
    pub interface_type: i64,
    /// `service_name` (the short name when absent).
    pub service_name: Option<String>,
}

/// What `POST /bots` answers about the new bot.
#[derive(Debug, Clone)]
pub struct CreatedBot {
    pub user_id: UserId,
    pub api_key: String,
    pub email: String,
}

/// Hashes a password with argon2id and a random salt (PHC string).
pub fn hash_password(password: &str) -> ApiResult<String> {
    use argon2::password_hash::{rand_core::OsRng, PasswordHasher, SaltString};
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| {
            tracing::error!("argon2 hashing failed: {e}");
            ApiError::internal()
        })
}

/// Zulip's `check_password_strength`: minimum length, then zxcvbn guesses.
pub fn password_is_strong(password: &str) -> bool {
    password.chars().count() >= PASSWORD_MIN_LENGTH
        && zxcvbn::zxcvbn(password, &[]).guesses() >= PASSWORD_MIN_GUESSES
}

/// Zulip's `UserProfile.NAME_INVALID_CHARS`.
pub const NAME_INVALID_CHARS: [char; 6] = ['*', '`', '\\', '>', '"', '@'];

/// Zulip's `check_full_name`, its checks in its order: stripped, 1..=100 characters,
/// printable (`check_string_is_printable`) and none of `NAME_INVALID_CHARS`, and the
/// raw value not ending in `|<digits>` (ambiguous with the mention syntax).
pub fn check_full_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    let len = name.chars().count();
    if len > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request("Name too long!"));
    }
    if len == 0 {
        return Err(ApiError::bad_request("Name must not be empty!"));
    }
    let unprintable = |c: char| c.is_control() || c == '\u{fffe}';
    if name
        .chars()
        .any(|c| unprintable(c) || NAME_INVALID_CHARS.contains(&c))
    {
        return Err(ApiError::bad_request("Invalid characters in name!"));
    }
    let ends_with_id = raw
        .rsplit_once('|')
        .is_some_and(|(_, tail)| !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()));
    if ends_with_id {
        return Err(ApiError::bad_request("Invalid format!"));
    }
    Ok(name.to_owned())
}

/// The longest address an account has (Django's `EmailField`, as Zulip's user model).
pub const MAX_EMAIL_LENGTH: usize = 254;

/// Whether `email` is a valid address (Django's `EmailValidator` role in Zulip's forms).
pub fn email_is_valid(email: &str) -> bool {
    email
        .parse::<email_address::EmailAddress>()
        .is_ok_and(|e| e.domain().contains('.'))
        || email
            .parse::<email_address::EmailAddress>()
            .is_ok_and(|e| e.domain() == "localhost")
}

/// Zulip's `email_reserved_for_system_bots_error`: an address no account may take,
/// wherever accounts are made (`POST /users`, a bot, an invitation's sign-up,
/// `realm create`).
pub fn check_not_system_bot(email: &str) -> ApiResult<()> {
    if super::messages::moves::is_system_bot_email(email) {
        return Err(ApiError::bad_request(format!(
            "{} is reserved for system bots",
            email.trim()
        )));
    }
    Ok(())
}

/// ISO 8601 at minute precision, as Zulip renders `date_joined`.
pub fn iso_minutes(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M+00:00")
        .to_string()
}

/// The gravatar URL Zulip serves for an address.
pub fn gravatar_url(email: &str, version: u32) -> String {
    let hash = Md5::digest(email.to_lowercase().as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("https://secure.gravatar.com/avatar/{hex}?d=identicon&version={version}")
}

/// The medium-size (500 px) gravatar URL Zulip serves as `avatar_url_medium`.
pub fn gravatar_url_medium(email: &str, version: u32) -> String {
    gravatar_url(email, version).replace("?d=identicon&", "?d=identicon&s=500&")
}

impl Realm {
    /// Resolves Basic credentials to an active user, with Zulip's 401 texts.
    ///
    /// The key length is checked first ("Malformed API key"), then the user is found by
    /// real email and the key compared in constant time ("Invalid API key").
    pub fn authenticate(&self, email: &str, api_key: &str) -> ApiResult<&User> {
        if api_key.len() != API_KEY_LENGTH {
            return Err(ApiError::unauthorized("Malformed API key"));
        }
        let user = self.user_by_delivery_email(email);
        // Compare against a dummy key when the email is unknown, so timing says nothing.
        let stored = user.map_or(&[b'0'; API_KEY_LENGTH][..], |u| u.api_key.as_bytes());
        let same: bool = stored.ct_eq(api_key.as_bytes()).into();
        match user {
            Some(u) if same => {
                if u.is_active {
                    Ok(u)
                } else {
                    Err(ApiError::user_deactivated())
                }
            }
            _ => Err(ApiError::unauthorized("Invalid API key")),
        }
    }

    /// Zulip's `access_user_by_api_key`, for the URLs that carry only a key (incoming
    /// webhooks): a key that is not 32 letters and digits is malformed; an unknown one
    /// is invalid; its user must be active. The errors are Zulip's `INVALID_API_KEY`
    /// and `USER_DEACTIVATED` (401), not the `UNAUTHORIZED` of Basic credentials.
    pub fn user_by_api_key(&self, api_key: &str) -> ApiResult<&User> {
        let key = api_key.trim();
        if key.len() != API_KEY_LENGTH || !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ApiError::new(
                401,
                ErrorCode::InvalidApiKey,
                "Malformed API key",
            ));
        }
        let user = self.by_api_key.get(key).and_then(|id| self.user(*id));
        match user {
            Some(u) if bool::from(u.api_key.as_bytes().ct_eq(key.as_bytes())) => {
                if u.is_active {
                    Ok(u)
                } else {
                    Err(ApiError::new(
                        401,
                        ErrorCode::UserDeactivated,
                        "Account is deactivated",
                    ))
                }
            }
            _ => Err(ApiError::new(
                401,
                ErrorCode::InvalidApiKey,
                "Invalid API key",
            )),
        }
    }

    /// `POST /dev_fetch_api_key`, and the lookup half of `POST /fetch_api_key`.
    pub fn view_login(&self, username: &str) -> ApiResult<&User> {
        if !email_is_valid(username) {
            return Err(ApiError::bad_request("Enter a valid email address."));
        }
        match self.user_by_delivery_email(username) {
            None => Err(ApiError::new(
                401,
                ErrorCode::AuthenticationFailed,
                "Your username or password is incorrect",
            )),
            Some(u) if !u.is_active => Err(ApiError::new(
                401,
                ErrorCode::UserDeactivated,
                "Account is deactivated",
            )),
            Some(u) => Ok(u),
        }
    }

    /// The key-fetch answer: `{api_key, email, user_id}` with the real email.
    pub fn api_key_body(user: &User) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("api_key".into(), user.api_key.clone().into());
        m.insert("email".into(), user.delivery_email.clone().into());
        m.insert("user_id".into(), user.id.into());
        m
    }

    /// `POST /users`: `require_admin`, then the checks after parameter parsing, in
    /// Zulip's order; answers the new user's id.
    pub fn decide_create_user(
        &self,
        me: &User,
        req: CreateUser,
        cx: &mut Cx,
    ) -> ApiResult<Decided<UserId>> {
        self.require_admin(me)?;
        if !me.can_create_users {
            return Err(ApiError::bad_request("User not authorized to create users"));
        }
        let full_name = check_full_name(&req.full_name)?;
        let email = req.email.trim();
        if !email_is_valid(email) {
            return Err(ApiError::bad_request("Bad name or username"));
        }
        check_not_system_bot(email)?;
        if self.user_by_delivery_email(email).is_some() {
            return Err(ApiError::bad_request("Email is already in use."));
        }
        // Zulip's development settings turn the strength check off; production keeps it.
        if !self.settings.dev && !req.password_strong {
            return Err(ApiError::bad_request("The password is too weak."));
        }
        let human = NewHuman {
            email: email.to_owned(),
            full_name,
            role: Role::Member,
            password_hash: Some(req.password_hash),
            channels: self.default_channels.iter().copied().collect(),
            groups: Vec::new(),
        };
        let (user_id, _, changes) = self.decide_new_human(human, cx);
        Ok(Decided::new(changes, user_id))
    }

    /// The changes that make a human account, whoever asked for it (the callers checked
    /// who may, and the address and name): the account, its channels, its groups.
    /// Answers the new id and API key.
    pub fn decide_new_human(&self, human: NewHuman, cx: &mut Cx) -> (UserId, String, Vec<Change>) {
        let user_id = self.next_user_id;
        let api_key = cx.api_key();
        let change = Change::User(UserChange::UserCreated(NewUser {
            user_id,
            delivery_email: human.email,
            full_name: human.full_name,
            role: human.role,
            bot_type: None,
            bot_owner_id: None,
            timezone: String::new(),
            api_key: api_key.clone(),
            password_hash: human.password_hash,
            date_joined: cx.now_secs(),
        }));
        let mut changes = vec![change];
        changes.extend(self.new_user_subscriptions(user_id, &human.channels));
        for group_id in human.groups {
            changes.push(Change::Group(super::GroupChange::MembersAdded {
                group_id,
                user_ids: vec![user_id],
            }));
        }
        // The Welcome Bot's direct message (`realm::onboarding`).
        let is_admin = human.role <= Role::Administrator;
        changes.extend(self.welcome_changes(user_id, is_admin, false, cx));
        (user_id, api_key, changes)
    }

    /// `POST /bots`: a bot owned by `me`, email `<short_name>-bot@<bot domain>`
    /// (`add_bot_backend` is `require_member_or_admin`: no guests, no bots).
    pub fn decide_create_bot(
        &self,
        me: &User,
        q: CreateBot,
        cx: &mut Cx,
    ) -> ApiResult<Decided<CreatedBot>> {
        self.require_member_or_admin(me)?;
        let full_name = check_full_name(&q.full_name)?;
        let short_name = q.short_name.trim();
        let email = format!("{short_name}-bot@{}", self.settings.fake_email_domain);
        if short_name.is_empty() || !email_is_valid(&email) {
            return Err(ApiError::bad_request("Bad name or username"));
        }
        // A bot domain of `zulip.com` would make `welcome-bot@zulip.com` of the short
        // name `welcome`.
        check_not_system_bot(&email)?;
        if self.user_by_delivery_email(&email).is_some() {
            return Err(ApiError::bad_request("Username already in use"));
        }
        let bot_type = self.check_can_create_bot(me, q.bot_type)?;
        let interface = super::bot_services::check_interface(q.interface_type)?;
        let user_id = self.next_user_id;
        let api_key = cx.api_key();
        let change = Change::User(UserChange::UserCreated(NewUser {
            user_id,
            delivery_email: email.clone(),
            full_name,
            role: Role::Member,
            bot_type: Some(bot_type),
            bot_owner_id: Some(me.id),
            timezone: String::new(),
            api_key: api_key.clone(),
            password_hash: None,
            date_joined: cx.now_secs(),
        }));
        let mut changes = vec![change];
        if bot_type == super::bot_services::OUTGOING_WEBHOOK_BOT {
            let service = super::bot_services::OutgoingService {
                name: q.service_name.unwrap_or_else(|| short_name.to_owned()),
                base_url: q.payload_url,
                interface,
                token: cx.api_key(),
            };
            changes.push(Change::Bot(super::bot_services::BotChange::ServiceSet {
                bot_id: user_id,
                service,
                created: true,
            }));
        }
        Ok(Decided::new(
            changes,
            CreatedBot {
                user_id,
                api_key,
                email,
            },
        ))
    }

    /// Zulip's `check_can_create_bot` then `check_valid_bot_type`: the realm's
    /// `can_create_bots_group` allows every bot type (hearth makes generic, incoming
    /// webhook and outgoing webhook bots), `can_create_write_only_bots_group` incoming
    /// webhook bots only. Embedded bots are refused first, as by a Zulip server with
    /// `EMBEDDED_BOTS_ENABLED` off.
    fn check_can_create_bot(&self, me: &User, bot_type: i64) -> ApiResult<u8> {
        const GENERIC: i64 = 1;
        const INCOMING_WEBHOOK: i64 = 2;
        const OUTGOING_WEBHOOK: i64 = super::bot_services::OUTGOING_WEBHOOK_BOT as i64;
        if bot_type == i64::from(super::bot_services::EMBEDDED_BOT) {
            return Err(ApiError::bad_request("Embedded bots are not enabled."));
        }
        let all = self.has_realm_permission(me, RealmSetting::CanCreateBots);
        let write_only = self.has_realm_permission(me, RealmSetting::CanCreateWriteOnlyBots);
        let webhook_only = bot_type == INCOMING_WEBHOOK && write_only;
        if !(all || webhook_only) {
            return Err(ApiError::bad_request("Insufficient permission"));
        }
        let allowed: &[i64] = if all {
            &[GENERIC, INCOMING_WEBHOOK, OUTGOING_WEBHOOK]
        } else if write_only {
            &[INCOMING_WEBHOOK]
        } else {
            &[]
        };
        if !allowed.contains(&bot_type) {
            return Err(ApiError::bad_request("Invalid bot type"));
        }
        Ok(bot_type as u8)
    }

    /// `GET /bots`: the caller's own active bots, administrators included (Zulip's
    /// `get_bots_backend`; every bot of the realm is in `/register`'s `realm_bots`).
    pub fn view_bots(&self, me: &User) -> Vec<Value> {
        self.users
            .values()
            .filter(|b| b.is_bot() && b.is_active && b.bot_owner_id == Some(me.id))
            .map(|b| self.bot_json(b))
            .collect()
    }

    /// Whether `viewer` may see `user`'s real address (`delivery_email`).
    pub fn can_see_delivery_email(&self, viewer: &User, user: &User) -> bool {
        viewer.id == user.id || viewer.is_admin() || self.email_is_public(user)
    }

    /// The user object of seed 2.5 as `viewer` sees it.
    pub fn user_json(&self, viewer: &User, user: &User, view: UserView) -> Map<String, Value> {
        let mut m = self.user_common_json(user);
        let delivery = if self.can_see_delivery_email(viewer, user) {
            Value::from(user.delivery_email.clone())
        } else {
            Value::Null
        };
        m.insert("delivery_email".into(), delivery);
        m.insert("is_imported_stub".into(), false.into());
        let avatar = if view.client_gravatar && self.email_is_public(user) {
            Value::Null
        } else {
            gravatar_url(&user.delivery_email, user.avatar_version).into()
        };
        m.insert("avatar_url".into(), avatar);
        if user.is_bot() {
            m.insert("bot_type".into(), user.bot_type.into());
            m.insert("bot_owner_id".into(), user.bot_owner_id.into());
        } else if view.include_custom_profile_fields {
            m.insert(
                "profile_data".into(),
                Value::Object(self.profile_data(user)),
            );
        }
        m
    }

    /// `GET /users/me`: seed 2.7, always with `delivery_email`, `profile_data` (humans)
    /// and `max_message_id`.
    pub fn own_user_json(&self, me: &User) -> Map<String, Value> {
        let mut m = self.user_common_json(me);
        m.insert("delivery_email".into(), me.delivery_email.clone().into());
        m.insert("is_imported_stub".into(), false.into());
        m.insert(
            "avatar_url".into(),
            gravatar_url(&me.delivery_email, me.avatar_version).into(),
        );
        if me.is_bot() {
            m.insert("bot_type".into(), me.bot_type.into());
            m.insert("bot_owner_id".into(), me.bot_owner_id.into());
        } else {
            m.insert("profile_data".into(), Value::Object(self.profile_data(me)));
        }
        // Filled from the message store by the caller.
        m.insert("max_message_id".into(), json!(-1));
        m
    }

    fn user_common_json(&self, user: &User) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("email".into(), self.api_email(user).into());
        m.insert("user_id".into(), user.id.into());
        m.insert("avatar_version".into(), user.avatar_version.into());
        m.insert("is_admin".into(), user.is_admin().into());
        m.insert("is_owner".into(), user.is_owner().into());
        m.insert("is_guest".into(), user.is_guest().into());
        m.insert("role".into(), user.role.value().into());
        m.insert("is_bot".into(), user.is_bot().into());
        m.insert("full_name".into(), user.full_name.clone().into());
        m.insert("timezone".into(), user.timezone.clone().into());
        m.insert("is_active".into(), user.is_active.into());
        m.insert("date_joined".into(), iso_minutes(user.date_joined).into());
        m
    }

    /// Custom profile field values of a user (seed 2.6).
    fn profile_data(&self, user: &User) -> Map<String, Value> {
        self.user_profile_data(user.id)
    }

    /// `GET /users`: every user (deactivated ones and bots included), or those in `ids`
    /// (Zulip's `get_realm_user_dicts_from_ids`, a filter: ids naming no user of the
    /// realm are left out, each user comes once, in id order).
    pub fn view_users(
        &self,
        viewer: &User,
        ids: Option<&[i64]>,
        view: UserView,
    ) -> ApiResult<Vec<Value>> {
        let render = |u: &User| Value::Object(self.user_json(viewer, u, view));
        Ok(match ids {
            None => self.users.values().map(|u| render(u)).collect(),
            Some(ids) => {
                let wanted: std::collections::BTreeSet<UserId> = ids
                    .iter()
                    .filter_map(|id| u64::try_from(*id).ok())
                    .collect();
                wanted
                    .into_iter()
                    .filter_map(|id| self.user(id))
                    .map(render)
                    .collect()
            }
        })
    }

    /// `GET /users/{user_id}`.
    pub fn view_user(&self, viewer: &User, id: i64, view: UserView) -> ApiResult<Value> {
        // Zulip's `access_user_by_id_including_cross_realm`: the system bots too.
        u64::try_from(id)
            .ok()
            .and_then(|id| {
                self.users
                    .get(&id)
                    .map(std::sync::Arc::as_ref)
                    .or_else(|| super::messages::moves::system_bot(id))
            })
            .map(|u| Value::Object(self.user_json(viewer, u, view)))
            .ok_or_else(|| ApiError::bad_request("No such user"))
    }

    /// `GET /users/{email}`: the API email, or the real one for administrators; a system
    /// bot's address.
    pub fn view_user_by_email(
        &self,
        viewer: &User,
        email: &str,
        view: UserView,
    ) -> ApiResult<Value> {
        // Zulip's `get_user_including_cross_realm`: the system bots too.
        self.user_by_email_for(viewer, email)
            .or_else(|e| super::messages::moves::system_bot_by_email(email).ok_or(e))
            .map(|u| Value::Object(self.user_json(viewer, u, view)))
    }

    /// The user `email` names for `viewer`, as `GET /users/{email}` finds them: the API
    /// email everyone sees, or the real address when `viewer` may see it.
    pub fn user_by_email_for(&self, viewer: &User, email: &str) -> ApiResult<&User> {
        self.user_by_api_email(email)
            .or_else(|| {
                self.user_by_delivery_email(email)
                    .filter(|u| self.can_see_delivery_email(viewer, u))
            })
            .ok_or_else(|| ApiError::bad_request("No such user"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gravatar_matches_zulip() {
        // From the recorded GET /users/me of iago@zulip.com.
        assert_eq!(
            gravatar_url("iago@zulip.com", 1),
            "https://secure.gravatar.com/avatar/af4f06322c177ef4e1e9b2c424986b54?d=identicon&version=1"
        );
    }

    #[test]
    fn full_name_rules() {
        assert_eq!(check_full_name("  Ann  ").ok().as_deref(), Some("Ann"));
        assert_eq!(
            check_full_name(" ").map_err(|e| e.msg),
            Err("Name must not be empty!".into())
        );
        assert_eq!(
            check_full_name(&"x".repeat(101)).map_err(|e| e.msg),
            Err("Name too long!".into())
        );
        assert!(check_full_name(&"x".repeat(100)).is_ok());
        assert_eq!(check_full_name(" A ").ok().as_deref(), Some("A"));
        for bad in ["A*b", "A`b", "A\\b", "A>b", "A\"b", "A@b", "A\u{7}b"] {
            assert_eq!(
                check_full_name(bad).map_err(|e| e.msg),
                Err("Invalid characters in name!".into())
            );
        }
        assert_eq!(
            check_full_name("Ann|15").map_err(|e| e.msg),
            Err("Invalid format!".into())
        );
        assert!(check_full_name("Ann|15 ").is_ok());
        assert!(check_full_name("Ann|x").is_ok());
    }

    #[test]
    fn password_strength() {
        assert!(password_is_strong("correct horse battery"));
        assert!(!password_is_strong("abcd1234"));
        assert!(!password_is_strong("abc"));
        assert!(!password_is_strong("password"));
    }

    #[test]
    fn emails() {
        assert!(email_is_valid("hamlet@zulip.com"));
        assert!(!email_is_valid("not-an-email"));
        assert!(!email_is_valid("hamlet"));
    }
}

//! The development realm (`hearth serve --dev`): Zulip's development server realm,
//! described in `dev_realm.json`, so scripts written against it run unchanged.
//!
//! Seeding is ordinary decisions: it yields the `Change`s a realm is built from, which
//! go through the WAL like any other write.

use serde::Deserialize;

use super::{Change, Cx, EmailVisibility, NewUser, RealmSettings, Role};

const DEV_REALM_JSON: &str = include_str!("dev_realm.json");

/// The first user id of the development realm (Zulip's system bots hold 1-5 there).
const FIRST_DEV_USER_ID: u64 = 6;

#[derive(Deserialize)]
struct DevRealm {
    realm: DevRealmSettings,
    users: Vec<DevUser>,
}

#[derive(Deserialize)]
struct DevRealmSettings {
    name: String,
    subdomain: String,
    empty_topic_display_name: String,
}

#[derive(Deserialize)]
struct DevUser {
    delivery_email: String,
    full_name: String,
    role: i64,
    bot_type: Option<u8>,
    bot_owner: Option<String>,
    timezone: String,
}

/// The administrator who holds `can_create_users` in the development realm.
pub const DEV_USER_CREATOR: &str = "iago@zulip.com";

/// The changes that create the development realm, served at `url`.
pub fn dev_realm_changes(url: &str, cx: &mut Cx) -> Result<Vec<Change>, String> {
    let dev: DevRealm =
        serde_json::from_str(DEV_REALM_JSON).map_err(|e| format!("dev_realm.json: {e}"))?;
    let mut changes = vec![Change::RealmCreated {
        settings: RealmSettings {
            name: dev.realm.name,
            subdomain: dev.realm.subdomain,
            url: url.to_owned(),
            dev: true,
            email_visibility: EmailVisibility::AdminsOnly,
            fake_email_domain: "zulipdev.com".into(),
            empty_topic_display_name: dev.realm.empty_topic_display_name,
            date_created: cx.now_secs(),
        },
    }];
    let id_of = |email: &str| {
        dev.users
            .iter()
            .position(|u| u.delivery_email.eq_ignore_ascii_case(email))
            .map(|i| FIRST_DEV_USER_ID + i as u64)
    };
    for (i, u) in dev.users.iter().enumerate() {
        let role = Role::from_value(u.role).ok_or_else(|| format!("bad role {}", u.role))?;
        let bot_owner_id = match &u.bot_owner {
            Some(owner) => Some(id_of(owner).ok_or_else(|| format!("unknown bot owner {owner}"))?),
            None => None,
        };
        changes.push(Change::UserCreated(NewUser {
            user_id: FIRST_DEV_USER_ID + i as u64,
            delivery_email: u.delivery_email.clone(),
            full_name: u.full_name.clone(),
            role,
            bot_type: u.bot_type,
            bot_owner_id,
            timezone: u.timezone.clone(),
            api_key: cx.api_key(),
            password_hash: None,
            date_joined: cx.now_secs(),
        }));
    }
    let creator = id_of(DEV_USER_CREATOR).ok_or("the development realm has no iago")?;
    changes.push(Change::CanCreateUsersSet {
        user_id: creator,
        value: true,
    });
    Ok(changes)
}

/// The changes that create a production realm with its owner (`hearth realm create`).
pub fn new_realm_changes(
    settings: RealmSettings,
    owner_email: &str,
    owner_name: &str,
    password_hash: Option<String>,
    cx: &mut Cx,
) -> Vec<Change> {
    vec![
        Change::RealmCreated { settings },
        Change::UserCreated(NewUser {
            user_id: 1,
            delivery_email: owner_email.to_owned(),
            full_name: owner_name.to_owned(),
            role: Role::Owner,
            bot_type: None,
            bot_owner_id: None,
            timezone: String::new(),
            api_key: cx.api_key(),
            password_hash,
            date_joined: cx.now_secs(),
        }),
        Change::CanCreateUsersSet {
            user_id: 1,
            value: true,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::Realm;

    #[test]
    fn dev_realm_seeds_users_and_bots() {
        let mut cx = Cx::seeded(1_700_000_000_000, 7);
        let changes = dev_realm_changes("http://127.0.0.1:9991", &mut cx).expect("seed");
        let mut realm = Realm::from_first_change(&changes[0]).expect("first");
        for c in &changes {
            realm.apply(c);
        }
        let iago = realm
            .user_by_delivery_email("IAGO@zulip.com")
            .expect("iago");
        assert!(iago.is_admin() && iago.can_create_users);
        let bot = realm
            .user_by_delivery_email("default-bot@zulip.com")
            .expect("bot");
        let owner = realm
            .user(bot.bot_owner_id.expect("owner"))
            .expect("owner user");
        assert_eq!(owner.delivery_email, "desdemona@zulip.com");
        assert_eq!(
            realm.api_email(iago),
            format!("user{}@zulipdev.com", iago.id)
        );
        assert_eq!(realm.api_email(bot), "default-bot@zulip.com");
    }
}

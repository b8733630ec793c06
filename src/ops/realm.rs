//! `hearth realm create`: a production realm and its owner, in a stopped server's data
//! folder.

use crate::actor::create_realm;
use crate::config::CreateRealm;
use crate::realm::{self, dev, Cx, SystemClock};
use crate::startup::{open_data_folder, StartError};
use crate::storage::DurabilityMode;

/// The owner's user id in a new realm (`dev::new_realm_changes`).
const OWNER_ID: u64 = 1;

/// `hearth realm create`: creates a production realm and its owner in `data`.
/// Returns the owner's API key and user id.
pub fn create_production_realm(c: &CreateRealm) -> Result<(String, u64), StartError> {
    // Arguments first: a refused command leaves no data folder behind.
    if !realm::users::email_is_valid(&c.owner_email) {
        return Err(StartError::Realm(format!(
            "'{}' is not a valid email address",
            c.owner_email
        )));
    }
    realm::users::check_not_system_bot(&c.owner_email).map_err(|e| StartError::Realm(e.msg))?;
    if let Some(pw) = &c.owner_password {
        if !realm::users::password_is_strong(pw) {
            return Err(StartError::Realm(format!(
                "the owner password is too weak: use at least {} characters that are hard \
                 to guess (a few unrelated words, not a common word or pattern)",
                realm::users::PASSWORD_MIN_LENGTH
            )));
        }
    }
    let (store, _) = open_data_folder(&c.data, DurabilityMode::Always)?;
    store.verify_realms()?;
    if store.realm_subdomains().iter().any(|s| s == &c.subdomain) {
        return Err(StartError::Realm(format!(
            "realm '{}' already exists in {}",
            c.subdomain,
            c.data.display()
        )));
    }
    let password_hash = match &c.owner_password {
        Some(pw) => Some(realm::users::hash_password(pw).map_err(|e| StartError::Realm(e.msg))?),
        None => None,
    };
    let name = c.owner_name.clone().unwrap_or_else(|| {
        c.owner_email
            .split('@')
            .next()
            .unwrap_or_default()
            .to_owned()
    });
    let clock = SystemClock;
    let mut cx = Cx::new(&clock);
    let settings = realm::RealmSettings {
        name: c.name.clone(),
        subdomain: c.subdomain.clone(),
        url: c.url.clone(),
        dev: false,
        email_visibility: realm::EmailVisibility::Everyone,
        fake_email_domain: "hearth.invalid".into(),
        empty_topic_display_name: "general chat".into(),
        date_created: cx.now_secs(),
    };
    let mut changes =
        dev::new_realm_changes(settings, &c.owner_email, &name, password_hash, &mut cx);
    // Zulip's initial channels and conversations, and the owner's welcome.
    let onboarding = realm::onboarding::new_realm_onboarding(&changes, OWNER_ID, &cx)
        .map_err(StartError::Realm)?;
    changes.extend(onboarding);
    store.discard_remains(&c.subdomain)?;
    let mut realm_store = store.realm(&c.subdomain)?;
    let realm = create_realm(&mut realm_store, &changes).map_err(StartError::Realm)?;
    store.durability.shutdown();
    let owner = realm
        .user_by_delivery_email(&c.owner_email)
        .ok_or_else(|| StartError::Realm("owner missing after creation".into()))?;
    Ok((owner.api_key.clone(), owner.id))
}

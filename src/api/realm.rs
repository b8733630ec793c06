//! The realm's own settings: `PATCH /realm`, for the group settings hearth enforces
//! (`RealmSetting::EDITABLE`); any other parameter is reported as ignored.

use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::realm::groups::{RealmSetting, SettingValue};

/// # `PATCH /realm`
pub async fn update_realm(req: ApiRequest) -> ApiResponse {
    req.call(CallOpts::USER, |c| {
        let me = c.me()?;
        c.realm.require_admin(me)?;
        let mut updates = Vec::new();
        for s in RealmSetting::EDITABLE {
            if let Some(v) = c.params.opt_json(s.name())? {
                let (new, old) = SettingValue::parse_change(s.name(), &v)?;
                updates.push((s, new, old));
            }
        }
        let (changes, data) = c.realm.decide_update_realm_settings(me, updates)?;
        Ok(Outcome::write(changes, data))
    })
    .await
    .map(success)
}

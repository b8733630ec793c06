//! Custom profile fields (seed 2.3, 2.6, 4.3) and each user's values for them.
//!
//! Rules and texts are Zulip's (`zerver/views/custom_profile_fields.py`,
//! `zerver/actions/custom_profile_fields.py`, `zerver/lib/users.py`,
//! `zerver/lib/validator.py`, `zerver/lib/external_accounts.py`), in Zulip's order.
//! Values are kept by field, so deleting a field or some of its choices touches only
//! that field's values.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::markdown::render_description_with;
use super::status::require_human;
use super::{Change, Cx, Decided, Realm, User, UserId};
use crate::error::{ApiError, ApiResult};

/// A custom profile field id, unique within a realm.
pub type FieldId = u64;

/// Zulip's `CustomProfileField.NAME_MAX_LENGTH`.
pub const NAME_MAX_LENGTH: usize = 40;
/// Zulip's `CustomProfileField.HINT_MAX_LENGTH`.
pub const HINT_MAX_LENGTH: usize = 80;
/// Zulip's `MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS`.
pub const MAX_SUMMARY_FIELDS: usize = 2;

/// Field types (seed 2.3).
pub const SHORT_TEXT: u8 = 1;
pub const LONG_TEXT: u8 = 2;
pub const SELECT: u8 = 3;
pub const DATE: u8 = 4;
pub const URL: u8 = 5;
pub const USER: u8 = 6;
pub const EXTERNAL_ACCOUNT: u8 = 7;
pub const PRONOUNS: u8 = 8;

/// Zulip's `DEFAULT_EXTERNAL_ACCOUNTS`: subtype, field name, hint.
pub const DEFAULT_EXTERNAL_ACCOUNTS: [(&str, &str, &str); 21] = [
    ("behance", "Behance username", ""),
    ("bitbucket", "Bitbucket username", ""),
    ("bluesky", "Bluesky handle", ""),
    ("codeberg", "Codeberg username", ""),
    ("discord", "Discord tag", ""),
    ("dribbble", "Dribbble username", ""),
    ("facebook", "Facebook username", ""),
    ("github", "GitHub username", ""),
    ("gitlab", "GitLab username", ""),
    ("instagram", "Instagram username", ""),
    ("linkedin", "LinkedIn profile name", ""),
    (
        "mastodon",
        "Mastodon profile",
        "The full URL to your profile",
    ),
    ("medium", "Medium username", ""),
    ("pinterest", "Pinterest username", ""),
    ("reddit", "Reddit username", ""),
    ("snapchat", "Snapchat username", ""),
    ("threads", "Threads username", ""),
    ("tiktok", "TikTok username", ""),
    ("twitch", "Twitch username", ""),
    ("x", "X username", ""),
    ("youtube", "YouTube handle", ""),
];

/// One custom profile field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileField {
    pub id: FieldId,
    pub name: String,
    pub hint: String,
    /// 1-8 (seed 2.3).
    pub field_type: u8,
    /// JSON text (types 3 and 7), else "".
    pub field_data: String,
    pub order: i64,
    pub required: bool,
    pub editable_by_user: bool,
    pub display_in_profile_summary: bool,
}

impl ProfileField {
    /// Zulip's `is_renderable`: the text types carry a `rendered_value`.
    pub fn is_renderable(&self) -> bool {
        matches!(self.field_type, SHORT_TEXT | LONG_TEXT)
    }

    /// Zulip's `as_dict`.
    pub fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.into());
        m.insert("name".into(), self.name.clone().into());
        m.insert("type".into(), self.field_type.into());
        m.insert("hint".into(), self.hint.clone().into());
        m.insert("field_data".into(), self.field_data.clone().into());
        m.insert("order".into(), self.order.into());
        m.insert("required".into(), self.required.into());
        m.insert("editable_by_user".into(), self.editable_by_user.into());
        if self.display_in_profile_summary {
            m.insert("display_in_profile_summary".into(), true.into());
        }
        Value::Object(m)
    }

    fn data_object(&self) -> Map<String, Value> {
        match serde_json::from_str(&self.field_data) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    fn is_default_external(&self) -> bool {
        self.field_type == EXTERNAL_ACCOUNT && is_default_external(&self.data_object())
    }
}

/// One user's value for a field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileValue {
    /// The value as Zulip stores it (a list of user ids as JSON text).
    pub value: String,
    /// HTML of `value`, for the text types.
    pub rendered_value: Option<String>,
}

/// Facts about custom profile fields and users' values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ProfileFieldChange {
    /// A field was created.
    Created(ProfileField),
    /// A field's settings changed (the whole new field). For a List of options, values
    /// naming a choice that is gone are removed with it.
    Updated(ProfileField),
    /// A field and every value of it were deleted.
    Deleted { id: FieldId },
    /// Fields were reordered: `(field, new order)`.
    Reordered { order: Vec<(FieldId, i64)> },
    /// A user's value for a field was set.
    ValueSet {
        user_id: UserId,
        field_id: FieldId,
        value: ProfileValue,
    },
    /// A user's value for a field was removed.
    ValueRemoved { user_id: UserId, field_id: FieldId },
}

fn field_not_found(id: i64) -> ApiError {
    ApiError::bad_request(format!("Field id {id} not found."))
}

/// `ProfileFieldData` as pydantic checks it: an object whose values are strings or
/// objects of strings, with pydantic's wording of the first error.
pub fn parse_field_data(v: Value) -> ApiResult<Map<String, Value>> {
    let Value::Object(m) = v else {
        return Err(ApiError::bad_request("field_data is not a dict"));
    };
    for (k, item) in &m {
        let key = serde_json::to_string(k).unwrap_or_default();
        match item {
            Value::String(_) => {}
            Value::Object(inner) => {
                for (ik, iv) in inner {
                    if !iv.is_string() {
                        let ikey = serde_json::to_string(ik).unwrap_or_default();
                        return Err(ApiError::bad_request(format!(
                            "field_data[{key}][\"dict[str,str]\"][{ikey}] is not a string"
                        )));
                    }
                }
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "field_data[{key}][\"dict[str,str]\"] is not a dict"
                )))
            }
        }
    }
    Ok(m)
}

/// A check of one key's value: its variable name (`field_data["text"]`) and value.
type KeyCheck = fn(&str, &Value) -> ApiResult<()>;

/// Zulip's `check_dict_only` on `field_data`: required and optional keys, each with its
/// check, then no other key.
fn check_dict_only(
    var: &str,
    v: &Value,
    required: &[(&str, KeyCheck)],
    optional: &[(&str, KeyCheck)],
) -> ApiResult<()> {
    let Value::Object(m) = v else {
        return Err(ApiError::bad_request(format!("{var} is not a dict")));
    };
    for (k, check) in required {
        let Some(x) = m.get(*k) else {
            return Err(ApiError::bad_request(format!(
                "{k} key is missing from {var}"
            )));
        };
        check(&format!("{var}[\"{k}\"]"), x)?;
    }
    for (k, check) in optional {
        if let Some(x) = m.get(*k) {
            check(&format!("{var}[\"{k}\"]"), x)?;
        }
    }
    let extra: Vec<&str> = m
        .keys()
        .map(String::as_str)
        .filter(|k| !required.iter().chain(optional).any(|(r, _)| r == k))
        .collect();
    if !extra.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Unexpected arguments: {}",
            extra.join(", ")
        )));
    }
    Ok(())
}

fn check_required_string(var: &str, v: &Value) -> ApiResult<()> {
    match v {
        Value::String(s) if s.trim().is_empty() => {
            Err(ApiError::bad_request(format!("{var} cannot be blank.")))
        }
        Value::String(_) => Ok(()),
        _ => Err(ApiError::bad_request(format!("{var} is not a string"))),
    }
}

fn check_url_pattern(var: &str, v: &Value) -> ApiResult<()> {
    let Value::String(s) = v else {
        return Err(ApiError::bad_request(format!("{var} is not a string")));
    };
    if s.matches("%(username)s").count() != 1 {
        return Err(ApiError::bad_request(
            "URL pattern must contain '%(username)s'.",
        ));
    }
    if !url_is_valid(&s.replace("%(username)s", "username")) {
        return Err(ApiError::bad_request(format!("{var} is not a URL")));
    }
    Ok(())
}

fn is_default_external(data: &Map<String, Value>) -> bool {
    data.get("subtype").and_then(Value::as_str) != Some("custom")
}

/// Zulip's `validate_custom_field_data`.
fn validate_field_data(field_type: u8, data: &Map<String, Value>) -> ApiResult<()> {
    if field_type == SELECT {
        if data.is_empty() {
            return Err(ApiError::bad_request(
                "Field must have at least one choice.",
            ));
        }
        let mut texts = BTreeSet::new();
        for (key, value) in data {
            if key.trim().is_empty() {
                return Err(ApiError::bad_request("'value' cannot be blank."));
            }
            check_dict_only(
                "field_data",
                value,
                &[
                    ("text", check_required_string),
                    ("order", check_required_string),
                ],
                &[],
            )?;
            texts.insert(value["text"].as_str().unwrap_or_default().to_owned());
        }
        if texts.len() != data.len() {
            return Err(ApiError::bad_request(
                "Field must not have duplicate choices.",
            ));
        }
    } else if field_type == EXTERNAL_ACCOUNT {
        check_dict_only(
            "field_data",
            &Value::Object(data.clone()),
            &[("subtype", check_required_string)],
            &[("url_pattern", check_url_pattern)],
        )?;
        let subtype = data.get("subtype").and_then(Value::as_str).unwrap_or("");
        if subtype != "custom"
            && !DEFAULT_EXTERNAL_ACCOUNTS
                .iter()
                .any(|(s, _, _)| *s == subtype)
        {
            return Err(ApiError::bad_request("Invalid external account type"));
        }
    }
    Ok(())
}

/// Zulip's `validate_custom_profile_field`, in its order.
fn validate_field(
    name: &str,
    hint: &str,
    field_type: i64,
    data: &Map<String, Value>,
    display_in_profile_summary: bool,
) -> ApiResult<u8> {
    let known = (1..=8).contains(&field_type);
    let ty = if known { field_type as u8 } else { 0 };
    validate_field_data(ty, data)?;
    if !(ty == EXTERNAL_ACCOUNT && is_default_external(data)) {
        if name.trim().is_empty() {
            return Err(ApiError::bad_request("Label cannot be blank."));
        }
        if hint.chars().count() > HINT_MAX_LENGTH {
            return Err(ApiError::bad_request(format!(
                "hint is too long (limit: {HINT_MAX_LENGTH} characters)"
            )));
        }
        if name.chars().count() > NAME_MAX_LENGTH {
            return Err(ApiError::bad_request(format!(
                "name is too long (limit: {NAME_MAX_LENGTH} characters)"
            )));
        }
    }
    if !known {
        return Err(ApiError::bad_request("Invalid field type."));
    }
    if display_in_profile_summary && matches!(ty, LONG_TEXT | USER) {
        return Err(ApiError::bad_request(
            "Field type not supported for display in profile summary.",
        ));
    }
    Ok(ty)
}

/// Django's `URLValidator` as Zulip's `check_url` uses it: http(s)/ftp(s), a host name
/// with a top-level domain, `localhost` or an IP address, an optional port and path.
pub fn url_is_valid(url: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        let label = r"[a-z\x{a1}-\x{ffff}0-9](?:[a-z\x{a1}-\x{ffff}0-9-]{0,61}[a-z\x{a1}-\x{ffff}0-9])?";
        let tld = r"(?:[a-z\x{a1}-\x{ffff}](?:[a-z\x{a1}-\x{ffff}-]{0,61}[a-z\x{a1}-\x{ffff}])?|xn--[a-z0-9]{1,59})";
        let ipv4 = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}";
        let pattern = format!(
            r"(?i)^(?:https?|ftps?)://(?:[^\s:@/]+(?::[^\s:@/]*)?@)?(?:{ipv4}|\[[0-9a-f:.]+\]|{label}(?:\.{label})*\.{tld}\.?|localhost)(?::[0-9]{{1,5}})?(?:[/?#][^\s]*)?$"
        );
        Regex::new(&pattern).ok()
    });
    url.len() <= 2048 && re.as_ref().is_some_and(|re| re.is_match(url))
}

/// Python's `date.fromisoformat(v).isoformat() == v`: exactly `YYYY-MM-DD`, a real day.
fn date_is_valid(v: &str) -> bool {
    v.len() == 10
        && chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
            .is_ok_and(|d| d.format("%Y-%m-%d").to_string() == v)
}

/// The parsed body of `PATCH /users/me/profile_data`: `(field id, value)`.
pub type ProfileDataUpdate = Vec<(i64, Value)>;

/// Parses `data` of `PATCH /users/me/profile_data` as pydantic does
/// (`list[{id: int, value: str | list[int]}]`).
pub fn parse_profile_data(v: Value) -> ApiResult<ProfileDataUpdate> {
    let Value::Array(items) = v else {
        return Err(ApiError::bad_request("data is not a list"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(m) = item else {
                return Err(ApiError::bad_request(format!("data[{i}] is not a dict")));
            };
            let id = match m.get("id") {
                None => {
                    return Err(ApiError::bad_request(format!(
                        "data[{i}][\"id\"] field is missing: Field required"
                    )))
                }
                Some(v) => v.as_i64().ok_or_else(|| {
                    ApiError::bad_request(format!("data[{i}][\"id\"] is not an integer"))
                })?,
            };
            let value = match m.get("value") {
                None => {
                    return Err(ApiError::bad_request(format!(
                        "data[{i}][\"value\"] field is missing: Field required"
                    )))
                }
                Some(Value::String(s)) => Value::String(s.clone()),
                Some(Value::Array(l)) if l.iter().all(|x| x.as_i64().is_some()) => {
                    Value::Array(l.clone())
                }
                Some(_) => {
                    return Err(ApiError::bad_request(format!(
                        "data[{i}][\"value\"][\"str\"] is not a string"
                    )))
                }
            };
            Ok((id, value))
        })
        .collect()
}

/// The parsed `profile_data` of `PATCH /users/{user_id}`: `(field id, value)`, the value
/// `None` (sent as null, "" or []) to remove it.
pub type UserProfileDataUpdate = Vec<(i64, Option<Value>)>;

/// Parses `profile_data` of `PATCH /users/{user_id}` as Zulip's `check_profile_data`
/// does (`list` of `{id: int, value: None | str | list[int]}`, nothing else).
pub fn parse_user_profile_data(v: Value) -> ApiResult<UserProfileDataUpdate> {
    let Value::Array(items) = v else {
        return Err(ApiError::bad_request("profile_data is not a list"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let var = format!("profile_data[{i}]");
            let Value::Object(m) = item else {
                return Err(ApiError::bad_request(format!("{var} is not a dict")));
            };
            for key in ["id", "value"] {
                if !m.contains_key(key) {
                    return Err(ApiError::bad_request(format!(
                        "{var} key is missing: {key}"
                    )));
                }
            }
            let id = m["id"]
                .as_i64()
                .ok_or_else(|| ApiError::bad_request(format!("{var}[\"id\"] is not an integer")))?;
            let value = match &m["value"] {
                Value::Null => None,
                Value::String(s) if s.is_empty() => None,
                Value::String(s) => Some(Value::String(s.clone())),
                Value::Array(l) if l.iter().all(|x| x.as_i64().is_some()) => {
                    (!l.is_empty()).then(|| Value::Array(l.clone()))
                }
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "{var}[\"value\"] is not a string"
                    )))
                }
            };
            let mut extra: Vec<&str> = m
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "id" && *k != "value")
                .collect();
            if !extra.is_empty() {
                extra.sort_unstable();
                return Err(ApiError::bad_request(format!(
                    "Unexpected arguments: {}",
                    extra.join(", ")
                )));
            }
            Ok((id, value))
        })
        .collect()
}

/// Settings of `POST /realm/profile_fields`, parsed.
#[derive(Debug, Clone)]
pub struct NewField {
    pub display_in_profile_summary: bool,
    pub editable_by_user: bool,
    pub field_data: Map<String, Value>,
    pub field_type: i64,
    pub hint: String,
    pub name: String,
    pub required: bool,
}

/// Settings of `PATCH /realm/profile_fields/{field_id}`, parsed (absent: unchanged).
#[derive(Debug, Clone, Default)]
pub struct FieldUpdate {
    pub display_in_profile_summary: Option<bool>,
    pub editable_by_user: Option<bool>,
    pub field_data: Option<Map<String, Value>>,
    pub hint: Option<String>,
    pub name: Option<String>,
    pub required: Option<bool>,
}

/// `PATCH /realm/profile_fields/{field_id}`: which field (as sent: the lookup and its
/// error belong to the rule), and what changes.
#[derive(Debug, Clone)]
pub struct UpdateProfileField {
    pub id: i64,
    pub update: FieldUpdate,
}

/// `DELETE /realm/profile_fields/{field_id}`.
#[derive(Debug, Clone, Copy)]
pub struct DeleteProfileField {
    pub id: i64,
}

/// `PATCH /realm/profile_fields`: field ids in their new order.
#[derive(Debug, Clone)]
pub struct ReorderProfileFields {
    pub order: Vec<i64>,
}

/// `PATCH /users/me/profile_data`: the values, parsed (`parse_profile_data`).
#[derive(Debug, Clone)]
pub struct UpdateProfileData {
    pub data: ProfileDataUpdate,
}

/// `DELETE /users/me/profile_data`: the fields whose values go.
#[derive(Debug, Clone)]
pub struct RemoveProfileData {
    pub ids: Vec<i64>,
}

impl Realm {
    /// Fields by `order`, ties by id (`custom_profile_fields_for_realm`).
    pub fn profile_fields_ordered(&self) -> Vec<&ProfileField> {
        let mut list: Vec<&ProfileField> = self.profile_fields.values().collect();
        list.sort_by_key(|f| (f.order, f.id));
        list
    }

    /// `GET /realm/profile_fields` and `/register`'s `custom_profile_fields`.
    pub fn view_profile_fields(&self) -> Vec<Value> {
        self.profile_fields_ordered()
            .into_iter()
            .map(ProfileField::json)
            .collect()
    }

    /// `profile_data` of a user object (seed 2.6): `{"<field id>": {value,
    /// rendered_value?}}` for the fields the user has a value for.
    pub fn user_profile_data(&self, user: UserId) -> Map<String, Value> {
        let mut m = Map::new();
        for f in self.profile_fields_ordered() {
            let Some(v) = self.profile_values.get(&f.id).and_then(|vs| vs.get(&user)) else {
                continue;
            };
            let mut entry = Map::new();
            entry.insert("value".into(), v.value.clone().into());
            if f.is_renderable() {
                entry.insert(
                    "rendered_value".into(),
                    v.rendered_value.clone().map_or(Value::Null, Value::from),
                );
            }
            m.insert(f.id.to_string(), Value::Object(entry));
        }
        m
    }

    fn summary_count(&self, except: Option<FieldId>) -> usize {
        self.profile_fields
            .values()
            .filter(|f| f.display_in_profile_summary && Some(f.id) != except)
            .count()
    }

    fn field_name_taken(&self, name: &str, except: Option<FieldId>) -> bool {
        self.profile_fields
            .values()
            .any(|f| f.name == name && Some(f.id) != except)
    }

    fn profile_field(&self, id: i64) -> ApiResult<&ProfileField> {
        u64::try_from(id)
            .ok()
            .and_then(|id| self.profile_fields.get(&id))
            .ok_or_else(|| field_not_found(id))
    }

    /// `POST /realm/profile_fields` (seed 4.3): administrators only; answers the id.
    pub fn decide_create_profile_field(
        &self,
        me: &User,
        p: NewField,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<FieldId>> {
        self.require_admin(me)?;
        if p.display_in_profile_summary && self.summary_count(None) >= MAX_SUMMARY_FIELDS {
            return Err(ApiError::bad_request(
                "Only 2 custom profile fields can be displayed in the profile summary.",
            ));
        }
        let ty = validate_field(
            &p.name,
            &p.hint,
            p.field_type,
            &p.field_data,
            p.display_in_profile_summary,
        )?;
        let (name, hint, field_data) =
            if ty == EXTERNAL_ACCOUNT && is_default_external(&p.field_data) {
                let subtype = p
                    .field_data
                    .get("subtype")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let (_, name, hint) = DEFAULT_EXTERNAL_ACCOUNTS
                    .iter()
                    .find(|(s, _, _)| *s == subtype)
                    .ok_or_else(|| ApiError::bad_request("Invalid external account type"))?;
                (
                    (*name).to_owned(),
                    (*hint).to_owned(),
                    json!({"subtype": subtype}).to_string(),
                )
            } else {
                let data = if matches!(ty, SELECT | EXTERNAL_ACCOUNT) {
                    Value::Object(p.field_data.clone()).to_string()
                } else {
                    String::new()
                };
                (p.name.clone(), p.hint.clone(), data)
            };
        if self.field_name_taken(&name, None) {
            return Err(ApiError::bad_request(
                "A field with that label already exists.",
            ));
        }
        let id = self.next_profile_field_id.max(1);
        let field = ProfileField {
            id,
            name,
            hint,
            field_type: ty,
            field_data,
            order: id as i64,
            required: p.required,
            editable_by_user: p.editable_by_user,
            display_in_profile_summary: p.display_in_profile_summary,
        };
        Ok(Decided::new(
            vec![Change::ProfileField(ProfileFieldChange::Created(field))],
            id,
        ))
    }

    /// `PATCH /realm/profile_fields/{field_id}`: administrators only.
    pub fn decide_update_profile_field(
        &self,
        me: &User,
        q: UpdateProfileField,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let p = q.update;
        let field = self.profile_field(q.id)?;
        if p.display_in_profile_summary == Some(true)
            && self.summary_count(Some(field.id)) >= MAX_SUMMARY_FIELDS
        {
            return Err(ApiError::bad_request(
                "Only 2 custom profile fields can be displayed in the profile summary.",
            ));
        }
        let stored = field.data_object();
        if field.is_default_external() {
            let changes_more = p.name.as_ref().is_some_and(|n| *n != field.name)
                || p.hint.as_ref().is_some_and(|h| *h != field.hint)
                || p.field_data.as_ref().is_some_and(|d| *d != stored);
            if changes_more {
                return Err(ApiError::bad_request(
                    "Default custom field cannot be updated.",
                ));
            }
        }
        let name = p.name.clone().unwrap_or_else(|| field.name.clone());
        let hint = p.hint.clone().unwrap_or_else(|| field.hint.clone());
        let data = p.field_data.clone().unwrap_or_else(|| stored.clone());
        let display = p
            .display_in_profile_summary
            .unwrap_or(field.display_in_profile_summary);
        validate_field(&name, &hint, i64::from(field.field_type), &data, display)?;
        if p.name.is_some() && self.field_name_taken(&name, Some(field.id)) {
            return Err(ApiError::bad_request(
                "A field with that label already exists.",
            ));
        }
        let mut new = field.clone();
        new.name = name;
        new.hint = hint;
        new.display_in_profile_summary = display;
        if let Some(r) = p.required {
            new.required = r;
        }
        if let Some(e) = p.editable_by_user {
            new.editable_by_user = e;
        }
        if matches!(field.field_type, SELECT | EXTERNAL_ACCOUNT)
            && (p.field_data.is_some() || field.field_data.is_empty())
        {
            new.field_data = Value::Object(p.field_data.unwrap_or_default()).to_string();
        }
        Ok(Decided::changes(vec![Change::ProfileField(
            ProfileFieldChange::Updated(new),
        )]))
    }

    /// `DELETE /realm/profile_fields/{field_id}`: administrators only.
    pub fn decide_delete_profile_field(
        &self,
        me: &User,
        q: DeleteProfileField,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let field = self.profile_field(q.id)?;
        Ok(Decided::changes(vec![Change::ProfileField(
            ProfileFieldChange::Deleted { id: field.id },
        )]))
    }

    /// `PATCH /realm/profile_fields`: administrators only; every field must be in
    /// `order`; each gets its (last) index.
    pub fn decide_reorder_profile_fields(
        &self,
        me: &User,
        q: ReorderProfileFields,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let mut index: BTreeMap<i64, i64> = BTreeMap::new();
        for (i, id) in q.order.iter().enumerate() {
            index.insert(*id, i as i64);
        }
        let mut new = Vec::with_capacity(self.profile_fields.len());
        for f in self.profile_fields.values() {
            let Some(o) = index.get(&(f.id as i64)) else {
                return Err(ApiError::bad_request("Invalid order mapping."));
            };
            new.push((f.id, *o));
        }
        Ok(Decided::changes(vec![Change::ProfileField(
            ProfileFieldChange::Reordered { order: new },
        )]))
    }

    /// Zulip's `validate_user_custom_profile_field`: a value's check by field type.
    fn check_profile_value(&self, field: &ProfileField, value: &Value) -> ApiResult<String> {
        let name = &field.name;
        let string = || {
            value
                .as_str()
                .ok_or_else(|| ApiError::bad_request(format!("{name} is not a string")))
        };
        let capped = |limit: usize| -> ApiResult<String> {
            let s = string()?;
            if s.chars().count() > limit {
                return Err(ApiError::bad_request(format!(
                    "{name} is too long (limit: {limit} characters)"
                )));
            }
            Ok(s.to_owned())
        };
        match field.field_type {
            SHORT_TEXT | EXTERNAL_ACCOUNT | PRONOUNS => capped(50),
            LONG_TEXT => capped(500),
            DATE => {
                let s = string()?;
                if date_is_valid(s) {
                    Ok(s.to_owned())
                } else {
                    Err(ApiError::bad_request(format!("{name} is not a date")))
                }
            }
            URL => {
                let s = string()?;
                if url_is_valid(s) {
                    Ok(s.to_owned())
                } else {
                    Err(ApiError::bad_request(format!("{name} is not a URL")))
                }
            }
            SELECT => {
                let s = string()?;
                if field.data_object().contains_key(s) {
                    Ok(s.to_owned())
                } else {
                    Err(ApiError::bad_request(format!(
                        "'{s}' is not a valid choice for '{name}'."
                    )))
                }
            }
            _ => {
                let Value::Array(list) = value else {
                    return Err(ApiError::bad_request("User IDs is not a list"));
                };
                let mut ids = Vec::with_capacity(list.len());
                for (i, v) in list.iter().enumerate() {
                    ids.push(v.as_i64().ok_or_else(|| {
                        ApiError::bad_request(format!("User IDs[{i}] is not an integer"))
                    })?);
                }
                let user = |id: i64| u64::try_from(id).ok().and_then(|id| self.user(id));
                let invalid: Vec<String> = ids
                    .iter()
                    .filter(|id| user(**id).is_none())
                    .map(i64::to_string)
                    .collect();
                if !invalid.is_empty() {
                    return Err(ApiError::bad_request(format!(
                        "Invalid user IDs: {}",
                        invalid.join(", ")
                    )));
                }
                for u in ids.iter().filter_map(|id| user(*id)) {
                    if !u.is_active {
                        return Err(ApiError::bad_request(format!(
                            "User with ID {} is deactivated",
                            u.id
                        )));
                    }
                    if u.is_bot() {
                        return Err(ApiError::bad_request(format!(
                            "User with ID {} is a bot",
                            u.id
                        )));
                    }
                }
                Ok(Value::from(ids).to_string())
            }
        }
    }

    fn check_editable(me: &User, field: &ProfileField) -> ApiResult<()> {
        if me.is_admin() || field.editable_by_user {
            Ok(())
        } else {
            Err(ApiError::bad_request(
                "You are not allowed to change this field. Contact an administrator to update it.",
            ))
        }
    }

    /// `PATCH /users/me/profile_data`: every item checked first, then only values that
    /// change are set.
    pub fn decide_update_profile_data(
        &self,
        me: &User,
        q: UpdateProfileData,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        require_human(me)?;
        let changes = self.profile_value_changes(me, me.id, &q.data)?;
        Ok(Decided::changes(changes))
    }

    /// Zulip's `validate_user_custom_profile_data` then
    /// `do_update_user_custom_profile_data_if_changed`: every item checked (the field
    /// exists, `me` may edit it, the value fits its type), then `target`'s values that
    /// change are set, rendered where the type renders Markdown.
    pub(super) fn profile_value_changes(
        &self,
        me: &User,
        target: UserId,
        data: &[(i64, Value)],
    ) -> ApiResult<Vec<Change>> {
        let mut checked = Vec::with_capacity(data.len());
        for (id, value) in data {
            let field = self.profile_field(*id)?;
            Self::check_editable(me, field)?;
            checked.push((field, self.check_profile_value(field, value)?));
        }
        let linkifiers = self.compiled_linkifiers();
        let mut changes = Vec::new();
        let mut current: BTreeMap<FieldId, String> = BTreeMap::new();
        for (field, value) in checked {
            let old = current.get(&field.id).cloned().or_else(|| {
                self.profile_values
                    .get(&field.id)
                    .and_then(|vs| vs.get(&target))
                    .map(|v| v.value.clone())
            });
            if old.as_deref() == Some(value.as_str()) {
                continue;
            }
            let rendered_value = field
                .is_renderable()
                .then(|| render_description_with(&value, &linkifiers));
            current.insert(field.id, value.clone());
            changes.push(Change::ProfileField(ProfileFieldChange::ValueSet {
                user_id: target,
                field_id: field.id,
                value: ProfileValue {
                    value,
                    rendered_value,
                },
            }));
        }
        Ok(changes)
    }

    /// `profile_data` of `PATCH /users/{user_id}` (`update_user_backend`), `me` an
    /// administrator: first each removal (`check_remove_custom_profile_field_value`: the
    /// field must exist; a value `target` has goes), then the values to set
    /// (`profile_value_changes`).
    pub(super) fn user_profile_data_changes(
        &self,
        me: &User,
        target: UserId,
        data: &UserProfileDataUpdate,
    ) -> ApiResult<Vec<Change>> {
        let mut changes = Vec::new();
        let mut set = Vec::new();
        let mut removed = BTreeSet::new();
        for (id, value) in data {
            let Some(value) = value else {
                let field = self.profile_field(*id)?;
                Self::check_editable(me, field)?;
                let has = self
                    .profile_values
                    .get(&field.id)
                    .is_some_and(|vs| vs.contains_key(&target));
                if has && removed.insert(field.id) {
                    changes.push(Change::ProfileField(ProfileFieldChange::ValueRemoved {
                        user_id: target,
                        field_id: field.id,
                    }));
                }
                continue;
            };
            set.push((*id, value.clone()));
        }
        changes.extend(self.profile_value_changes(me, target, &set)?);
        Ok(changes)
    }

    /// `DELETE /users/me/profile_data`: each field must exist (and be editable); values
    /// the user has are removed.
    pub fn decide_remove_profile_data(
        &self,
        me: &User,
        q: RemoveProfileData,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        require_human(me)?;
        let mut changes = Vec::new();
        let mut removed = BTreeSet::new();
        for id in &q.ids {
            let field = self.profile_field(*id)?;
            Self::check_editable(me, field)?;
            let has = self
                .profile_values
                .get(&field.id)
                .is_some_and(|vs| vs.contains_key(&me.id));
            if has && removed.insert(field.id) {
                changes.push(Change::ProfileField(ProfileFieldChange::ValueRemoved {
                    user_id: me.id,
                    field_id: field.id,
                }));
            }
        }
        Ok(Decided::changes(changes))
    }

    pub(crate) fn apply_profile_field_change(&mut self, change: &ProfileFieldChange) {
        match change {
            ProfileFieldChange::Created(f) => {
                self.next_profile_field_id = self.next_profile_field_id.max(f.id + 1);
                self.profile_fields.insert(f.id, f.clone());
            }
            ProfileFieldChange::Updated(f) => {
                let old_keys: BTreeSet<String> = self
                    .profile_fields
                    .get(&f.id)
                    .filter(|old| old.field_type == SELECT)
                    .map(|old| old.data_object().keys().cloned().collect())
                    .unwrap_or_default();
                let new_keys: BTreeSet<String> = f.data_object().keys().cloned().collect();
                if old_keys.difference(&new_keys).next().is_some() {
                    if let Some(values) = self.profile_values.get_mut(&f.id) {
                        let gone: Vec<UserId> = values
                            .iter()
                            .filter(|(_, v)| !new_keys.contains(&v.value))
                            .map(|(u, _)| *u)
                            .collect();
                        for u in gone {
                            values.remove(&u);
                        }
                    }
                }
                self.profile_fields.insert(f.id, f.clone());
            }
            ProfileFieldChange::Deleted { id } => {
                self.profile_fields.remove(id);
                self.profile_values.remove(id);
            }
            ProfileFieldChange::Reordered { order } => {
                for (id, o) in order {
                    if let Some(f) = self.profile_fields.get_mut(id) {
                        f.order = *o;
                    }
                }
            }
            ProfileFieldChange::ValueSet {
                user_id,
                field_id,
                value,
            } => {
                self.profile_values
                    .entry(*field_id)
                    .or_default()
                    .insert(*user_id, value.clone());
            }
            ProfileFieldChange::ValueRemoved { user_id, field_id } => {
                if let Some(values) = self.profile_values.get_mut(field_id) {
                    values.remove(user_id);
                }
            }
        }
    }

    /// Field changes send every field (`custom_profile_fields`) to active users; value
    /// changes a `realm_user` update to everyone who can see the user.
    pub(crate) fn profile_field_events(&self, change: &ProfileFieldChange) -> Vec<Event> {
        let everyone = || Audience::users(self.active_user_ids());
        match change {
            ProfileFieldChange::Created(_)
            | ProfileFieldChange::Updated(_)
            | ProfileFieldChange::Deleted { .. }
            | ProfileFieldChange::Reordered { .. } => vec![Event::new(
                json!({"type": "custom_profile_fields", "fields": self.view_profile_fields()}),
                everyone(),
            )],
            ProfileFieldChange::ValueSet {
                user_id,
                field_id,
                value,
            } => {
                let mut data = json!({"id": field_id, "value": value.value});
                if let Some(r) = value.rendered_value.as_ref().filter(|r| !r.is_empty()) {
                    data["rendered_value"] = r.clone().into();
                }
                vec![Event::new(
                    json!({"type": "realm_user", "op": "update", "person": {"user_id": user_id, "custom_profile_field": data}}),
                    everyone(),
                )]
            }
            ProfileFieldChange::ValueRemoved { user_id, field_id } => vec![Event::new(
                json!({"type": "realm_user", "op": "update", "person": {"user_id": user_id, "custom_profile_field": {"id": field_id, "value": null}}}),
                everyone(),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for ok in [
            "https://zulip.readthedocs.io/en/latest/",
            "http://localhost:9991/x",
            "https://github.com/username",
            "ftp://10.0.0.1/",
            "https://例え.jp/",
        ] {
            assert!(url_is_valid(ok), "{ok}");
        }
        for bad in [
            "not a url",
            "zulip.com",
            "javascript:alert(1)",
            "https://",
            "https://a b.com",
        ] {
            assert!(!url_is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn dates() {
        assert!(date_is_valid("2000-01-01"));
        assert!(!date_is_valid("2000-02-30"));
        assert!(!date_is_valid("2000-1-01"));
        assert!(!date_is_valid("01/01/2000"));
    }

    fn data(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn field_checks_in_zulip_order() {
        let msg = |name: &str, hint: &str, ty: i64, d: Value, summary: bool| {
            validate_field(name, hint, ty, &data(d), summary)
                .err()
                .map(|e| e.msg)
        };
        assert_eq!(
            msg("", "", 1, json!({}), false).as_deref(),
            Some("Label cannot be blank.")
        );
        assert_eq!(
            msg("x", "", 99, json!({}), false).as_deref(),
            Some("Invalid field type.")
        );
        assert_eq!(
            msg("", "", 99, json!({}), false).as_deref(),
            Some("Label cannot be blank.")
        );
        assert_eq!(
            msg("x", "", 3, json!({}), false).as_deref(),
            Some("Field must have at least one choice.")
        );
        assert_eq!(
            msg("x", "", 3, json!({"a": {"text": "A"}}), false).as_deref(),
            Some("order key is missing from field_data")
        );
        assert_eq!(
            msg(
                "x",
                "",
                3,
                json!({"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}}),
                false
            )
            .as_deref(),
            Some("Field must not have duplicate choices.")
        );
        assert_eq!(
            msg("x", "", 3, json!({"a": {"text": "", "order": "1"}}), false).as_deref(),
            Some("field_data[\"text\"] cannot be blank.")
        );
        assert_eq!(
            msg("", "", 7, json!({"subtype": "nope"}), false).as_deref(),
            Some("Invalid external account type")
        );
        assert_eq!(msg("", "", 7, json!({"subtype": "github"}), false), None);
        assert_eq!(
            msg(
                "x",
                "",
                7,
                json!({"subtype": "custom", "url_pattern": "https://x.com/"}),
                false
            )
            .as_deref(),
            Some("URL pattern must contain '%(username)s'.")
        );
        assert_eq!(
            msg("x", "", 2, json!({}), true).as_deref(),
            Some("Field type not supported for display in profile summary.")
        );
        assert_eq!(
            msg(&"n".repeat(41), &"h".repeat(81), 1, json!({}), false).as_deref(),
            Some("hint is too long (limit: 80 characters)")
        );
        assert_eq!(
            msg(&"n".repeat(41), "", 1, json!({}), false).as_deref(),
            Some("name is too long (limit: 40 characters)")
        );
    }

    #[test]
    fn profile_data_shapes() {
        assert_eq!(
            parse_profile_data(json!([{"id": 1}]))
                .err()
                .map(|e| e.msg)
                .as_deref(),
            Some("data[0][\"value\"] field is missing: Field required")
        );
        assert_eq!(
            parse_profile_data(json!([{"id": 1, "value": 3}]))
                .err()
                .map(|e| e.msg)
                .as_deref(),
            Some("data[0][\"value\"][\"str\"] is not a string")
        );
        assert_eq!(
            parse_profile_data(json!([1]))
                .err()
                .map(|e| e.msg)
                .as_deref(),
            Some("data[0] is not a dict")
        );
        assert!(parse_profile_data(json!([{"id": 6, "value": [1, 2]}])).is_ok());
    }
}

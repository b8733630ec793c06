//! Code playgrounds (`POST /realm/playgrounds`, `DELETE /realm/playgrounds/{id}`,
//! `realm_playgrounds` in `/register` and its event), after Zulip's
//! `zerver/views/realm_playgrounds.py`, `zerver/actions/realm_playgrounds.py` and
//! `zerver/models/realm_playgrounds.py`. Administrators only.

use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::events::{Audience, Event};
use super::linkifiers::validation_failure;
use super::uri_template::UriTemplate;
use super::{Change, Cx, Decided, Realm, RealmChange, User};
use crate::error::{ApiError, ApiResult};

/// Zulip's `RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH`.
pub const MAX_PYGMENTS_LANGUAGE_LENGTH: usize = 40;

pub type PlaygroundId = u64;

/// One playground: where code of a language can be run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Playground {
    pub id: PlaygroundId,
    pub name: String,
    pub pygments_language: String,
    pub url_template: String,
}

impl Playground {
    /// Zulip's `RealmPlaygroundDict`.
    pub fn json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "pygments_language": self.pygments_language,
               "url_template": self.url_template})
    }
}

/// The realm's playgrounds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlaygroundState {
    pub by_id: OrdMap<PlaygroundId, Playground>,
    pub next_id: PlaygroundId,
}

/// Zulip's `check_pygments_language`: at most 40 characters, then the characters a
/// code block's language may hold.
pub fn check_pygments_language(value: &str) -> ApiResult<()> {
    if value.chars().count() > MAX_PYGMENTS_LANGUAGE_LENGTH {
        return Err(ApiError::bad_request(format!(
            "pygments_language is too long (limit: {MAX_PYGMENTS_LANGUAGE_LENGTH} characters)"
        )));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _+-./#".contains(c))
    {
        return Err(ApiError::bad_request(
            "Invalid characters in pygments language",
        ));
    }
    Ok(())
}

/// `POST /realm/playgrounds`, its values stripped (checked by the rule, as
/// `full_clean` does).
#[derive(Debug, Clone)]
pub struct AddPlayground {
    pub name: String,
    pub pygments_language: String,
    pub url_template: String,
}

/// `DELETE /realm/playgrounds/{playground_id}`.
#[derive(Debug, Clone)]
pub struct RemovePlayground {
    pub id: i64,
}

impl Realm {
    /// `POST /realm/playgrounds`: Zulip's `RealmPlayground.full_clean()` (the fields in
    /// model order, then `clean`, then the uniqueness of language and name), errors
    /// answered as `ValidationFailureError`. Answers the new id.
    pub fn decide_add_playground(
        &self,
        me: &User,
        q: AddPlayground,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<PlaygroundId>> {
        self.require_admin(me)?;
        const BLANK: &str = "This field cannot be blank.";
        let mut errors: Vec<(&str, String)> = Vec::new();
        let template = UriTemplate::parse(&q.url_template);
        if q.url_template.is_empty() {
            errors.push(("url_template", BLANK.to_owned()));
        } else if template.is_none() {
            errors.push(("url_template", "Invalid URL template.".to_owned()));
        }
        if q.name.is_empty() {
            errors.push(("name", BLANK.to_owned()));
        }
        if q.pygments_language.is_empty() {
            errors.push(("pygments_language", BLANK.to_owned()));
        }
        if let Some(t) = &template {
            let mut vars = t.variable_names();
            vars.sort();
            vars.dedup();
            if !vars.iter().any(|v| v == "code") {
                errors.push((
                    "__all__",
                    "Missing the required variable \"code\" in the URL template".to_owned(),
                ));
            } else if vars.len() != 1 {
                errors.push((
                    "__all__",
                    "\"code\" should be the only variable present in the URL template".to_owned(),
                ));
            }
        }
        let fields_failed = errors
            .iter()
            .any(|(f, _)| *f == "name" || *f == "pygments_language");
        if !fields_failed
            && self
                .playgrounds
                .by_id
                .values()
                .any(|p| p.name == q.name && p.pygments_language == q.pygments_language)
        {
            errors.push((
                "__all__",
                "Realm playground with this Realm, Pygments language and Name already exists."
                    .to_owned(),
            ));
        }
        if !errors.is_empty() {
            return Err(validation_failure(errors));
        }
        let id = self.playgrounds.next_id.max(1);
        Ok(Decided::new(
            vec![Change::Realm(RealmChange::PlaygroundAdded(Playground {
                id,
                name: q.name,
                pygments_language: q.pygments_language,
                url_template: q.url_template,
            }))],
            id,
        ))
    }

    /// `DELETE /realm/playgrounds/{playground_id}`: "Invalid playground" when the realm
    /// has none with that id.
    pub fn decide_remove_playground(
        &self,
        me: &User,
        q: RemovePlayground,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        self.require_admin(me)?;
        let id = u64::try_from(q.id)
            .ok()
            .filter(|id| self.playgrounds.by_id.contains_key(id))
            .ok_or_else(|| ApiError::bad_request("Invalid playground"))?;
        Ok(Decided::changes(vec![Change::Realm(
            RealmChange::PlaygroundRemoved { id },
        )]))
    }

    /// `realm_playgrounds` of `/register` and of its event: every playground, by id.
    pub fn view_playgrounds(&self) -> Vec<Value> {
        self.playgrounds
            .by_id
            .values()
            .map(Playground::json)
            .collect()
    }

    pub(super) fn apply_playground_change(&mut self, change: &RealmChange) {
        match change {
            RealmChange::PlaygroundAdded(p) => {
                self.playgrounds.next_id = self.playgrounds.next_id.max(p.id) + 1;
                self.playgrounds.by_id.insert(p.id, p.clone());
            }
            RealmChange::PlaygroundRemoved { id } => {
                self.playgrounds.by_id.remove(id);
            }
            _ => {}
        }
    }

    /// Zulip's `notify_realm_playgrounds`: the whole list, to every active user.
    pub(super) fn playground_events(&self) -> Vec<Event> {
        vec![Event::new(
            json!({"type": "realm_playgrounds", "realm_playgrounds": self.view_playgrounds()}),
            Audience::users(self.active_users(false)),
        )]
    }
}

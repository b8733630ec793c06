//! Navigation views (seed 2.9, 4.8, 4.10): each user's configured built-in views and
//! custom views, as Zulip's `zerver/views/navigation_views.py` checks them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::events::{Audience, Event};
use super::{Change, Cx, Decided, PersonalChange, Realm, User, UserId};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Zulip's `BUILT_IN_VIEW_FRAGMENTS`: views that exist without being added; they take no
/// name.
pub const BUILT_IN_VIEW_FRAGMENTS: [&str; 9] = [
    "inbox",
    "recent",
    "feed",
    "drafts",
    "narrow/has/reaction/sender/me",
    "narrow/is/mentioned",
    "narrow/is/starred",
    "scheduled",
    "reminders",
];

/// One configured view of a user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NavigationView {
    /// The URL hash that identifies the view.
    pub fragment: String,
    /// Shown in the sidebar (true) or in the More Views menu (false).
    pub is_pinned: bool,
    /// The name of a custom view; `None` for built-in views.
    pub name: Option<String>,
}

impl NavigationView {
    pub fn json(&self) -> Value {
        json!({"fragment": self.fragment, "is_pinned": self.is_pinned, "name": self.name})
    }
}

/// `POST /navigation_views` (`fragment` and `name` already stripped and not blank).
#[derive(Debug, Clone)]
pub struct AddNavigationView {
    pub fragment: String,
    pub is_pinned: bool,
    pub name: Option<String>,
}

/// `PATCH /navigation_views/{fragment}` (`fragment` and `name` stripped, not blank).
#[derive(Debug, Clone)]
pub struct UpdateNavigationView {
    pub fragment: String,
    pub is_pinned: Option<bool>,
    pub name: Option<String>,
}

/// `DELETE /navigation_views/{fragment}` (the fragment as sent).
#[derive(Debug, Clone)]
pub struct RemoveNavigationView {
    pub fragment: String,
}

/// Pydantic's `StringConstraints(strip_whitespace=True, min_length=1)`: the stripped
/// value, or `x cannot be blank`.
pub fn stripped_nonblank(param: &str, raw: &str) -> ApiResult<String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err(ApiError::bad_request(format!("{param} cannot be blank")));
    }
    Ok(s.to_owned())
}

fn is_built_in(fragment: &str) -> bool {
    BUILT_IN_VIEW_FRAGMENTS.contains(&fragment)
}

/// Zulip's `ResourceNotFoundError`, with the code the seed gives it.
fn not_found() -> ApiError {
    ApiError::new(404, ErrorCode::NotFound, "Navigation view does not exist.")
}

fn already_exists() -> ApiError {
    ApiError::bad_request("Navigation view already exists.")
}

impl Realm {
    /// A user's configured views, in the order they were added.
    pub fn navigation_views_of(&self, user: UserId) -> &[NavigationView] {
        self.navigation_views
            .get(&user)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// `GET /navigation_views` and the `navigation_views` of `/register`.
    pub fn view_navigation_views(&self, me: &User) -> Vec<Value> {
        self.navigation_views_of(me.id)
            .iter()
            .map(NavigationView::json)
            .collect()
    }

    fn view_by_name(&self, me: &User, name: &str) -> Option<&NavigationView> {
        self.navigation_views_of(me.id)
            .iter()
            .find(|v| v.name.as_deref() == Some(name))
    }

    fn view_by_fragment(&self, me: &User, fragment: &str) -> Option<&NavigationView> {
        self.navigation_views_of(me.id)
            .iter()
            .find(|v| v.fragment == fragment)
    }

    /// `POST /navigation_views`.
    pub fn decide_add_navigation_view(
        &self,
        me: &User,
        q: AddNavigationView,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let AddNavigationView {
            fragment,
            is_pinned,
            name,
        } = q;
        if is_built_in(&fragment) {
            if name.is_some() {
                return Err(ApiError::bad_request(
                    "Built-in views cannot have a custom name.",
                ));
            }
        } else if name.is_none() {
            return Err(ApiError::bad_request(
                "Custom views must have a valid name.",
            ));
        }
        if self.view_by_fragment(me, &fragment).is_some() {
            return Err(already_exists());
        }
        if name
            .as_deref()
            .is_some_and(|n| self.view_by_name(me, n).is_some())
        {
            return Err(already_exists());
        }
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::NavigationViewAdded {
                user_id: me.id,
                view: NavigationView {
                    fragment,
                    is_pinned,
                    name,
                },
            },
        )]))
    }

    /// `PATCH /navigation_views/{fragment}`: the name checks come before the lookup.
    pub fn decide_update_navigation_view(
        &self,
        me: &User,
        q: UpdateNavigationView,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let UpdateNavigationView {
            fragment,
            is_pinned,
            name,
        } = q;
        let fragment = fragment.as_str();
        if is_built_in(fragment) && name.is_some() {
            return Err(ApiError::bad_request(
                "Built-in views cannot have a custom name.",
            ));
        }
        if name
            .as_deref()
            .is_some_and(|n| self.view_by_name(me, n).is_some())
        {
            return Err(already_exists());
        }
        let view = self.view_by_fragment(me, fragment).ok_or_else(not_found)?;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::NavigationViewUpdated {
                user_id: me.id,
                fragment: view.fragment.clone(),
                name,
                is_pinned,
            },
        )]))
    }

    /// `DELETE /navigation_views/{fragment}`.
    pub fn decide_remove_navigation_view(
        &self,
        me: &User,
        q: RemoveNavigationView,
        _cx: &mut Cx,
    ) -> ApiResult<Decided<()>> {
        let view = self
            .view_by_fragment(me, &q.fragment)
            .ok_or_else(not_found)?;
        Ok(Decided::changes(vec![Change::Personal(
            PersonalChange::NavigationViewRemoved {
                user_id: me.id,
                fragment: view.fragment.clone(),
            },
        )]))
    }

    pub(in crate::realm) fn apply_navigation_added(&mut self, user: UserId, view: &NavigationView) {
        self.navigation_views
            .entry(user)
            .or_default()
            .push(view.clone());
    }

    pub(in crate::realm) fn apply_navigation_updated(
        &mut self,
        user: UserId,
        fragment: &str,
        name: &Option<String>,
        is_pinned: Option<bool>,
    ) {
        if let Some(view) = self
            .navigation_views
            .get_mut(&user)
            .and_then(|views| views.iter_mut().find(|v| v.fragment == fragment))
        {
            if let Some(name) = name {
                view.name = Some(name.clone());
            }
            if let Some(p) = is_pinned {
                view.is_pinned = p;
            }
        }
    }

    pub(in crate::realm) fn apply_navigation_removed(&mut self, user: UserId, fragment: &str) {
        if let Some(views) = self.navigation_views.get_mut(&user) {
            views.retain(|v| v.fragment != fragment);
            if views.is_empty() {
                self.navigation_views.remove(&user);
            }
        }
    }

    /// `navigation_view` events, to the user only.
    pub(in crate::realm) fn navigation_events(&self, change: &PersonalChange) -> Vec<Event> {
        let body = match change {
            PersonalChange::NavigationViewAdded { view, .. } => {
                json!({"type": "navigation_view", "op": "add", "navigation_view": view.json()})
            }
            PersonalChange::NavigationViewUpdated {
                fragment,
                name,
                is_pinned,
                ..
            } => {
                let mut data = Map::new();
                if let Some(name) = name {
                    data.insert("name".into(), name.clone().into());
                }
                if let Some(p) = is_pinned {
                    data.insert("is_pinned".into(), (*p).into());
                }
                json!({"type": "navigation_view", "op": "update", "fragment": fragment, "data": data})
            }
            PersonalChange::NavigationViewRemoved { fragment, .. } => {
                json!({"type": "navigation_view", "op": "remove", "fragment": fragment})
            }
            PersonalChange::PushTokenAdded { .. }
            | PersonalChange::PushTokenRemoved { .. }
            | PersonalChange::PushDeviceRegistered { .. }
            | PersonalChange::PushDeviceActivated { .. }
            | PersonalChange::PushDeviceFailed { .. }
            | PersonalChange::UserTopicSet { .. }
            | PersonalChange::UserMuted { .. }
            | PersonalChange::UserUnmuted { .. }
            | PersonalChange::AlertWordsSet { .. }
            | PersonalChange::SettingSet { .. }
            | PersonalChange::DraftsAdded { .. }
            | PersonalChange::DraftUpdated { .. }
            | PersonalChange::DraftRemoved { .. }
            | PersonalChange::SnippetSaved { .. }
            | PersonalChange::SnippetRemoved { .. }
            | PersonalChange::ReminderAdded { .. }
            | PersonalChange::ReminderRemoved { .. } => return Vec::new(),
        };
        vec![Event::new(body, Audience::users(vec![change.user_id()]))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values() {
        assert_eq!(
            stripped_nonblank("fragment", "  ").map_err(|e| e.msg),
            Err("fragment cannot be blank".into())
        );
        assert_eq!(stripped_nonblank("name", " x ").ok().as_deref(), Some("x"));
        assert!(is_built_in("narrow/is/starred"));
        assert!(!is_built_in("narrow/channel/3-Verona"));
    }
}

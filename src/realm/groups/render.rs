//! Zulip's JSON shape of a user group and the reads of the group endpoints (`view_*`).

use serde_json::Map;

use super::*;
use crate::error::ApiResult;

impl Realm {
    /// Zulip's `require_member_or_admin`: no guests, no bots.
    pub fn require_member_or_admin(&self, me: &User) -> ApiResult<()> {
        if me.is_guest() {
            return Err(ApiError::bad_request("Not allowed for guest users"));
        }
        if me.is_bot() {
            return Err(ApiError::bad_request(
                "This endpoint does not accept bot requests.",
            ));
        }
        Ok(())
    }

    /// A group object of `GET /user_groups`, `realm_user_groups` and `user_group`
    /// events, keys in Zulip's order.
    pub fn group_json(&self, g: &UserGroup) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), g.id.into());
        m.insert("name".into(), g.name.clone().into());
        m.insert("creator_id".into(), json!(g.creator_id));
        let (date_created, description) = match g.system {
            Some(sys) => (Value::Null, sys.description().to_owned()),
            None => (g.date_created.into(), g.description.clone()),
        };
        m.insert("date_created".into(), date_created);
        m.insert("description".into(), description.into());
        m.insert("members".into(), json!(self.group_direct_members(g)));
        m.insert(
            "direct_subgroup_ids".into(),
            json!(self.group_direct_subgroups(g)),
        );
        m.insert("is_system_group".into(), g.system.is_some().into());
        for p in GroupPermission::ALL {
            m.insert(
                p.name().into(),
                self.setting_json(&self.group_permission(g, p)),
            );
        }
        m.insert("deactivated".into(), self.is_group_deactivated(g.id).into());
        Value::Object(m)
    }

    /// `GET /user_groups` and `realm_user_groups`: every group in id order, deactivated
    /// ones only when asked for.
    pub fn view_user_groups(&self, include_deactivated: bool) -> Vec<Value> {
        self.groups
            .values()
            .filter(|g| include_deactivated || !self.is_group_deactivated(g.id))
            .map(|g| self.group_json(g))
            .collect()
    }

    /// Zulip's `access_user_group_to_read_membership`: an active group.
    pub fn access_group_to_read(&self, id: i64) -> ApiResult<&UserGroup> {
        let g = u64::try_from(id)
            .ok()
            .and_then(|id| self.groups.get(&id))
            .ok_or_else(invalid_group)?;
        if self.is_group_deactivated(g.id) {
            return Err(group_deactivated());
        }
        Ok(g)
    }

    /// `GET /user_groups/{id}/members`: member ids, through subgroups unless
    /// `direct_only`.
    pub fn view_group_members(&self, id: i64, direct_only: bool) -> ApiResult<Vec<UserId>> {
        let g = self.access_group_to_read(id)?;
        Ok(if direct_only {
            self.group_direct_members(g)
        } else {
            self.group_members_recursive(g)
        })
    }

    /// `GET /user_groups/{id}/members/{user_id}`.
    pub fn view_is_group_member(
        &self,
        id: i64,
        user_id: i64,
        direct_only: bool,
    ) -> ApiResult<bool> {
        let g = self.access_group_to_read(id)?;
        // Zulip's `access_user_by_id` (bots and deactivated users refused).
        let user = u64::try_from(user_id)
            .ok()
            .and_then(|id| self.user(id))
            .filter(|u| !u.is_bot())
            .ok_or_else(|| ApiError::bad_request("No such user"))?;
        if !user.is_active {
            return Err(ApiError::bad_request("User is deactivated"));
        }
        Ok(if direct_only {
            self.is_direct_group_member(user, g.id)
        } else {
            self.is_group_member(user, g.id)
        })
    }

    /// `GET /user_groups/{id}/subgroups`: subgroup ids, recursively unless
    /// `direct_only`, in id order.
    pub fn view_group_subgroups(&self, id: i64, direct_only: bool) -> ApiResult<Vec<GroupId>> {
        let g = self.access_group_to_read(id)?;
        let direct = self.group_direct_subgroups(g);
        Ok(if direct_only {
            direct
        } else {
            self.recursive_subgroups(&direct).into_iter().collect()
        })
    }
}

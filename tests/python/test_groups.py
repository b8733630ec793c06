"""The official `zulip` Python client's user-group calls, and the navigation-view and
push-token endpoints through `call_endpoint`, against a running hearth.

Usage: python test_groups.py SITE_URL

create_user_group, get_user_groups, update_user_group and update_user_group_members
must work unmodified. Exits 0 on success, 1 with a message otherwise.
"""

import sys

import requests
import zulip


def fetch_key(site: str, email: str) -> str:
    resp = requests.post(f"{site}/api/v1/dev_fetch_api_key", data={"username": email}, timeout=10)
    resp.raise_for_status()
    return resp.json()["api_key"]


def check(cond: bool, what: str, result: object) -> None:
    if not cond:
        print(f"FAILED: {what}: {result}")
        sys.exit(1)


def main() -> int:
    site = sys.argv[1]
    hamlet = zulip.Client(email="hamlet@zulip.com", api_key=fetch_key(site, "hamlet@zulip.com"), site=site)
    iago = zulip.Client(email="iago@zulip.com", api_key=fetch_key(site, "iago@zulip.com"), site=site)
    hamlet_id = hamlet.get_profile()["user_id"]
    iago_id = iago.get_profile()["user_id"]

    # Create, then find it listed with Zulip's defaults.
    result = hamlet.create_user_group(
        {"name": "py-group", "description": "made by the Python client", "members": [hamlet_id]}
    )
    check(result["result"] == "success" and isinstance(result.get("group_id"), int), "create_user_group", result)
    group_id = result["group_id"]
    groups = {g["name"]: g for g in hamlet.get_user_groups()["user_groups"]}
    group = groups.get("py-group")
    check(group is not None and group["members"] == [hamlet_id], "get_user_groups", groups.keys())
    check(group["can_manage_group"] == {"direct_members": [hamlet_id], "direct_subgroups": []}, "defaults", group)
    check(groups["role:members"]["is_system_group"] is True, "system groups", groups["role:members"])

    # Update and members.
    result = hamlet.update_user_group({"group_id": group_id, "name": "py-group-2", "description": "renamed"})
    check(result["result"] == "success", "update_user_group", result)
    result = hamlet.update_user_group_members(group_id, {"add": [iago_id], "delete": [hamlet_id]})
    check(result["result"] == "success", "update_user_group_members", result)
    members = hamlet.call_endpoint(url=f"user_groups/{group_id}/members", method="GET")
    check(members.get("members") == [iago_id], "members", members)
    denied = iago.update_user_group({"group_id": group_id, "name": "x"})
    check(denied["result"] == "error" and denied["msg"] == "Insufficient permission", "not a manager", denied)

    # Deactivate: in use as a subgroup first.
    result = hamlet.create_user_group({"name": "py-parent", "description": "", "members": []})
    parent_id = result["group_id"]
    result = hamlet.call_endpoint(url=f"user_groups/{parent_id}/subgroups", method="POST", request={"add": [group_id]})
    check(result["result"] == "success", "add subgroup", result)
    result = hamlet.call_endpoint(url=f"user_groups/{group_id}/deactivate", method="POST")
    check(
        result["result"] == "error"
        and result["code"] == "CANNOT_DEACTIVATE_GROUP_IN_USE"
        and result["objections"] == [{"type": "subgroup", "supergroup_ids": [parent_id]}],
        "in use",
        result,
    )
    hamlet.call_endpoint(url=f"user_groups/{parent_id}/subgroups", method="POST", request={"delete": [group_id]})
    result = hamlet.call_endpoint(url=f"user_groups/{group_id}/deactivate", method="POST")
    check(result["result"] == "success", "deactivate", result)
    names = {g["name"] for g in hamlet.get_user_groups()["user_groups"]}
    check("py-group-2" not in names, "deactivated groups are not listed", names)

    # Navigation views.
    view = {"fragment": "narrow/channel/3-Verona", "name": "Verona view", "is_pinned": True}
    result = hamlet.call_endpoint(url="navigation_views", method="POST", request=view)
    check(result["result"] == "success", "add navigation view", result)
    result = hamlet.call_endpoint(url="navigation_views/narrow/channel/3-Verona", method="PATCH", request={"is_pinned": False})
    check(result["result"] == "success", "update navigation view", result)
    views = hamlet.call_endpoint(url="navigation_views", method="GET")
    check(
        views.get("navigation_views") == [{"fragment": "narrow/channel/3-Verona", "is_pinned": False, "name": "Verona view"}],
        "navigation views",
        views,
    )

    # Push tokens.
    result = hamlet.call_endpoint(url="users/me/android_gcm_reg_id", method="POST", request={"token": "py-token"})
    check(result["result"] == "success", "add FCM token", result)
    result = hamlet.call_endpoint(url="users/me/android_gcm_reg_id", method="DELETE", request={"token": "py-token"})
    check(result["result"] == "success", "remove FCM token", result)
    result = hamlet.call_endpoint(url="users/me/android_gcm_reg_id", method="DELETE", request={"token": "py-token"})
    check(result["result"] == "error" and result["msg"] == "Token does not exist", "removed twice", result)
    print("python client groups: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

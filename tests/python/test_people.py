"""The official `zulip` Python client's presence, status and custom emoji calls against a
running hearth.

Usage: python test_people.py SITE_URL

`update_presence`, `get_realm_presence`, `get_user_presence`, a status update (the
client has no `update_status` method: `call_endpoint` on `users/me/status`, as Zulip's
docs show), `get_realm_emoji` and `upload_custom_emoji`. Exits 0 on success, 1 with a
message otherwise.
"""

import os
import sys
import tempfile

import requests
import zulip


def fetch_key(site: str, email: str) -> str:
    resp = requests.post(f"{site}/api/v1/dev_fetch_api_key", data={"username": email}, timeout=10)
    resp.raise_for_status()
    return resp.json()["api_key"]


def check(what: str, cond: bool, res) -> None:
    if not cond:
        raise AssertionError(f"{what}: {res}")


def main() -> int:
    site = sys.argv[1]
    hamlet = zulip.Client(email="hamlet@zulip.com", api_key=fetch_key(site, "hamlet@zulip.com"), site=site)
    iago = zulip.Client(email="iago@zulip.com", api_key=fetch_key(site, "iago@zulip.com"), site=site)
    hamlet_email = hamlet.get_profile()["email"]

    res = hamlet.update_presence({"status": "active", "ping_only": False, "new_user_input": False})
    check("update_presence", res["result"] == "success" and hamlet_email in res["presences"], res)
    check("server_timestamp", isinstance(res["server_timestamp"], float), res)

    res = iago.get_realm_presence()
    check("get_realm_presence", res["result"] == "success", res)
    website = res["presences"][hamlet_email]["website"]
    check("legacy entry", website["status"] == "active" and website["pushable"] is False, res)

    res = iago.get_user_presence(hamlet_email)
    check("get_user_presence", res["presence"]["aggregated"]["status"] == "active", res)

    res = hamlet.call_endpoint(
        url="users/me/status",
        method="POST",
        request={"status_text": "on vacation", "emoji_name": "car"},
    )
    check("update status", res["result"] == "success", res)
    res = hamlet.call_endpoint(url="users/me/status", method="POST", request={"status_text": "x" * 61})
    check(
        "status_text limit",
        res["result"] == "error" and res["msg"] == "status_text is too long (limit: 60 characters)",
        res,
    )
    hamlet_id = hamlet.get_profile()["user_id"]
    res = iago.call_endpoint(url=f"users/{hamlet_id}/status", method="GET")
    check(
        "get status",
        res["status"] == {"status_text": "on vacation", "emoji_name": "car", "emoji_code": "1f697", "reaction_type": "unicode_emoji"},
        res,
    )

    res = iago.get_realm_emoji()
    names = {e["name"] for e in res["emoji"].values()}
    check("get_realm_emoji", res["result"] == "success" and "green_tick" in names, res)

    png = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "img.png")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "python_emoji.png")
        with open(png, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        with open(path, "rb") as fp:
            res = hamlet.upload_custom_emoji("python_emoji", fp)
    check("upload_custom_emoji", res["result"] == "success", res)
    res = hamlet.get_realm_emoji()
    names = {e["name"] for e in res["emoji"].values()}
    check("uploaded emoji listed", "python_emoji" in names, res)
    res = hamlet.call_endpoint(url="users/me/status", method="POST", request={"emoji_name": "python_emoji"})
    check("custom emoji status", res["result"] == "success", res)

    print("ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(e)
        sys.exit(1)

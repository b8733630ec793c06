"""The official `zulip` Python client (zulip==0.9.1, unmodified) against a running hearth.

Usage: python test_client.py SITE_URL

SITE_URL is a fresh development server (`hearth serve --dev`); this script starts
nothing. Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import zulip

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAIL: {what}")
    return condition


def post_form(site, path, fields):
    """POST a form without the client; returns (status, JSON body)."""
    data = urllib.parse.urlencode(fields).encode()
    try:
        with urllib.request.urlopen(f"{site}/api/v1/{path}", data=data, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def fetch_key(site, email):
    status, body = post_form(site, "dev_fetch_api_key", {"username": email})
    if status != 200:
        raise SystemExit(f"dev_fetch_api_key {email}: {status} {body}")
    return body["api_key"]


def main():
    site = sys.argv[1].rstrip("/")
    iago = zulip.Client(email="iago@zulip.com", api_key=fetch_key(site, "iago@zulip.com"), site=site)
    hamlet = zulip.Client(
        email="hamlet@zulip.com", api_key=fetch_key(site, "hamlet@zulip.com"), site=site
    )

    # The constructor read GET /server_settings.
    check(iago.feature_level == 420, f"feature level {iago.feature_level}")
    check(bool(iago.zulip_version), "zulip_version")

    # get_profile: GET /users/me.
    me = iago.get_profile()
    check(me.get("result") == "success", f"get_profile: {me}")
    check(me.get("delivery_email") == "iago@zulip.com", f"iago's delivery_email: {me}")
    check(me.get("email") == f"user{me.get('user_id')}@zulipdev.com", f"iago's API email: {me}")
    check(me.get("full_name") == "Iago" and me.get("is_admin") is True, f"iago: {me}")
    check(me.get("role") == 200 and me.get("is_owner") is False, f"iago's role: {me}")
    check(isinstance(me.get("profile_data"), dict), f"profile_data: {me}")
    check("ignored_parameters_unsupported" not in me, f"get_profile reports ignored: {me}")
    hamlet_me = hamlet.get_profile()
    check(hamlet_me.get("delivery_email") == "hamlet@zulip.com", f"hamlet: {hamlet_me}")
    check(hamlet_me.get("role") == 400, f"hamlet's role: {hamlet_me}")

    # get_members: GET /users, booleans sent as JSON text by the client.
    members = iago.get_members()
    check(members.get("result") == "success", f"get_members: {members}")
    people = members.get("members", [])
    check(len(people) == 16, f"{len(people)} members")
    by_email = {m["delivery_email"]: m for m in people}
    check("hamlet@zulip.com" in by_email, "hamlet listed")
    bot = by_email.get("default-bot@zulip.com", {})
    check(bot.get("is_bot") is True and bot.get("bot_type") == 1, f"bot: {bot}")
    check(bot.get("avatar_url") is None, f"bot avatar with client_gravatar: {bot}")
    check(by_email.get("desdemona@zulip.com", {}).get("user_id") == bot.get("bot_owner_id"), "bot owner")
    no_gravatar = iago.get_members({"client_gravatar": False})
    check(
        all(isinstance(m.get("avatar_url"), str) for m in no_gravatar.get("members", [])),
        "client_gravatar=False gives every avatar URL",
    )
    with_fields = hamlet.get_members({"include_custom_profile_fields": True})
    check(
        all(("profile_data" in m) != m["is_bot"] for m in with_fields.get("members", [])),
        "profile_data on humans only",
    )
    as_member = hamlet.get_members()
    others = [m for m in as_member.get("members", []) if not m["is_bot"] and m["full_name"] != "King Hamlet"]
    check(others and all(m["delivery_email"] is None for m in others), "members do not see real emails")

    # create_user: POST /users as iago (the one holding can_create_users).
    email = f"py-client-{int(time.time() * 1000)}@zulip.com"
    created = iago.create_user({"email": email, "password": "py-client-pw", "full_name": "Py Client"})
    check(created.get("result") == "success", f"create_user: {created}")
    user_id = created.get("user_id")
    check(isinstance(user_id, int), f"user_id: {created}")
    again = iago.create_user({"email": email.upper(), "password": "x", "full_name": "Again"})
    check(
        again.get("result") == "error" and again.get("msg") == "Email is already in use.",
        f"duplicate create_user: {again}",
    )
    refused = hamlet.create_user({"email": "nope@zulip.com", "password": "x", "full_name": "Nope"})
    check(
        refused.get("code") == "UNAUTHORIZED_PRINCIPAL"
        and refused.get("msg") == "Must be an organization administrator",
        f"member create_user: {refused}",
    )

    # get_user_by_id: GET /users/{id}.
    user = iago.get_user_by_id(user_id)
    check(user.get("result") == "success", f"get_user_by_id: {user}")
    u = user.get("user", {})
    check(u.get("user_id") == user_id and u.get("delivery_email") == email, f"new user: {u}")
    check(u.get("full_name") == "Py Client" and u.get("role") == 400, f"new user: {u}")
    with_profile = hamlet.get_user_by_id(user_id, include_custom_profile_fields=True)
    check(isinstance(with_profile.get("user", {}).get("profile_data"), dict), f"{with_profile}")
    check(with_profile.get("user", {}).get("delivery_email") is None, f"{with_profile}")
    missing = iago.get_user_by_id(999999)
    check(
        missing.get("result") == "error" and missing.get("msg") == "No such user",
        f"unknown user: {missing}",
    )
    listed = iago.get_members()
    check(any(m["user_id"] == user_id for m in listed.get("members", [])), "new user listed")

    # The new user logs in with its password and uses the client.
    status, login = post_form(site, "fetch_api_key", {"username": email, "password": "py-client-pw"})
    check(status == 200 and login.get("user_id") == user_id, f"fetch_api_key: {status} {login}")
    newbie = zulip.Client(email=email, api_key=login.get("api_key", ""), site=site)
    profile = newbie.get_profile()
    check(profile.get("user_id") == user_id, f"new user's profile: {profile}")

    # Bad credentials: the client still starts (server_settings needs none) and the
    # server's answer comes back as a result.
    bad = zulip.Client(email="iago@zulip.com", api_key="x" * 32, site=site)
    denied = bad.get_profile()
    check(
        denied.get("result") == "error"
        and denied.get("code") == "UNAUTHORIZED"
        and denied.get("msg") == "Invalid API key",
        f"bad key: {denied}",
    )

    if FAILURES:
        print(f"python client: {len(FAILURES)} check(s) failed")
        return 1
    print("python client: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

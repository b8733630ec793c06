"""The official `zulip` Python client (zulip==0.9.1, unmodified): personal settings.

Usage: python test_settings.py SITE_URL

Changes notification settings with `update_notification_settings` (the legacy
`PATCH /settings/notifications`), display and other settings through `call_endpoint`
(`PATCH /settings`, `PATCH /settings/display`, `PATCH /realm/user_settings_defaults`,
`GET /messages/{id}/read_receipts`, which 0.9.1 has no method for), and checks what
`register` answers, against a fresh development server.
Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import json
import sys
import urllib.parse
import urllib.request

import zulip

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAIL: {what}")
    return condition


def fetch_key(site, email):
    data = urllib.parse.urlencode({"username": email}).encode()
    with urllib.request.urlopen(f"{site}/api/v1/dev_fetch_api_key", data=data, timeout=30) as resp:
        return json.load(resp)["api_key"]


def client(site, email):
    return zulip.Client(email=email, api_key=fetch_key(site, email), site=site)


def settings(c):
    state = c.register(fetch_event_types=["user_settings", "realm_user_settings_defaults"])
    check(state.get("result") == "success", f"register: {state}")
    return state.get("user_settings", {}), state.get("realm_user_settings_defaults", {})


def main():
    site = sys.argv[1].rstrip("/")
    hamlet = client(site, "hamlet@zulip.com")
    othello = client(site, "othello@zulip.com")
    iago = client(site, "iago@zulip.com")

    r = hamlet.update_notification_settings(
        {"enable_stream_push_notifications": True, "enable_sounds": False}
    )
    check(r.get("result") == "success", f"update_notification_settings: {r}")
    r = hamlet.update_notification_settings({"notification_sound": "ding"})
    check(
        r.get("result") == "error" and r.get("msg") == "Invalid notification sound 'ding'",
        f"update_notification_settings with a bad sound: {r}",
    )
    r = hamlet.call_endpoint(url="settings/display", method="PATCH", request={"emojiset": "text"})
    check(r.get("result") == "success", f"settings/display: {r}")
    r = hamlet.call_endpoint(
        url="settings",
        method="PATCH",
        request={"color_scheme": 2, "timezone": "Asia/Tokyo", "full_name": "Prince Hamlet"},
    )
    check(r.get("result") == "success", f"settings: {r}")
    r = hamlet.call_endpoint(url="settings", method="PATCH", request={"color_scheme": 9})
    check(
        r.get("msg") == "Invalid color_scheme: Value error, Not in the list of possible values",
        f"settings with a bad color scheme: {r}",
    )
    mine, _ = settings(hamlet)
    for key, value in [
        ("enable_stream_push_notifications", True),
        ("enable_sounds", False),
        ("emojiset", "text"),
        ("color_scheme", 2),
        ("timezone", "Asia/Tokyo"),
    ]:
        check(mine.get(key) == value, f"{key} is {mine.get(key)!r}")
    check(hamlet.get_profile().get("full_name") == "Prince Hamlet", "full name changed")

    r = hamlet.call_endpoint(
        url="realm/user_settings_defaults", method="PATCH", request={"emojiset": "twitter"}
    )
    check(
        r.get("msg") == "Must be an organization administrator",
        f"defaults as a member: {r}",
    )
    r = iago.call_endpoint(
        url="realm/user_settings_defaults", method="PATCH", request={"emojiset": "twitter"}
    )
    check(r.get("result") == "success", f"defaults as an administrator: {r}")
    _, defaults = settings(hamlet)
    check(defaults.get("emojiset") == "twitter", f"default emojiset {defaults.get('emojiset')!r}")

    sent = iago.send_message({"type": "stream", "to": "Verona", "topic": "receipts", "content": "hi"})
    check(sent.get("result") == "success", f"send: {sent}")
    r = othello.update_message_flags({"messages": [sent["id"]], "op": "add", "flag": "read"})
    check(r.get("result") == "success", f"mark read: {r}")
    r = hamlet.call_endpoint(url=f"messages/{sent['id']}/read_receipts", method="GET")
    othello_id = othello.get_profile()["user_id"]
    check(r.get("user_ids") == [othello_id], f"read_receipts: {r}")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all settings checks passed")


if __name__ == "__main__":
    main()

"""The official `zulip` Python client (zulip==0.9.1, unmodified): smaller endpoints.

Usage: python test_misc.py SITE_URL

Of the smaller endpoints, the client has a method for one: `get_stream_email_address`
(`GET /streams/{stream_id}/email_address`). The others are called through
`call_endpoint`, as a client does for endpoints it has no method for: a bulk
subscription change (`PATCH /users/me/subscriptions`), a user's channels, an
administrator setting another user's status, and deleting a topic.
Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import json
import re
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


def main():
    site = sys.argv[1].rstrip("/")
    iago = client(site, "iago@zulip.com")
    hamlet = client(site, "hamlet@zulip.com")

    verona = hamlet.get_stream_id("Verona")["stream_id"]
    first = hamlet.get_stream_email_address(verona)
    check(first.get("result") == "success", f"get_stream_email_address: {first}")
    email = first.get("email", "")
    check(
        re.fullmatch(r"verona\.[0-9a-f]{32}\.show-sender@[^@]+", email) is not None,
        f"the address's format: {email}",
    )
    again = hamlet.get_stream_email_address(verona)
    check(again.get("email") == email, f"the same address again: {again}")
    missing = hamlet.get_stream_email_address(99999)
    check(
        missing.get("result") == "error" and missing.get("msg") == "Invalid channel ID",
        f"an unknown channel: {missing}",
    )

    changed = hamlet.call_endpoint(
        url="users/me/subscriptions",
        method="PATCH",
        request={"add": json.dumps([{"name": "python bulk"}]), "delete": json.dumps(["design"])},
    )
    check(changed.get("result") == "success", f"PATCH subscriptions: {changed}")
    check(changed.get("removed") == ["design"], f"removed: {changed}")
    mine = [s["name"] for s in hamlet.get_subscriptions()["subscriptions"]]
    check("python bulk" in mine and "design" not in mine, f"subscriptions after: {mine}")

    me = hamlet.get_profile()["user_id"]
    channels = iago.call_endpoint(url=f"users/{me}/channels", method="GET")
    check(verona in channels.get("subscribed_channel_ids", []), f"hamlet's channels: {channels}")

    status = iago.call_endpoint(
        url=f"users/{me}/status", method="POST", request={"status_text": "busy"}
    )
    check(status.get("result") == "success", f"status of another user: {status}")
    own = hamlet.call_endpoint(url=f"users/{me}/status", method="GET")
    check(own.get("status", {}).get("status_text") == "busy", f"the status set: {own}")

    hamlet.send_message({"type": "stream", "to": "Verona", "topic": "python doomed", "content": "x"})
    deleted = iago.call_endpoint(
        url=f"streams/{verona}/delete_topic", method="POST", request={"topic_name": "python doomed"}
    )
    check(deleted.get("complete") is True, f"delete_topic: {deleted}")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()

"""The official `zulip` Python client's channel calls against a running hearth.

Usage: python test_channels.py SITE_URL

add_subscriptions, update_subscription_settings, remove_subscriptions and
add_default_stream must work unmodified. Exits 0 on success, 1 with a message otherwise.
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

    # Subscribe to a new channel (created on the fly) and to an existing one.
    result = hamlet.add_subscriptions(
        streams=[{"name": "py-client", "description": "made by the Python client"}, {"name": "Denmark"}]
    )
    check(result["result"] == "success", "add_subscriptions", result)
    me = str(hamlet.get_profile()["user_id"])
    check(sorted(result["subscribed"].get(me, [])) == ["Denmark", "py-client"], "subscribed", result)

    stream_id = hamlet.get_stream_id("py-client")["stream_id"]
    subs = {s["name"]: s for s in hamlet.get_subscriptions()["subscriptions"]}
    check("py-client" in subs and subs["py-client"]["description"] == "made by the Python client", "listed", subs.keys())

    # Change subscription settings, including the is_muted/in_home_view pair.
    result = hamlet.update_subscription_settings(
        [
            {"stream_id": stream_id, "property": "color", "value": "#ff0000"},
            {"stream_id": stream_id, "property": "is_muted", "value": True},
            {"stream_id": stream_id, "property": "pin_to_top", "value": True},
        ]
    )
    check(result["result"] == "success", "update_subscription_settings", result)
    sub = {s["name"]: s for s in hamlet.get_subscriptions()["subscriptions"]}["py-client"]
    check(sub["color"] == "#ff0000" and sub["is_muted"] and not sub["in_home_view"] and sub["pin_to_top"], "settings", sub)

    bad = hamlet.update_subscription_settings([{"stream_id": stream_id, "property": "bogus", "value": True}])
    check(bad["result"] == "error" and bad["msg"] == "Unknown subscription property: bogus", "bad property", bad)

    # Default channels: administrators only.
    denied = hamlet.add_default_stream(stream_id)
    check(denied["result"] == "error" and denied["msg"] == "Must be an organization administrator", "member default", denied)
    result = iago.add_default_stream(stream_id)
    check(result["result"] == "success", "add_default_stream", result)
    streams = {s["name"]: s for s in iago.get_streams(include_default=True)["streams"]}
    check(streams["py-client"]["is_default"] is True, "is_default", streams["py-client"])

    # Unsubscribe, then again (already unsubscribed), then a missing channel.
    result = hamlet.remove_subscriptions(["py-client"])
    check(result["result"] == "success" and result["removed"] == ["py-client"], "remove_subscriptions", result)
    result = hamlet.remove_subscriptions(["py-client"])
    check(result["not_removed"] == ["py-client"], "not_removed", result)
    result = hamlet.remove_subscriptions(["no such channel"])
    check(
        result["result"] == "error" and result["code"] == "STREAM_DOES_NOT_EXIST" and result["stream"] == "no such channel",
        "missing channel",
        result,
    )
    print("python client channels: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

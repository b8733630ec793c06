"""The official `zulip` Python client (zulip==0.9.1, unmodified) on the first start of
a realm made by `hearth realm create`, as its owner.

Usage: python first_start.py ZULIPRC

Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import sys

import zulip

FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print(f"FAIL: {what}")
    return condition


def main():
    client = zulip.Client(config_file=sys.argv[1])
    profile = client.get_profile()
    check(profile["result"] == "success", f"get_profile: {profile}")
    check(profile.get("is_owner") is True, f"the owner: {profile}")

    state = client.register(event_types=["message"], fetch_event_types=["realm_user", "message", "update_message_flags", "subscription"])
    check(state["result"] == "success", f"register: {state}")
    bots = {b["email"]: b for b in state.get("cross_realm_bots", [])}
    check("welcome-bot@zulip.com" in bots, f"cross_realm_bots: {list(bots)}")
    welcome_id = bots.get("welcome-bot@zulip.com", {}).get("user_id")
    subs = sorted(s["name"] for s in state.get("subscriptions", []))
    check(subs == ["Zulip", "general", "sandbox"], f"subscriptions: {subs}")
    unread = state.get("unread_msgs", {})
    check(unread.get("count") == 13, f"unread count: {unread.get('count')}")

    got = client.get_messages({"anchor": "newest", "num_before": 100, "num_after": 0,
                               "apply_markdown": False})
    check(got["result"] == "success", f"get_messages: {got}")
    messages = got.get("messages", [])
    check(len(messages) == 13, f"13 messages: {len(messages)}")
    check(all(m["sender_id"] == welcome_id for m in messages), "all from the Welcome Bot")
    topics = [(m["display_recipient"], m["subject"]) for m in messages if m["type"] == "stream"]
    check(("general", "greetings") in topics, f"greetings: {topics}")
    check(("Zulip", "welcome to Zulip!") in topics, f"welcome to Zulip!: {topics}")
    dm = [m for m in messages if m["type"] == "private"]
    check(len(dm) == 1 and dm[0]["sender_full_name"] == "Welcome Bot", f"the welcome DM: {dm}")
    check(dm and dm[0]["flags"] == [], f"unread: {dm and dm[0]['flags']}")
    names = dm and sorted(u["full_name"] for u in dm[0]["display_recipient"])
    check(names == ["Boss", "Welcome Bot"], f"display_recipient: {names}")

    # The owner replies in a channel, and reads the welcome.
    sent = client.send_message({"type": "stream", "to": "general", "topic": "greetings",
                                "content": "Hello, everyone!"})
    check(sent["result"] == "success", f"send_message: {sent}")
    if dm:
        marked = client.update_message_flags({"messages": [dm[0]["id"]], "op": "add",
                                              "flag": "read"})
        check(marked["result"] == "success", f"mark read: {marked}")

    # The realm's custom text, then a test of it.
    patched = client.call_endpoint(url="realm", method="PATCH",
                                   request={"welcome_message_custom_text": "Read the handbook."})
    check(patched.get("welcome_message_custom_text") == "updated", f"PATCH /realm: {patched}")
    tested = client.call_endpoint(url="realm/test_welcome_bot_custom_message", method="POST",
                                  request={"welcome_message_custom_text": "Read the handbook."})
    check(tested["result"] == "success" and isinstance(tested.get("message_id"), int),
          f"test_welcome_bot_custom_message: {tested}")

    if FAILURES:
        print(f"{len(FAILURES)} checks failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()

"""The official `zulip` Python client (zulip==0.9.1, unmodified): topics and people.

Usage: python test_people_state.py SITE_URL

Mutes and unmutes a topic (`mute_topic`, the legacy endpoint), follows one through
`POST /user_topics` (`call_endpoint`: 0.9.1 has no method for it), mutes and unmutes a
user (`call_endpoint`), and adds, lists and removes alert words (`add_alert_words`,
`get_alert_words`, `remove_alert_words`), checking `register` and the flags of delivered messages
(`get_raw_message`), against a fresh development server.
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


def ok(r, what):
    return check(r.get("result") == "success", f"{what}: {r}")


def main():
    site = sys.argv[1].rstrip("/")
    hamlet = client(site, "hamlet@zulip.com")
    othello = client(site, "othello@zulip.com")
    verona = hamlet.get_stream_id("Verona")["stream_id"]
    othello_id = othello.get_profile()["user_id"]

    # Topics: the legacy endpoint and the new one share the rows.
    ok(hamlet.mute_topic({"op": "add", "stream": "Verona", "topic": "noise"}), "mute_topic add")
    r = hamlet.mute_topic({"op": "add", "stream_id": verona, "topic": "noise", "stream": "Verona"})
    check(
        r.get("msg") == "Unsupported parameter combination: stream_id, stream",
        f"mute_topic with both channel parameters: {r}",
    )
    ok(
        hamlet.call_endpoint(
            url="user_topics",
            method="POST",
            request={"stream_id": verona, "topic": "plans", "visibility_policy": 3},
        ),
        "follow a topic",
    )
    r = hamlet.call_endpoint(
        url="user_topics",
        method="POST",
        request={"stream_id": verona, "topic": "plans", "visibility_policy": 9},
    )
    check(
        r.get("msg") == "Invalid visibility_policy: Value error, Not in the list of possible values",
        f"invalid policy: {r}",
    )
    state = hamlet.register(fetch_event_types=["user_topic"])
    rows = {(t["topic_name"], t["visibility_policy"]) for t in state.get("user_topics", [])}
    check(rows == {("noise", 1), ("plans", 3)}, f"user_topics: {state.get('user_topics')}")
    state = hamlet.register(fetch_event_types=["muted_topics"])
    muted = [t[:2] for t in state.get("muted_topics", [])]
    check(muted == [["Verona", "noise"]], f"muted_topics: {state.get('muted_topics')}")
    ok(hamlet.mute_topic({"op": "remove", "stream": "Verona", "topic": "NOISE"}), "mute_topic remove")
    state = hamlet.register(fetch_event_types=["user_topic"])
    check(len(state.get("user_topics", [])) == 1, f"one row left: {state.get('user_topics')}")

    # Muted users: the muted user's new messages arrive read.
    r = hamlet.call_endpoint(url=f"users/me/muted_users/{othello_id}", method="POST")
    ok(r, "mute othello")
    r = hamlet.call_endpoint(url=f"users/me/muted_users/{othello_id}", method="POST")
    check(r.get("msg") == "User already muted", f"mute twice: {r}")
    sent = othello.send_message({"type": "stream", "to": "Verona", "topic": "t", "content": "hi"})
    ok(sent, "othello sends")
    got = hamlet.get_raw_message(sent.get("id"))
    check("read" in got.get("message", {}).get("flags", []), f"arrives read: {got}")
    state = hamlet.register(fetch_event_types=["muted_users"])
    check(
        [m["id"] for m in state.get("muted_users", [])] == [othello_id],
        f"muted_users: {state.get('muted_users')}",
    )
    ok(hamlet.call_endpoint(url=f"users/me/muted_users/{othello_id}", method="DELETE"), "unmute")
    r = hamlet.call_endpoint(url=f"users/me/muted_users/{othello_id}", method="DELETE")
    check(r.get("msg") == "User is not muted", f"unmute twice: {r}")

    # Alert words.
    r = hamlet.add_alert_words([" Pizza ", "", "pizza", "ice cream"])
    check(r.get("alert_words") == ["pizza", "ice cream"], f"add_alert_words: {r}")
    r = hamlet.get_alert_words()
    check(r.get("alert_words") == ["pizza", "ice cream"], f"get_alert_words: {r}")
    sent = othello.send_message({"type": "stream", "to": "Verona", "topic": "food", "content": "PIZZA!"})
    got = hamlet.get_raw_message(sent.get("id"))
    check("has_alert_word" in got.get("message", {}).get("flags", []), f"has_alert_word: {got}")
    r = hamlet.remove_alert_words(["PIZZA"])
    check(r.get("alert_words") == ["ice cream"], f"remove_alert_words: {r}")
    r = hamlet.add_alert_words(["x" * 101])
    check(r.get("msg") == "alert_words[0] is too long (limit: 100 characters)", f"too long: {r}")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()

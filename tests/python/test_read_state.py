"""The official `zulip` Python client (zulip==0.9.1, unmodified): read state in bulk.

Usage: python test_read_state.py SITE_URL

Marks a topic, a channel and then everything read (`mark_topic_as_read`,
`mark_stream_as_read`, `mark_all_as_read`), checking the unread counts of `register`
after each, renders Markdown (`render_message`) and checks messages against a narrow
(`check_messages_match_narrow`), against a fresh development server.
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


def unread(c):
    state = c.register(event_types=["message"], fetch_event_types=["message", "update_message_flags"])
    check(state.get("result") == "success", f"register: {state}")
    return state.get("unread_msgs", {}).get("count")


def main():
    site = sys.argv[1].rstrip("/")
    iago = client(site, "iago@zulip.com")
    othello = client(site, "othello@zulip.com")

    def send(to, topic, content):
        r = iago.send_message({"type": "stream", "to": to, "topic": topic, "content": content})
        check(r.get("result") == "success", f"send: {r}")
        return r.get("id")

    first = send("Verona", "alpha", "one")
    send("Verona", "alpha", "two")
    send("Verona", "beta", "three")
    send("Denmark", "gamma", "four")
    check(unread(othello) == 4, "four unread to begin with")

    verona = othello.get_stream_id("Verona")
    check(verona.get("result") == "success", f"get_stream_id: {verona}")
    verona = verona.get("stream_id")

    r = othello.mark_topic_as_read(verona, "alpha")
    check(r == {"result": "success", "msg": ""}, f"mark_topic_as_read: {r}")
    check(unread(othello) == 2, "two unread after the topic")
    r = othello.mark_topic_as_read(verona, "no such topic")
    check(
        r.get("result") == "error" and r.get("msg") == "No such topic 'no such topic'",
        f"mark_topic_as_read of an unknown topic: {r}",
    )

    r = othello.mark_stream_as_read(verona)
    check(r == {"result": "success", "msg": ""}, f"mark_stream_as_read: {r}")
    check(unread(othello) == 1, "one unread after the channel")
    r = othello.mark_stream_as_read(999999)
    check(
        r.get("result") == "error" and r.get("msg") == "Invalid channel ID",
        f"mark_stream_as_read of an unknown channel: {r}",
    )

    r = othello.mark_all_as_read()
    check(r.get("result") == "success" and r.get("complete") is True, f"mark_all_as_read: {r}")
    check(unread(othello) == 0, "nothing unread after all")

    r = othello.render_message({"content": "foo **bar**"})
    check(r.get("rendered") == "<p>foo <strong>bar</strong></p>", f"render_message: {r}")
    r = othello.render_message({})
    check(
        r.get("result") == "error" and r.get("msg") == "Missing 'content' argument",
        f"render_message without content: {r}",
    )

    r = othello.check_messages_match_narrow(
        msg_ids=[first], narrow=[{"operator": "topic", "operand": "alpha"}]
    )
    check(
        r.get("messages") == {str(first): {"match_content": "<p>one</p>", "match_subject": "alpha"}},
        f"check_messages_match_narrow: {r}",
    )

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all read-state checks passed")


if __name__ == "__main__":
    main()

"""The official `zulip` Python client (zulip==0.9.1, unmodified): messages.

Usage: python test_messages.py SITE_URL

Sends, reads, edits, deletes, reads the edit history, marks read, schedules, and
receives messages through `call_on_each_message`, against a fresh development server.
Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import json
import sys
import threading
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
    othello = client(site, "othello@zulip.com")

    # call_on_each_message: a real long-poll loop, in a thread, until our message lands.
    received = []
    arrived = threading.Event()

    def on_message(message):
        received.append(message)
        if "for the listener" in message.get("content", ""):
            arrived.set()

    listener = threading.Thread(target=lambda: hamlet.call_on_each_message(on_message), daemon=True)
    listener.start()
    time.sleep(1.0)

    # send_message to a channel (by name) and directly (by email and by id).
    sent = iago.send_message(
        {"type": "stream", "to": "Verona", "topic": "py client", "content": "hello **world** for the listener"}
    )
    check(sent.get("result") == "success" and isinstance(sent.get("id"), int), f"send_message: {sent}")
    message_id = sent.get("id")
    check(arrived.wait(30), "call_on_each_message received the message")
    got = [m for m in received if m.get("id") == message_id]
    check(got and got[0].get("display_recipient") == "Verona", f"received: {received}")
    # /register's apply_markdown defaults to false: the event carries the Markdown.
    check(got and got[0].get("content") == "hello **world** for the listener", f"received: {got}")

    othello_id = othello.get_profile()["user_id"]
    dm = hamlet.send_message({"type": "private", "to": [othello_id], "content": "psst"})
    check(dm.get("result") == "success", f"direct send_message: {dm}")
    bad = hamlet.send_message({"type": "stream", "to": "nonexistent", "topic": "t", "content": "x"})
    check(
        bad.get("code") == "STREAM_DOES_NOT_EXIST" and bad.get("msg") == "Channel 'nonexistent' does not exist",
        f"unknown channel: {bad}",
    )

    # get_messages with a narrow.
    result = hamlet.get_messages(
        {
            "anchor": "newest",
            "num_before": 10,
            "num_after": 0,
            "narrow": [{"operator": "channel", "operand": "Verona"}, {"operator": "topic", "operand": "py client"}],
        }
    )
    check(result.get("result") == "success", f"get_messages: {result}")
    ids = [m["id"] for m in result.get("messages", [])]
    check(ids == [message_id], f"narrowed ids: {ids}")
    check(result.get("found_newest") is True, f"found_newest: {result}")
    unread = othello.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0})
    check(
        any(m["id"] == dm.get("id") and m["flags"] == [] for m in unread.get("messages", [])),
        f"othello's unread DM: {unread}",
    )

    # update_message and get_message_history.
    edited = iago.update_message({"message_id": message_id, "content": "edited content", "topic": "py client edited"})
    check(edited.get("result") == "success" and edited.get("detached_uploads") == [], f"update_message: {edited}")
    history = iago.get_message_history(message_id)
    check(history.get("result") == "success", f"get_message_history: {history}")
    entries = history.get("message_history", [])
    check(len(entries) == 2, f"history entries: {entries}")
    if len(entries) == 2:
        check(entries[1].get("prev_topic") == "py client", f"prev_topic: {entries[1]}")
        check(entries[1].get("prev_content") == "hello **world** for the listener", f"prev_content: {entries[1]}")
        check("highlight_text_inserted" in entries[1].get("content_html_diff", ""), f"diff: {entries[1]}")
    denied = hamlet.update_message({"message_id": message_id, "content": "not mine"})
    check(denied.get("msg") == "You don't have permission to edit this message", f"edit as hamlet: {denied}")

    # mark read: update_message_flags.
    flags = othello.update_message_flags({"messages": [dm.get("id")], "op": "add", "flag": "read"})
    check(flags.get("result") == "success" and flags.get("messages") == [dm.get("id")], f"flags: {flags}")
    read = othello.get_raw_message(dm.get("id"))
    check("read" in read.get("message", {}).get("flags", []), f"read flag: {read}")
    check(read.get("raw_content") == "psst", f"raw_content: {read}")

    # Scheduled messages.
    scheduled = hamlet.call_endpoint(
        "scheduled_messages",
        method="POST",
        request={
            "type": "direct",
            "to": json.dumps([othello_id]),
            "content": "later",
            "scheduled_delivery_timestamp": int(time.time()) + 3600,
        },
    )
    check(scheduled.get("result") == "success", f"schedule: {scheduled}")
    listing = hamlet.call_endpoint("scheduled_messages", method="GET")
    check(len(listing.get("scheduled_messages", [])) == 1, f"scheduled list: {listing}")

    # delete_message.
    deleted = iago.delete_message(message_id)
    check(deleted.get("result") == "success", f"delete_message: {deleted}")
    gone = iago.get_raw_message(message_id)
    check(gone.get("msg") == "Invalid message(s)", f"deleted message: {gone}")

    if FAILURES:
        print(f"{len(FAILURES)} checks failed")
        sys.exit(1)
    print("all message checks passed")


if __name__ == "__main__":
    main()

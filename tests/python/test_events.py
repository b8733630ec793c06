"""The official `zulip` Python client's event loop against a running hearth.

Usage: python test_events.py SITE_URL

`call_on_each_event` must deliver a `realm_user` add event to a member when an
administrator creates a user. Exits 0 on success, 1 with a message otherwise.
"""

import sys
import threading
import time

import requests
import zulip


def fetch_key(site: str, email: str) -> str:
    resp = requests.post(f"{site}/api/v1/dev_fetch_api_key", data={"username": email}, timeout=10)
    resp.raise_for_status()
    return resp.json()["api_key"]


def main() -> int:
    site = sys.argv[1]
    member = zulip.Client(email="hamlet@zulip.com", api_key=fetch_key(site, "hamlet@zulip.com"), site=site)
    admin = zulip.Client(email="iago@zulip.com", api_key=fetch_key(site, "iago@zulip.com"), site=site)

    received = []
    registered = threading.Event()
    got_event = threading.Event()
    original_register = member.register

    def register(*args, **kwargs):
        res = original_register(*args, **kwargs)
        registered.set()
        return res

    member.register = register  # observe registration, change nothing

    def on_event(event):
        received.append(event)
        if event.get("type") == "realm_user" and event.get("op") == "add":
            got_event.set()

    thread = threading.Thread(
        target=member.call_on_each_event, args=(on_event, ["realm_user"]), daemon=True
    )
    thread.start()
    if not registered.wait(20):
        print("call_on_each_event never registered a queue")
        return 1
    time.sleep(0.2)

    email = f"py-events-{int(time.time() * 1000)}@zulip.com"
    result = admin.create_user({"email": email, "password": "abcd1234", "full_name": "Py Events"})
    if result.get("result") != "success":
        print(f"create_user failed: {result}")
        return 1
    if not got_event.wait(20):
        print(f"no realm_user add event; received {received}")
        return 1
    person = next(e for e in received if e.get("type") == "realm_user")["person"]
    if person["user_id"] != result["user_id"] or person["full_name"] != "Py Events":
        print(f"unexpected person {person} for {result}")
        return 1
    print("python client event loop: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

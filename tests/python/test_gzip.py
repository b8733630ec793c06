"""The official `zulip` Python client (zulip==0.9.1, unmodified) against gzip answers.

Usage: python test_gzip.py SITE_URL

The client's `requests` session sends `Accept-Encoding: gzip, deflate`; hearth answers
large JSON (`GET /users`, `POST /register`, presence listings) gzip-compressed. This
checks that those answers arrived compressed and that the client read them as usual.
Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import json
import sys
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
    with urllib.request.urlopen(f"{site}/api/v1/dev_fetch_api_key", data=data, timeout=30) as r:
        return json.load(r)["api_key"]


def main():
    site = sys.argv[1].rstrip("/")
    iago = zulip.Client(email="iago@zulip.com", api_key=fetch_key(site, "iago@zulip.com"), site=site)
    iago.ensure_session()
    seen = {}

    def record(response, *args, **kwargs):
        path = urllib.parse.urlparse(response.url).path
        seen[path] = (
            response.request.headers.get("Accept-Encoding", ""),
            response.headers.get("Content-Encoding"),
            response.headers.get("Vary", ""),
        )

    iago.session.hooks["response"].append(record)

    members = iago.get_members()
    check(members.get("result") == "success", f"get_members: {members}")
    emails = {m["delivery_email"] for m in members.get("members", [])}
    check("hamlet@zulip.com" in emails and len(emails) == 16, f"members: {sorted(emails)}")
    sent, encoding, vary = seen.get("/api/v1/users", ("", None, ""))
    check("gzip" in sent, f"the client sends Accept-Encoding: {sent!r}")
    check(encoding == "gzip", f"GET /users arrived as {encoding!r}")
    check("accept-encoding" in vary.lower(), f"GET /users Vary: {vary!r}")

    iago.update_presence({"status": "active"})
    presence = iago.call_endpoint(url="realm/presence", method="GET")
    check(presence.get("result") == "success", f"realm presence: {presence}")
    check(len(presence.get("presences", {})) == 1, f"iago present: {presence}")

    state = iago.register()
    check(state.get("result") == "success" and "queue_id" in state, f"register: {list(state)}")
    check(seen.get("/api/v1/register", (None, None))[1] == "gzip", f"register: {seen}")

    # A small answer is sent as it is.
    me = iago.get_profile()
    check(me.get("full_name") == "Iago", f"get_profile: {me}")
    check(seen.get("/api/v1/users/me", (None, "x"))[1] is None, f"small answer: {seen}")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("gzip answers: all checks passed")


if __name__ == "__main__":
    main()

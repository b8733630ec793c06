"""The official `zulip` Python client (zulip==0.9.1, unmodified) against a running hearth:
linkifiers, custom profile fields and uploads.

Usage: python test_linkifiers_uploads.py SITE_URL

SITE_URL is a fresh development server (`hearth serve --dev`); this script starts
nothing. Exits 0 when every check passes, 1 with the failed checks otherwise.
"""

import base64
import json
import os
import sys
import tempfile
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


def get_file(site, path, email, key):
    """GET a file with Basic credentials: (status, bytes)."""
    token = base64.b64encode(f"{email}:{key}".encode()).decode()
    req = urllib.request.Request(f"{site}{path}", headers={"Authorization": f"Basic {token}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    site = sys.argv[1].rstrip("/")
    iago_key = fetch_key(site, "iago@zulip.com")
    hamlet_key = fetch_key(site, "hamlet@zulip.com")
    iago = zulip.Client(email="iago@zulip.com", api_key=iago_key, site=site)
    hamlet = zulip.Client(email="hamlet@zulip.com", api_key=hamlet_key, site=site)

    # Linkifiers: the client sends url_template at feature level 176 and later.
    added = iago.add_realm_filter("#T(?P<id>[0-9]+)", "https://trac.example.com/ticket/{id}")
    check(added.get("result") == "success" and isinstance(added.get("id"), int), f"add_realm_filter: {added}")
    bad = iago.add_realm_filter("(foo", "https://example.com/{id}")
    check(bad.get("msg") == "Bad regular expression: missing ): (foo", f"bad regex: {bad}")
    check("__all__" in bad.get("errors", {}), f"errors object: {bad}")
    refused = hamlet.add_realm_filter("#H(?P<id>[0-9]+)", "https://example.com/{id}")
    check(refused.get("code") == "UNAUTHORIZED_PRINCIPAL", f"member add_realm_filter: {refused}")
    listed = iago.call_endpoint(url="realm/linkifiers", method="GET")
    patterns = [l["pattern"] for l in listed.get("linkifiers", [])]
    check(patterns[-1:] == ["#T(?P<id>[0-9]+)"], f"linkifiers: {listed}")
    removed = iago.remove_realm_filter(added.get("id"))
    check(removed.get("result") == "success", f"remove_realm_filter: {removed}")

    # Custom profile fields.
    created = iago.create_realm_profile_field(name="Team", hint="Which team", field_type=1)
    check(created.get("result") == "success" and created.get("id") == 10, f"create field: {created}")
    dup = iago.create_realm_profile_field(name="Team", field_type=1)
    check(dup.get("msg") == "A field with that label already exists.", f"duplicate field: {dup}")
    fields = iago.get_realm_profile_fields()
    check([f["name"] for f in fields.get("custom_fields", [])][-1:] == ["Team"], f"fields: {fields}")
    updated = iago.update_realm_profile_field(field_id=10, hint="Your team")
    check(updated.get("result") == "success", f"update field: {updated}")
    order = list(range(10, 0, -1))
    check(iago.reorder_realm_profile_fields(order=order).get("result") == "success", "reorder")
    data = hamlet.call_endpoint(
        url="users/me/profile_data", method="PATCH", request={"data": [{"id": 10, "value": "Blue"}]}
    )
    check(data.get("result") == "success", f"profile data: {data}")
    me = hamlet.get_profile()
    check(
        me.get("profile_data", {}).get("10") == {"value": "Blue", "rendered_value": "<p>Blue</p>"},
        f"profile_data: {me}",
    )
    check(iago.remove_realm_profile_field(field_id=10).get("result") == "success", "remove field")

    # Uploads: the client names the multipart field after the file's path.
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(b"uploaded by the python client\n")
        path = f.name
    try:
        with open(path, "rb") as fp:
            up = hamlet.upload_file(fp)
    finally:
        os.unlink(path)
    check(up.get("result") == "success", f"upload_file: {up}")
    url = up.get("url", "")
    check(up.get("uri") == url and url.startswith("/user_uploads/2/"), f"upload url: {up}")
    check(up.get("filename") == os.path.basename(path), f"upload filename: {up}")
    status, body = get_file(site, url, "hamlet@zulip.com", hamlet_key)
    check(status == 200 and body == b"uploaded by the python client\n", f"download: {status} {body!r}")
    status, _ = get_file(site, url, "iago@zulip.com", iago_key)
    check(status == 403, f"someone else's download: {status}")
    attachments = hamlet.get_attachments()
    check(len(attachments.get("attachments", [])) == 1, f"get_attachments: {attachments}")
    attachment_id = attachments["attachments"][0]["id"] if attachments.get("attachments") else 0
    gone = hamlet.call_endpoint(url=f"attachments/{attachment_id}", method="DELETE")
    check(gone.get("result") == "success", f"delete attachment: {gone}")
    status, _ = get_file(site, url, "hamlet@zulip.com", hamlet_key)
    check(status == 404, f"deleted download: {status}")

    if FAILURES:
        print(f"python client: {len(FAILURES)} check(s) failed")
        return 1
    print("python client (linkifiers, profile fields, uploads): ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

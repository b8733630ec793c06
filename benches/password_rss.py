#!/usr/bin/env python3
"""RSS of a release hearth server under bursts of argon2 work.

Usage: python3 benches/password_rss.py [BINARY] [PORT] [USERS]

Starts BINARY (default target/release/hearth) with a fresh data folder, creates USERS
(default 300) users with passwords (4 requests at a time), restarts it on the same folder, then
sends 100 wrong-password `POST /fetch_api_key` (50 at a time). Prints VmRSS (from
/proc/PID/status) at each step, 10 s after each burst, and the answers' statuses.
Last, the median time of 21 sequential failed `POST /fetch_api_key` of each kind
(wrong password, unknown user, user without a password).
"""
import collections
import concurrent.futures as cf
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/hearth"
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 9877
USERS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
URL = f"http://127.0.0.1:{PORT}"
PASSWORD = "correct horse battery staple 9"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def post(path, form, auth=None):
    req = urllib.request.Request(URL + path, data=urllib.parse.urlencode(form).encode())
    if auth:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def start(data):
    p = subprocess.Popen(
        [BINARY, "serve", "--dev", "--data", data, "--bind", f"127.0.0.1:{PORT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(URL + "/api/v1/server_settings", timeout=1)
            return p
        except Exception:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def stop(p):
    p.terminate()
    p.wait(timeout=60)


def burst(n, parallel, call):
    t = time.monotonic()
    with cf.ThreadPoolExecutor(parallel) as pool:
        statuses = collections.Counter(s for s, _ in pool.map(call, range(n)))
    return time.monotonic() - t, dict(statuses)


def main():
    import base64
    data = tempfile.mkdtemp()
    p = start(data)
    print(f"fresh start: {rss_mib(p.pid):.1f} MiB")
    _, body = post("/api/v1/dev_fetch_api_key", {"username": "iago@zulip.com"})
    auth = "Basic " + base64.b64encode(f"iago@zulip.com:{body['api_key']}".encode()).decode()

    def create(i):
        return post("/api/v1/users", {"email": f"u{i}@zulip.com", "password": PASSWORD,
                                      "full_name": f"User {i}"}, auth)

    secs, statuses = burst(USERS, 4, create)
    print(f"after {USERS} POST /users (4 at a time): {rss_mib(p.pid):.1f} MiB "
          f"in {secs:.2f} s {statuses}")
    time.sleep(10)
    print(f"  10 s later: {rss_mib(p.pid):.1f} MiB")
    stop(p)

    p = start(data)
    print(f"after a restart: {rss_mib(p.pid):.1f} MiB")

    def wrong(i):
        return post("/api/v1/fetch_api_key", {"username": f"u{i % USERS}@zulip.com",
                                              "password": "wrong password"})

    secs, statuses = burst(100, 50, wrong)
    print(f"after 100 wrong-password fetch_api_key (50 at a time): {rss_mib(p.pid):.1f} MiB "
          f"in {secs:.2f} s {statuses}")
    time.sleep(10)
    print(f"  10 s later: {rss_mib(p.pid):.1f} MiB")

    for kind, username, password in [
        ("wrong password", "u1@zulip.com", "wrong password"),
        ("unknown user", "nobody@zulip.com", PASSWORD),
        ("user without a password", "hamlet@zulip.com", PASSWORD),
    ]:
        times = []
        for _ in range(21):
            t = time.monotonic()
            status, _ = post("/api/v1/fetch_api_key", {"username": username,
                                                       "password": password})
            times.append(time.monotonic() - t)
        print(f"fetch_api_key, {kind}: {status}, median "
              f"{statistics.median(times) * 1000:.1f} ms")
    stop(p)


main()

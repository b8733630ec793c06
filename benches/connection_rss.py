#!/usr/bin/env python3
"""What one held user costs a node: RSS against connections held, and `/register`.

    benches/connection_rss.py --hearth target/release/hearth --data DIR \
        --credentials DIR/load-users.tsv --host r0.load.test --users 9000

DIR is a node's data folder with a realm of at least --users members made by
`hearth realm populate` (e.g. a node folder `benches/cluster_run.sh` left). The script
starts `hearth serve` on it, and measures the node's RSS (VmRSS) after each step:

1. connections opened and left idle (nothing sent), in four equal steps;
2. one small request (`GET /api/v1/server_settings`) answered on each, kept alive;
3. those connections closed;
4. --users event queues registered over one connection (`POST /register`, as the load
   driver registers them), no poll held;
5. a long-poll (`GET /events`) parked on each queue, each on a connection of its own,
   in four equal steps.

Then `POST /register` as a web client asks for it (every event type, with and
without gzip): its size and time, five times each. Each user's connection is a
socket: one process may hold at most `ulimit -n` of them.

`--ceiling HEARTH_TOOLS` measures the same steps (1 to 5) on the load driver's
ceiling instead (`hearth-tools ceiling`: a minimal actix-web server whose
`POST /register` answers a queue and whose `GET /events` parks for 50 s), which
tells what actix-web itself keeps per connection and per parked request.
"""

import argparse
import base64
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.parse


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def settle(pid, secs=3.0):
    time.sleep(secs)
    return rss_kib(pid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hearth")
    ap.add_argument("--data")
    ap.add_argument("--credentials", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--users", type=int, default=9000)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--ceiling", metavar="HEARTH_TOOLS")
    ap.add_argument("--polls-only", action="store_true",
                    help="skip steps 1-3 (bare connections), so that the polls' figures "
                         "are not lowered by memory the closed connections left behind")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    creds = []
    with open(args.credentials) as f:
        for line in f:
            email, key = line.rstrip("\n").split("\t")[:2]
            creds.append("Basic " + base64.b64encode(f"{email}:{key}".encode()).decode())
    creds = creds[: args.users]
    n = len(creds)

    port, admin = free_port(), free_port()
    env = dict(os.environ, RUST_LOG="warn", HEARTH_METRICS_BIND="off")
    if args.ceiling:
        command = [args.ceiling, "ceiling", "--bind", f"127.0.0.1:{port}"]
    else:
        command = [args.hearth, "serve", "--data", args.data, "--bind", f"127.0.0.1:{port}",
                   "--admin-bind", f"127.0.0.1:{admin}"]
    node = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard)))
    try:
        run(node.pid, port, args.host, creds, n, args.steps, bool(args.ceiling),
            args.polls_only)
    finally:
        node.terminate()
        node.wait()


def request(sock, method, path, host, auth=None, body=None):
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if auth:
        head += f"Authorization: {auth}\r\n"
    if body is not None:
        head += ("Content-Type: application/x-www-form-urlencoded\r\n"
                 f"Content-Length: {len(body)}\r\n")
    sock.sendall((head + "\r\n").encode() + (body or b""))


def read_answer(sock):
    """Reads one HTTP/1.1 answer with a Content-Length (hearth's small answers)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        rest += sock.recv(65536)
    return head, rest[:length]


def run(pid, port, host, creds, n, steps, ceiling, polls_only):
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/api/v1/server_settings", headers={"Host": host})
            if c.getresponse().status == 200:
                c.close()
                break
        except OSError:
            pass
        time.sleep(0.2)
    fresh = settle(pid)
    print(f"fresh: RSS {fresh / 1024:.1f} MiB ({n} users to hold)")

    # 1-3: bare connections.
    socks = []
    base = fresh
    for step in range(1, 0 if polls_only else steps + 1):
        target = n * step // steps
        while len(socks) < target:
            s = socket.create_connection(("127.0.0.1", port))
            socks.append(s)
        r = settle(pid)
        print(f"  {len(socks):6d} idle connections: RSS {r / 1024:.1f} MiB, "
              f"{(r - base) / len(socks) * 1024:.0f} B per connection")
    closed = fresh
    if not polls_only:
        idle = r
        for s in socks:
            request(s, "GET", "/api/v1/server_settings", host)
        for s in socks:
            read_answer(s)
        r = settle(pid)
        print(f"  {len(socks):6d} connections, one request answered on each: RSS {r / 1024:.1f} MiB, "
              f"{(r - base) / len(socks) * 1024:.0f} B per connection "
              f"({(r - idle) / len(socks) * 1024:.0f} B more than idle)")
        for s in socks:
            s.close()
        socks = []
        closed = settle(pid, 5.0)
        print(f"  closed: RSS {closed / 1024:.1f} MiB")

    # 4: queues.
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    form = urllib.parse.urlencode({
        "event_types": '["message","presence"]',
        "fetch_event_types": '["message"]',
        "slim_presence": "true",
    })
    queues = []
    t0 = time.time()
    for auth in creds:
        c.request("POST", "/api/v1/register", body=form, headers={
            "Host": host, "Authorization": auth,
            "Content-Type": "application/x-www-form-urlencoded"})
        v = json.loads(c.getresponse().read())
        queues.append((v["queue_id"], v["last_event_id"]))
    reg_s = time.time() - t0
    c.close()
    q = settle(pid)
    print(f"  {n} queues registered ({reg_s:.1f} s, one connection), no poll held: RSS {q / 1024:.1f} MiB, "
          f"{(q - closed) / n * 1024:.0f} B per queue")

    # 5: parked polls.
    base = q
    for step in range(1, steps + 1):
        target = n * step // steps
        while len(socks) < target:
            i = len(socks)
            s = socket.create_connection(("127.0.0.1", port))
            qid, last = queues[i]
            path = ("/api/v1/events?" + urllib.parse.urlencode(
                {"queue_id": qid, "last_event_id": last, "dont_block": "false"}))
            request(s, "GET", path, host, auth=creds[i])
            socks.append(s)
        previous = (r, prev_n) if step > 1 else (base, 0)
        r = settle(pid)
        prev_n = len(socks)
        print(f"  {len(socks):6d} parked long-polls (a connection each): RSS {r / 1024:.1f} MiB, "
              f"{(r - base) / len(socks) * 1024:.0f} B per poll over the queues "
              f"({(r - previous[0]) / (len(socks) - previous[1]) * 1024:.0f} B each in this step), "
              f"{(r - closed) / len(socks) * 1024:.0f} B per held user (queue + connection + poll)")
    for s in socks:
        s.close()
    socks = []
    after = settle(pid, 5.0)
    print(f"  polls' connections closed: RSS {after / 1024:.1f} MiB")
    if ceiling:
        return

    # 6: /register as a web client asks for it.
    full = urllib.parse.urlencode({
        "apply_markdown": "true", "client_gravatar": "true", "slim_presence": "true",
        "include_subscribers": "false",
    })
    for gz in (False, True):
        sizes, times = [], []
        for i in range(5):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            headers = {"Host": host, "Authorization": creds[i],
                       "Content-Type": "application/x-www-form-urlencoded"}
            if gz:
                headers["Accept-Encoding"] = "gzip"
            t0 = time.perf_counter()
            c.request("POST", "/api/v1/register", body=full, headers=headers)
            resp = c.getresponse()
            body = resp.read()
            times.append((time.perf_counter() - t0) * 1000)
            sizes.append(len(body))
            if i == 0 and not gz:
                keys = json.loads(body)
                big = sorted(((len(json.dumps(v)), k) for k, v in keys.items()), reverse=True)[:4]
                print("  /register's largest parts: " +
                      ", ".join(f"{k} {size / 1024:.0f} KiB" for size, k in big))
            c.close()
        times.sort()
        print(f"  POST /register (every event type{', gzip' if gz else ''}): "
              f"{sizes[0] / 1024:.1f} KiB, {times[0]:.1f} / {times[2]:.1f} / {times[-1]:.1f} ms "
              f"(min / median / max of 5)")
    # A ping as the web client's first (no last_update_id: the whole realm's presence).
    for gz in (False, True):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Host": host, "Authorization": creds[0],
                   "Content-Type": "application/x-www-form-urlencoded"}
        if gz:
            headers["Accept-Encoding"] = "gzip"
        c.request("POST", "/api/v1/users/me/presence", body=urllib.parse.urlencode(
            {"status": "active", "new_user_input": "true", "slim_presence": "true"}),
            headers=headers)
        body = c.getresponse().read()
        print(f"  presence ping, whole realm{' (gzip)' if gz else ''}: {len(body) / 1024:.1f} KiB")
        c.close()


if __name__ == "__main__":
    sys.exit(main())

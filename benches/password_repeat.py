#!/usr/bin/env python3
"""Does argon2 memory return between bursts? Usage: python3 benches/password_repeat.py BINARY

Starts BINARY (`serve --dev`, fresh data folder, port 9881), then five times: 100
`POST /fetch_api_key` for a user without a password (50 at a time), VmRSS right after
and 7 s later.
"""
import sys, time, json, subprocess, tempfile, urllib.request, urllib.parse
import concurrent.futures as cf
B=sys.argv[1]; PORT=9881; URL=f"http://127.0.0.1:{PORT}"
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])/1024
p=subprocess.Popen([B,"serve","--dev","--data",tempfile.mkdtemp(),"--bind",f"127.0.0.1:{PORT}"],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
for _ in range(100):
    try: urllib.request.urlopen(URL+"/api/v1/server_settings"); break
    except Exception: time.sleep(0.05)
def post(i):
    r=urllib.request.Request(URL+"/api/v1/fetch_api_key",data=urllib.parse.urlencode({"username":"hamlet@zulip.com","password":"x"}).encode())
    try: urllib.request.urlopen(r); return 200
    except urllib.error.HTTPError as e: return e.code
print(f"start {rss(p.pid):.1f}")
for k in range(5):
    with cf.ThreadPoolExecutor(50) as ex: st=list(ex.map(post, range(100)))
    a=rss(p.pid); time.sleep(7)
    print(f"burst {k+1}: {a:.1f} MiB after, {rss(p.pid):.1f} MiB 7 s later")
p.terminate(); p.wait()

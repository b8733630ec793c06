#!/usr/bin/env bash
# Many people online across nodes: REALMS realms on NODES hearth nodes behind one nginx
# (the configuration `hearth cluster nginx` writes), each realm driven through the
# router by its host name (presence: a parked long-poll and a ping at the real 60 s
# period per user) by `hearth load` processes that each drive as many realms as their
# open files allow (`--realm HOST=FILE`, DRIVER_USERS users a process), each from
# loopback source addresses of its own, their reports merged into one (`hearth load --merge`),
# with the ramp-up time, RSS per user of each node, nginx's and the drivers' RSS, and
# CPU per request at the router and at the nodes.
#
#   SPREAD_POLLS=60s benches/cluster_run.sh      # 100 100 users: 110 realms x 910, 11 nodes
#   SPREAD_POLLS=60s NODES=11 REALMS=1000 USERS=100 benches/cluster_run.sh   # 100 000 in realms of 100
#   NODES=2 REALMS=2 USERS=500 DURATION=20s WARMUP=5s benches/cluster_run.sh   # a small try
#
# The realm size is a parameter of the run, not a property of the cluster: every
# presence ping answers the entries that moved since the client's previous ping, at the
# real period most of its realm (~50 bytes each as text), so the bytes a run moves grow
# with users x realm size. 110 realms of 910 make 100 100 users at ~49 KiB of text per
# ping (~2.3 KiB gzipped); 11 realms of 9 100 would be ten times that
# (benches/RESULTS.md).
#
# Settings (environment): NODES, REALMS (placed on the nodes in turn), USERS (per
# realm), DURATION and WARMUP (of each driver), SPEEDUP (divides the 60 s ping period;
# 1 is the real period), SPREAD_POLLS (e.g. `60s`: each driver parks its users' first
# long-polls over that time, so that their heartbeats, due a minute after parking, are
# spread over the minute; default: all at once, as after a restart), NO_GZIP (1: the
# drivers send no `Accept-Encoding: gzip`; default: they ask for gzip, as browsers do,
# and inflate the answers), MESSAGES_PER_MINUTE (channel messages a minute in each realm,
# to #general, which every simulated user is subscribed to, by its users in turn: each
# answers the parked polls of the whole realm; the first at a random point of the first
# period, so realms spread theirs; default 0.1, one every 10 minutes, so a
# realm of 100 sends as many messages as it has members every 1 000 minutes; 0: none), HEARTH and
# HEARTH_TOOLS (the binaries; default the release build), WORK (a folder for the
# nodes' data, nginx's prefix and the reports; default a new temporary one), NGINX
# (default: on the PATH or /usr/sbin/nginx).
#
# CPU per request is the router's and the nodes' CPU time over the requests nginx
# logged (every request: pings, long-polls' answers, registrations), both over the
# whole run and over the measured part (from the moment every driver has been past its
# set-up for WARMUP to the moment the first driver ends), where the cores used by the
# router, the nodes and the drivers and the machine's busy share (and the share of it
# that niced processes outside the run took) say where the machine's time went.
#
# One process here may hold at most 20 000 open files (a hard limit): a node holds one
# connection per user of its realms (the parked poll, from nginx) and the few nginx
# keeps alive for everything else; a driver one per user and a pool for the pings.
# Keep USERS x realms per node under ~9 900 so that a node stays well inside the
# limit while polls are answered and sent again. A driver holds a connection per user
# and a few for its pings: DRIVER_USERS (default 9 000) bounds the users of one driver
# process, whose realms are as many as fit (at least one), so 100 000 users take a
# dozen processes whatever the realms' size. One loopback source address reaches the
# router's port with about 28 000 connections: each driver uses two addresses of its
# own (127.0.<driver+1>.1 and .2), and nginx's connections to the nodes leave from four
# (127.0.100.1–4, the placement's `source_addresses`), which the nodes trust as proxies.
#
# A driver that has not ended DRIVER_GRACE seconds (default 300) after its expected
# end (its set-up, WARMUP and DURATION) is stopped and named; its report is then
# missing from the merged one, which says so. A node that does not stop within 15 s
# of the end is killed.

set -euo pipefail

NODES=${NODES:-11}
REALMS=${REALMS:-110}
USERS=${USERS:-910}
DURATION=${DURATION:-120s}
DRIVER_GRACE=${DRIVER_GRACE:-300}
WARMUP=${WARMUP:-60s}
SPEEDUP=${SPEEDUP:-1}
SPREAD_POLLS=${SPREAD_POLLS:-}
NO_GZIP=${NO_GZIP:-}
MESSAGES_PER_MINUTE=${MESSAGES_PER_MINUTE:-0.1}
DRIVER_USERS=${DRIVER_USERS:-9000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HEARTH=${HEARTH:-$ROOT/target/release/hearth}
HEARTH_TOOLS=${HEARTH_TOOLS:-$(dirname "$HEARTH")/hearth-tools}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
WORK=${WORK:-$(mktemp -d)}
DOMAIN=load.test
PASSWORD="a long and unguessable passphrase"

[ "$REALMS" -ge "$NODES" ] || { echo "REALMS must be at least NODES (each node serves a realm)" >&2; exit 2; }
for bin in "$HEARTH" "$HEARTH_TOOLS" "$NGINX"; do
  [ -x "$bin" ] || { echo "missing: $bin (cargo build --release; apt-get install nginx-light)" >&2; exit 2; }
done
ulimit -n "$(ulimit -Hn)"
echo "work folder: $WORK; $REALMS realms x $USERS users on $NODES nodes; open files $(ulimit -n)"
echo "started $(date -u '+%F %T') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# N distinct free ports: every socket is held until all are drawn (a port drawn and let
# go at once may be handed out again for the next draw).
free_ports() { python3 -c 'import socket,sys; s=[socket.socket() for _ in range(int(sys.argv[1]))]; [x.bind(("127.0.0.1",0)) for x in s]; print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"; }
# One awk over every pid's file (a hundred drivers are sampled every 2 s: a process
# per pid would cost a share of a core of its own); a process that is gone counts 0.
proc_files() { local pid; for pid in "$@"; do echo "/proc/$pid/$FILE"; done; }
cpu_ticks() { # utime + stime of the given pids
  [ $# -gt 0 ] || { echo 0; return; }
  FILE=stat proc_files "$@" | { xargs cat 2>/dev/null || true; } | awk '{sub(/.*\) /, ""); t += $12 + $13} END {print t + 0}'
}
rss_kib() { # VmRSS of the given pids, summed
  [ $# -gt 0 ] || { echo 0; return; }
  FILE=status proc_files "$@" | { xargs cat 2>/dev/null || true; } | awk '/^VmRSS/ {t += $2} END {print t + 0}'
}
# The machine's busy, total and niced jiffies (all cores), from /proc/stat.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8, $3}' /proc/stat; }
# Whether the time now is past `$1` (seconds since the epoch; awk, not python, in the
# sampling loop: python's start-up costs tens of ms of CPU each time).
past() { awk -v now="$(date +%s.%N)" -v t="$1" 'BEGIN { exit !(now >= t) }'; }
logged() { wc -l <"$WORK/nginx/access.log" 2>/dev/null || echo 0; }
# The access log's size: the requests between two samples are the lines between their
# offsets, counted once at the end (counting the whole log every 2 s would read
# hundreds of MB a minute at 100 000 users).
logged_bytes() { stat -c %s "$WORK/nginx/access.log" 2>/dev/null || echo 0; }
any_alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
all_alive() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null || return 1; done
  return 0
}

PIDS=()
cleanup() {
  local pid i
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < 30; i++)); do
    any_alive "${PIDS[@]}" || break
    sleep 0.5
  done
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "process $pid did not stop within 15 s of TERM: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  wait 2>/dev/null || true
}
trap cleanup EXIT

read -r -a PORTS <<<"$(free_ports $((2 * NODES + 1)))"
ROUTER_PORT=${PORTS[2 * NODES]}
declare -a NODE_HTTP NODE_ADMIN REALM_NODE

# 1. The realms and their simulated users, on the stopped nodes' folders (one loop a
# node, the nodes' at once: a thousand realms are a thousand pairs of processes).
for ((n = 0; n < NODES; n++)); do
  mkdir -p "$WORK/node$n"
  NODE_HTTP[n]=${PORTS[2 * n]}
  NODE_ADMIN[n]=${PORTS[2 * n + 1]}
done
mkdir -p "$WORK/credentials" "$WORK/reports"
for ((r = 0; r < REALMS; r++)); do REALM_NODE[r]=$((r % NODES)); done
SETUP_PIDS=()
for ((n = 0; n < NODES; n++)); do
  (
    mkdir -p "$WORK/setup/n$n" && cd "$WORK/setup/n$n"   # where `realm create` writes its zuliprc
    for ((r = n; r < REALMS; r += NODES)); do
      "$HEARTH" realm create --subdomain "r$r" --name "Realm r$r" \
        --owner-email "owner@r$r.$DOMAIN" --owner-password "$PASSWORD" \
        --data "$WORK/node$n" --url "http://r$r.$DOMAIN:$ROUTER_PORT" >/dev/null 2>>"$WORK/setup$n.log"
      "$HEARTH" realm populate --data "$WORK/node$n" --subdomain "r$r" --users "$USERS" --subscribe general >/dev/null 2>>"$WORK/setup$n.log"
      cp "$WORK/node$n/load-users.tsv" "$WORK/credentials/r$r.tsv"
    done
  ) &
  SETUP_PIDS+=($!)
done
for pid in "${SETUP_PIDS[@]}"; do wait "$pid" || { echo "realm set-up failed (see $WORK/setup*.log)" >&2; exit 1; }; done
echo "realms set up $(date -u '+%T') UTC"

# 2. The router: placement, configuration, nginx.
ROUTER_SOURCES=(127.0.100.1 127.0.100.2 127.0.100.3 127.0.100.4)
{
  echo "[router]"
  echo "listen = \"127.0.0.1:$ROUTER_PORT\""
  echo "domain = \"$DOMAIN\""
  echo "clients = $((REALMS * USERS))"
  echo "source_addresses = [$(printf '"%s", ' "${ROUTER_SOURCES[@]}" | sed 's/, $//')]"
  for ((n = 0; n < NODES; n++)); do
    echo "[nodes.n$n]"
    echo "http = \"127.0.0.1:${NODE_HTTP[n]}\""
    echo "admin = \"127.0.0.1:${NODE_ADMIN[n]}\""
  done
  echo "[realms]"
  for ((r = 0; r < REALMS; r++)); do echo "r$r = \"n${REALM_NODE[r]}\""; done
} >"$WORK/placement.toml"
mkdir -p "$WORK/nginx/logs"
# nginx's workers (`nobody` when the master runs as root) read its folders.
chmod 755 "$WORK" "$WORK/nginx"
"$HEARTH" cluster nginx --placement "$WORK/placement.toml" >"$WORK/nginx.conf"
grep -E '^worker_(processes|rlimit_nofile)|worker_connections' "$WORK/nginx.conf" | sed 's/^/  nginx: /'
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;' &
NGINX_PID=$!
PIDS+=("$NGINX_PID")

# 3. The nodes.
declare -a NODE_PID
for ((n = 0; n < NODES; n++)); do
  RUST_LOG=${NODE_LOG:-warn} HEARTH_METRICS_BIND=off "$HEARTH" serve --data "$WORK/node$n" \
    --bind "127.0.0.1:${NODE_HTTP[n]}" --admin-bind "127.0.0.1:${NODE_ADMIN[n]}" \
    --trusted-proxy 127.0.100.0/24 >"$WORK/node$n.log" 2>&1 &
  NODE_PID[n]=$!
  PIDS+=("${NODE_PID[n]}")
done
# Realm r<n> lives on node n (realms are placed in turn).
for ((n = 0; n < NODES; n++)); do
  until curl -sf "http://127.0.0.1:${NODE_HTTP[n]}/api/v1/server_settings" -H "Host: r$n.$DOMAIN" >/dev/null; do sleep 0.2; done
done
until curl -sf "http://127.0.0.1:$ROUTER_PORT/api/v1/server_settings" -H "Host: r0.$DOMAIN" >/dev/null; do sleep 0.2; done
NODE_RSS_FRESH=()
for ((n = 0; n < NODES; n++)); do NODE_RSS_FRESH[n]=$(rss_kib "${NODE_PID[n]}"); done
NGINX_PIDS=("$NGINX_PID" $(pgrep -P "$NGINX_PID" || true))

# 4. The drivers, each of as many realms as DRIVER_USERS allows, through the router by
# the realms' host names.
PER_DRIVER=$((DRIVER_USERS / USERS))
[ "$PER_DRIVER" -ge 1 ] || PER_DRIVER=1
DRIVERS=$(((REALMS + PER_DRIVER - 1) / PER_DRIVER))
[ "$DRIVERS" -le 250 ] || { echo "$DRIVERS drivers: more than the 250 source-address blocks" >&2; exit 2; }
echo "$DRIVERS driver processes, up to $PER_DRIVER realms ($((PER_DRIVER * USERS)) users) each"
ROUTER_CPU0=$(cpu_ticks "${NGINX_PIDS[@]}")
NODES_CPU0=$(cpu_ticks "${NODE_PID[@]}")
LOGGED0=$(logged)
STARTED=$(date +%s.%N)
SPREAD_ARGS=()
[ -n "$SPREAD_POLLS" ] && SPREAD_ARGS=(--spread-polls "$SPREAD_POLLS")
[ -n "$NO_GZIP" ] && SPREAD_ARGS+=(--no-gzip)
declare -a DRIVER_PID
for ((d = 0; d < DRIVERS; d++)); do
  REALM_ARGS=()
  for ((r = d * PER_DRIVER; r < (d + 1) * PER_DRIVER && r < REALMS; r++)); do
    REALM_ARGS+=(--realm "r$r.$DOMAIN=$WORK/credentials/r$r.tsv")
  done
  RUST_LOG=${DRIVER_LOG:-info} "$HEARTH_TOOLS" load --target "http://127.0.0.1:$ROUTER_PORT" "${REALM_ARGS[@]}" \
    --users "$USERS" --scenario presence \
    --speedup "$SPEEDUP" --duration "$DURATION" --warmup "$WARMUP" \
    --source-addrs "127.0.$((d + 1)).1,127.0.$((d + 1)).2" --driver-threads 1 "${SPREAD_ARGS[@]}" \
    --messages-per-minute "$MESSAGES_PER_MINUTE" --message-channel general \
    --json "$WORK/reports/d$d.json" >"$WORK/reports/d$d.txt" 2>&1 &
  DRIVER_PID[d]=$!
done

# RSS peaks (and the nodes' open files at their peaks) while the drivers run, sampled
# every 2 s; CPU, the machine's busy time and nginx's logged requests at the start and
# the end of the measured part.
# The RSS peaks are kept by one Python process reading /proc itself: the shell tools
# it replaces (three processes a pid every 2 s) took ~4 % of the machine at 100 000.
python3 - "$WORK/peaks.txt" "$WORK/peaks.stop" "${NODE_PID[*]}" "${NGINX_PIDS[*]}" "${DRIVER_PID[*]}" <<'EOF' &
import os, sys, time
out, stop, nodes, nginx, drivers = sys.argv[1], sys.argv[2], *(a.split() for a in sys.argv[3:])
def rss(pid):  # KiB; 0 for a process that is gone
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(l.split()[1]) for l in f if l.startswith("VmRSS")), 0)
    except OSError:
        return 0
def files(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return "?"
node_peak, node_files, nginx_peak, driver_peak = [0] * len(nodes), ["?"] * len(nodes), 0, 0
while not os.path.exists(stop):
    for i, pid in enumerate(nodes):
        v = rss(pid)
        if v > node_peak[i]:
            node_peak[i], node_files[i] = v, files(pid)
    nginx_peak = max(nginx_peak, sum(map(rss, nginx)))
    driver_peak = max(driver_peak, sum(map(rss, drivers)))
    time.sleep(2)
with open(out, "w") as f:
    print(" ".join(map(str, node_peak)), file=f)
    print(" ".join(map(str, node_files)), file=f)
    print(nginx_peak, driver_peak, file=f)
EOF
PEAKS_PID=$!
PIDS+=("$PEAKS_PID")
RAMPED=""
MEASURE0=""
MEASURE1=""
DURATION_S=$(python3 -c "import re,sys; t=sys.argv[1]; u={'ms':0.001,'s':1,'m':60,'h':3600}; print(sum(float(n)*u[k] for n,k in re.findall(r'([0-9.]+)(ms|s|m|h)', t)))" "$DURATION")
WARMUP_S=$(python3 -c "import re,sys; t=sys.argv[1]; u={'ms':0.001,'s':1,'m':60,'h':3600}; print(sum(float(n)*u[k] for n,k in re.findall(r'([0-9.]+)(ms|s|m|h)', t)))" "$WARMUP")
sample() { # time, router ticks, node ticks, machine busy, total and niced, nginx's access log size, driver ticks
  echo "$(date +%s.%N) $(cpu_ticks "${NGINX_PIDS[@]}") $(cpu_ticks "${NODE_PID[@]}") $(machine_ticks) $(logged_bytes) $(cpu_ticks "${DRIVER_PID[@]}")"
}
while any_alive "${DRIVER_PID[@]}"; do
  # Ramp-up: every realm past its set-up (its users' queues registered).
  if [ -z "$RAMPED" ] && [ "$(cat "$WORK"/reports/d*.txt 2>/dev/null | grep -c 'the warm-up starts')" -ge "$REALMS" ]; then
    RAMPED=$(python3 -c "import time; print(f'{time.time() - $STARTED:.1f}')")
  fi
  # A driver far past its expected end is stopped (its node may have stopped answering).
  if past "$(awk "BEGIN { printf \"%.3f\", $STARTED + ${RAMPED:-600} + $WARMUP_S + $DURATION_S + $DRIVER_GRACE }")"; then
    for ((d = 0; d < DRIVERS; d++)); do
      if kill -0 "${DRIVER_PID[d]}" 2>/dev/null; then
        r=$((d * PER_DRIVER))
        echo "driver d$d (realms from r$r) still running ${DRIVER_GRACE} s after its expected end: stopped" >&2
        curl -s -m 5 -o /dev/null -w "  node n${REALM_NODE[r]} answers /server_settings directly: HTTP %{http_code} in %{time_total} s\n" \
          "http://127.0.0.1:${NODE_HTTP[${REALM_NODE[r]}]}/api/v1/server_settings" -H "Host: r$r.$DOMAIN" >&2 || true
        kill -TERM "${DRIVER_PID[d]}" 2>/dev/null || true
      fi
    done
  fi
  if all_alive "${DRIVER_PID[@]}"; then
    if [ -n "$RAMPED" ] && [ -z "$MEASURE0" ] && past "$(awk "BEGIN { printf \"%.3f\", $STARTED + $RAMPED + $WARMUP_S }")"; then
      MEASURE0=$(sample)
    fi
    [ -n "$MEASURE0" ] && MEASURE1=$(sample)
  fi
  # The timeline: a sample every ~10 s from the drivers' start to their end.
  TICK=$((${TICK:-0} + 1))
  [ $((TICK % 5)) -eq 1 ] && sample >>"$WORK/timeline.txt"
  sleep 2
done
sample >>"$WORK/timeline.txt"
touch "$WORK/peaks.stop"
wait "$PEAKS_PID" || true
{ read -r -a NODE_PEAK; read -r -a NODE_FILES; read -r NGINX_PEAK DRIVER_PEAK; } <"$WORK/peaks.txt" ||
  { echo "no RSS peaks were sampled" >&2; NGINX_PEAK=0; DRIVER_PEAK=0; }
FAILED=0
# A driver that ran to its end but whose own share missed a threshold (a p99 over its
# twenty messages is its slowest one) has written its report: the merged report, over
# every request, judges the run. Any other failure fails it.
DRIVER_VERDICTS=()
for ((d = 0; d < DRIVERS; d++)); do
  if ! wait "${DRIVER_PID[d]}"; then
    if grep -q "thresholds failed" "$WORK/reports/d$d.txt" 2>/dev/null && [ -s "$WORK/reports/d$d.json" ]; then
      DRIVER_VERDICTS+=("  driver d$d over its own share: $(grep -m1 '^FAIL' "$WORK/reports/d$d.txt")")
    else
      FAILED=1
    fi
  fi
done
ENDED=$(date +%s.%N)
ROUTER_CPU1=$(cpu_ticks "${NGINX_PIDS[@]}")
NODES_CPU1=$(cpu_ticks "${NODE_PID[@]}")
LOGGED1=$(logged)
# RSS after the run (every driver deleted its queues at its end), 10 s later.
sleep 10
NODE_RSS_AFTER=()
for ((n = 0; n < NODES; n++)); do NODE_RSS_AFTER[n]=$(rss_kib "${NODE_PID[n]}"); done
echo "ended $(date -u '+%F %T') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$WORK"/reports/d*.txt <<'EOF'
import re, sys
times = [float(m.group(1)) for p in sys.argv[1:]
         for m in re.finditer(r"queues registered in ([0-9.]+) s", open(p, errors="replace").read())]
if times:
    print(f"  realms' set-up (their users' queues registered): {min(times):.1f} to {max(times):.1f} s")
EOF
grep -c 'worker_connections are not enough' "$WORK/nginx/error.log" 2>/dev/null | sed 's/^/  nginx "worker_connections are not enough" lines: /' || true

# 5. One report of them all, and the figures around it.
for ((d = 0; d < DRIVERS; d++)); do
  [ -s "$WORK/reports/d$d.json" ] || echo "driver d$d: no report (it did not end by itself); the merged report leaves its users out" >&2
done
"$HEARTH_TOOLS" load --merge "$WORK"/reports/d*.json --json "$WORK/all.json" --report "$WORK/all.html" || FAILED=1
python3 - "$WORK/all.json" "$ROUTER_CPU0" "$ROUTER_CPU1" "$NODES_CPU0" "$NODES_CPU1" \
  "$STARTED" "$ENDED" "${RAMPED:-unknown}" "$NGINX_PEAK" "$DRIVER_PEAK" "$USERS" \
  "${NODE_RSS_FRESH[*]}" "${NODE_PEAK[*]}" "$NODES" "$REALMS" "$LOGGED0" "$LOGGED1" \
  "${MEASURE0:-}" "${MEASURE1:-}" "${NODE_RSS_AFTER[*]}" "${NODE_FILES[*]}" \
  "$WORK/nginx/access.log" <<'EOF'
import json, sys
(path, r0, r1, n0, n1, t0, t1, ramp, nginx_kib, driver_kib, users,
 fresh, peak, nodes, realms, logged0, logged1, m0, m1, after, files, access) = sys.argv[1:]
report = json.load(open(path))
tick_ms = 10.0  # USER_HZ
realms, nodes, users = int(realms), int(nodes), int(users)
per_node = [sum(1 for r in range(realms) if r % nodes == n) * users for n in range(nodes)]
print(f"users {report['users']} in {realms} realms on {nodes} nodes; wall {float(t1) - float(t0):.0f} s; "
      f"every driver measuring after {ramp} s")
print(f"requests {report['total_requests']}, errors {report['total_errors']} "
      f"({report['error_rate_percent']:.4f} %), worst p99 {report['worst_p99_ms']:.1f} ms, "
      f"{'PASS' if report['passed'] else 'FAIL: ' + '; '.join(report['failures'])}")
for op in report["ops"]:
    print(f"  {op['op']}{' [held]' if op['held'] else ''}: {op['count']} at {op['req_per_s']:.0f}/s, "
          f"mean {op['mean_ms']:.1f} ms, p50 {op['p50_ms']:.1f}, p99 {op['p99_ms']:.1f}, max {op['max_ms']:.1f}")
# Healthy as Mattermost's load tests judge it: every answered operation (not the
# parked polls) with a mean under 100 ms and a p99 under 2 s, and under 0.025 % errors
# (the drivers' own verdict checks only the p99 and the errors).
unhealthy = [f"{op['op']} mean {op['mean_ms']:.0f} ms" for op in report["ops"]
             if not op["held"] and op["mean_ms"] >= 100]
unhealthy += [f"{op['op']} p99 {op['p99_ms']:.0f} ms" for op in report["ops"]
              if not op["held"] and op["p99_ms"] >= 2000]
if report["error_rate_percent"] >= 0.025:
    unhealthy.append(f"errors {report['error_rate_percent']:.4f} %")
print("healthy (mean < 100 ms, p99 < 2 s, errors < 0.025 %): "
      + ("yes" if not unhealthy else "NO: " + "; ".join(unhealthy)))
routed = max(int(logged1) - int(logged0), 1)
wall = float(t1) - float(t0)
print(f"whole run: {routed} requests through nginx ({routed / wall:.0f}/s); CPU per request: "
      f"router {(int(r1) - int(r0)) * tick_ms / routed:.3f} ms, "
      f"nodes {(int(n1) - int(n0)) * tick_ms / routed:.3f} ms")
if m0 and m1 and m0 != m1:
    a, b = [list(map(float, m.split())) for m in (m0, m1)]
    secs = b[0] - a[0]
    # The measured part of the access log, read once: counted here, timed below.
    with open(access, "rb") as f:
        f.seek(int(a[6]))
        measured_log = f.read(int(b[6] - a[6]))
    routed_m = max(measured_log.count(b"\n"), 1)
    cores = __import__("os").cpu_count() or 1
    print(f"measured part ({secs:.0f} s): {routed_m:.0f} requests through nginx ({routed_m / secs:.0f}/s); "
          f"CPU per request: router {(b[1] - a[1]) * tick_ms / routed_m:.3f} ms, "
          f"nodes {(b[2] - a[2]) * tick_ms / routed_m:.3f} ms; "
          f"drivers {(b[7] - a[7]) * tick_ms / routed_m:.3f} ms; "
          f"router {(b[1] - a[1]) / 100 / secs:.2f} cores, nodes {(b[2] - a[2]) / 100 / secs:.2f} cores, "
          f"drivers {(b[7] - a[7]) / 100 / secs:.2f} cores, "
          f"machine busy {100 * (b[3] - a[3]) / max(b[4] - a[4], 1):.0f} % of {cores} cores "
          f"(niced processes {100 * (b[5] - a[5]) / max(b[4] - a[4], 1):.0f} %)")
else:
    print("measured part: too short to sample (under 2 s between the samples)")
goal_ok = True
for n, (f, p, u, af, fd) in enumerate(zip(fresh.split(), peak.split(), per_node, after.split(),
                                          (files.split() + ["?"] * nodes)[:nodes])):
    f, p, af = int(f), int(p), int(af)
    ok = af <= 2 * f + 64 * 1024
    goal_ok &= ok
    print(f"  node {n}: RSS fresh {f / 1024:.1f} MiB, peak {p / 1024:.1f} MiB "
          f"({fd} open files then), {(p - f) / max(u, 1):.1f} KiB per user ({u} users); "
          f"10 s after the run {af / 1024:.1f} MiB ({'within' if ok else 'OVER'} 2 x fresh + 64 MiB)")
print(f"RSS after the run: {'every node within' if goal_ok else 'some node over'} 2 x fresh + 64 MiB")
# What nginx passed, by operation: count and mean answer size.
ops = {}
try:
    with open(access, errors="replace") as f:
        for line in f:
            try:
                req = line.split('"')[1]
                status_bytes = line.split('"')[2].split()
                method, target = req.split()[:2]
                path = target.split("?")[0]
                size = int(status_bytes[1])
            except (IndexError, ValueError):
                continue
            c = ops.setdefault(f"{method} {path}", [0, 0])
            c[0] += 1
            c[1] += size
except OSError:
    pass
for op, (count, size) in sorted(ops.items(), key=lambda kv: -kv[1][0]):
    print(f"  nginx passed {op}: {count}, mean answer {size / count / 1024:.1f} KiB")
# Where an answered request's time went over the measured part: its whole time at the
# router (from its first byte read to its last written) against its node's answer
# time. A tail at the router alone is a wait for a core or in nginx, not in a node.
def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000 if xs else float("nan")
if m0 and m1 and m0 != m1:
    timed = {}
    for line in measured_log.decode(errors="replace").splitlines():
        parts = line.split('"')
        try:
            method, target = parts[1].split()[:2]
            router_s, node_s = parts[-1].split()[:2]
            t = timed.setdefault(f"{method} {target.split('?')[0]}", ([], []))
            t[0].append(float(router_s))
            t[1].append(float(node_s))
        except (IndexError, ValueError):
            continue
    for op, (router, node) in sorted(timed.items(), key=lambda kv: -len(kv[1][0])):
        if op.endswith("/events") and op.startswith("GET"):
            continue  # parked: its time is the wait for an event
        router.sort()
        node.sort()
        print(f"  measured part, {op} ({len(router)}): at the router mean "
              f"{1000 * sum(router) / len(router):.1f} ms, p50 {pct(router, .5):.1f}, "
              f"p99 {pct(router, .99):.1f}; at its node mean {1000 * sum(node) / len(node):.1f} ms, "
              f"p50 {pct(node, .5):.1f}, p99 {pct(node, .99):.1f}")
total = max(report["users"], 1)
print(f"nginx peak RSS {int(nginx_kib) / 1024:.1f} MiB ({int(nginx_kib) / total:.2f} KiB per user); "
      f"drivers' peak RSS {int(driver_kib) / 1024:.1f} MiB ({int(driver_kib) / total:.2f} KiB per user)")
EOF
# Where the run's time went, ~10 s at a time: cores of the router, the nodes and the
# drivers, the machine's busy share, and the requests nginx logged (its access log read
# once, here, between the samples' offsets).
python3 - "$WORK/timeline.txt" "$WORK/nginx/access.log" "$(getconf CLK_TCK)" "$STARTED" >"$WORK/timeline.tsv" <<'EOF' || true
import sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 8]
hz, started = float(sys.argv[3]), float(sys.argv[4])
with open(sys.argv[2], "rb") as f:
    log = f.read()
def ping_p99(piece):
    # The presence pings' p99 in ms, at the router and at their nodes (nginx's timings).
    router, node = [], []
    for line in piece.decode(errors="replace").splitlines():
        parts = line.split('"')
        if len(parts) > 2 and "/users/me/presence " in parts[1]:
            try:
                r, n = parts[-1].split()[:2]
                router.append(float(r))
                node.append(float(n))
            except ValueError:
                continue
    p = lambda xs: f"{sorted(xs)[int(0.99 * (len(xs) - 1))] * 1000:.0f}" if xs else "-"
    return p(router), p(node)
print("from_start_s\trouter_cores\tnodes_cores\tdrivers_cores\tmachine_busy_pct\trequests_per_s"
      "\tping_p99_router_ms\tping_p99_node_ms")
for a, b in zip(rows, rows[1:]):
    dt = b[0] - a[0]
    if dt <= 0:
        continue
    cores = [(b[i] - a[i]) / hz / dt for i in (1, 2, 7)]
    busy = 100 * (b[3] - a[3]) / max(b[4] - a[4], 1)
    piece = log[int(a[6]):int(b[6])]
    reqs = piece.count(b"\n") / dt
    router_p99, node_p99 = ping_p99(piece)
    print(f"{b[0] - started:.0f}\t{cores[0]:.2f}\t{cores[1]:.2f}\t{cores[2]:.2f}\t{busy:.0f}\t{reqs:.0f}"
          f"\t{router_p99}\t{node_p99}")
EOF
if [ "${#DRIVER_VERDICTS[@]}" -gt 0 ]; then
  echo "drivers whose own share missed a threshold (the merged report above judges the run):"
  printf '%s\n' "${DRIVER_VERDICTS[@]}"
fi
echo "timeline (~10 s steps: cores of router, nodes, drivers; machine busy; requests/s; pings' p99 at the router and at their nodes): $WORK/timeline.tsv"
echo "reports: $WORK/all.json $WORK/all.html; drivers' own: $WORK/reports/"
exit "$FAILED"

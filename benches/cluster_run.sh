#!/usr/bin/env bash
# Many people online across nodes: REALMS realms on NODES hearth nodes behind one nginx
# (the configuration `hearth cluster nginx` writes), each realm driven through the
# router by its host name by a `hearth load` process of its own (presence: a parked
# long-poll and a ping at the real 60 s period per user), from loopback source
# addresses of its own, the drivers' reports merged into one (`hearth load --merge`),
# with the ramp-up time, RSS per user of each node, nginx's and the drivers' RSS, and
# CPU per request at the router and at the nodes.
#
#   benches/cluster_run.sh                       # 100 100 users: 11 realms x 9 100, 11 nodes
#   NODES=2 REALMS=2 USERS=500 DURATION=20s WARMUP=5s benches/cluster_run.sh   # a small try
#
# Settings (environment): NODES, REALMS (placed on the nodes in turn), USERS (per
# realm), DURATION and WARMUP (of each driver), SPEEDUP (divides the 60 s ping period;
# 1 is the real period), HEARTH and HEARTH_TOOLS (the binaries; default the release
# build), WORK (a folder for the nodes' data, nginx's prefix and the reports; default a
# new temporary one), NGINX (default: on the PATH or /usr/sbin/nginx).
#
# One process here may hold at most 20 000 open files (a hard limit): a node holds two
# connections per user of its realms (the poll and the pings, from nginx), a driver two
# per user, so keep USERS x realms per node under ~9 900 and USERS under ~9 900. One
# loopback source address reaches the router's port with about 28 000 connections:
# each driver uses two addresses of its own (127.0.<realm+1>.1 and .2).

set -euo pipefail

NODES=${NODES:-11}
REALMS=${REALMS:-11}
USERS=${USERS:-9100}
DURATION=${DURATION:-120s}
WARMUP=${WARMUP:-60s}
SPEEDUP=${SPEEDUP:-1}
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { # utime + stime of the given pids
  local t=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat")))
  done
  echo "$t"
}
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

ROUTER_PORT=$(free_port)
declare -a NODE_HTTP NODE_ADMIN REALM_NODE

# 1. The realms and their simulated users, on the stopped nodes' folders.
for ((n = 0; n < NODES; n++)); do
  mkdir -p "$WORK/node$n"
  NODE_HTTP[n]=$(free_port)
  NODE_ADMIN[n]=$(free_port)
done
mkdir -p "$WORK/credentials" "$WORK/reports"
for ((r = 0; r < REALMS; r++)); do
  n=$((r % NODES))
  REALM_NODE[r]=$n
  "$HEARTH" realm create --subdomain "r$r" --name "Realm r$r" \
    --owner-email "owner@r$r.$DOMAIN" --owner-password "$PASSWORD" \
    --data "$WORK/node$n" --url "http://r$r.$DOMAIN:$ROUTER_PORT" >/dev/null
  "$HEARTH" realm populate --data "$WORK/node$n" --subdomain "r$r" --users "$USERS" >/dev/null
  cp "$WORK/node$n/load-users.tsv" "$WORK/credentials/r$r.tsv"
done

# 2. The router: placement, configuration, nginx.
{
  echo "[router]"
  echo "listen = \"127.0.0.1:$ROUTER_PORT\""
  echo "domain = \"$DOMAIN\""
  echo "clients = $((REALMS * USERS))"
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
    --trusted-proxy 127.0.0.1 >"$WORK/node$n.log" 2>&1 &
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

# 4. One driver per realm, through the router by the realm's host name.
ROUTER_CPU0=$(cpu_ticks "${NGINX_PIDS[@]}")
NODES_CPU0=$(cpu_ticks "${NODE_PID[@]}")
STARTED=$(date +%s.%N)
declare -a DRIVER_PID
for ((r = 0; r < REALMS; r++)); do
  "$HEARTH_TOOLS" load --target "http://127.0.0.1:$ROUTER_PORT" --host "r$r.$DOMAIN" \
    --credentials "$WORK/credentials/r$r.tsv" --users "$USERS" --scenario presence \
    --speedup "$SPEEDUP" --duration "$DURATION" --warmup "$WARMUP" \
    --source-addrs "127.0.$((r + 1)).1,127.0.$((r + 1)).2" --driver-threads 1 \
    --json "$WORK/reports/r$r.json" >"$WORK/reports/r$r.txt" 2>&1 &
  DRIVER_PID[r]=$!
done

# RSS peaks while the drivers run, sampled every 2 s.
declare -a NODE_PEAK
NGINX_PEAK=0
DRIVER_PEAK=0
RAMPED=""
while kill -0 "${DRIVER_PID[0]}" 2>/dev/null; do
  for ((n = 0; n < NODES; n++)); do
    v=$(rss_kib "${NODE_PID[n]}")
    [ "$v" -gt "${NODE_PEAK[n]:-0}" ] && NODE_PEAK[n]=$v
  done
  v=0
  for pid in $(pgrep -P "$NGINX_PID" || true) "$NGINX_PID"; do v=$((v + $(rss_kib "$pid"))); done
  [ "$v" -gt "$NGINX_PEAK" ] && NGINX_PEAK=$v
  v=0
  for pid in "${DRIVER_PID[@]}"; do v=$((v + $(rss_kib "$pid"))); done
  [ "$v" -gt "$DRIVER_PEAK" ] && DRIVER_PEAK=$v
  # Ramp-up: every driver past its set-up (its users registered and parked).
  if [ -z "$RAMPED" ] && [ "$(grep -l 'the warm-up starts' "$WORK"/reports/r*.txt 2>/dev/null | wc -l)" -ge "$REALMS" ]; then
    RAMPED=$(python3 -c "import time; print(f'{time.time() - $STARTED:.1f}')")
  fi
  sleep 2
done
FAILED=0
for ((r = 0; r < REALMS; r++)); do wait "${DRIVER_PID[r]}" || FAILED=1; done
ENDED=$(date +%s.%N)
ROUTER_CPU1=$(cpu_ticks "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true))
NODES_CPU1=$(cpu_ticks "${NODE_PID[@]}")

# 5. One report of them all, and the figures around it.
"$HEARTH_TOOLS" load --merge "$WORK"/reports/r*.json --json "$WORK/all.json" --report "$WORK/all.html" || FAILED=1
python3 - "$WORK/all.json" "$ROUTER_CPU0" "$ROUTER_CPU1" "$NODES_CPU0" "$NODES_CPU1" \
  "$STARTED" "$ENDED" "${RAMPED:-unknown}" "$NGINX_PEAK" "$DRIVER_PEAK" "$USERS" \
  "${NODE_RSS_FRESH[*]}" "${NODE_PEAK[*]}" "$NODES" "$REALMS" <<'EOF'
import json, sys
(path, r0, r1, n0, n1, t0, t1, ramp, nginx_kib, driver_kib, users,
 fresh, peak, nodes, realms) = sys.argv[1:]
report = json.load(open(path))
req = max(report["total_requests"], 1)
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
print(f"CPU per request: router {(int(r1) - int(r0)) * tick_ms / req:.3f} ms, "
      f"nodes {(int(n1) - int(n0)) * tick_ms / req:.3f} ms")
for n, (f, p, u) in enumerate(zip(fresh.split(), peak.split(), per_node)):
    print(f"  node {n}: RSS fresh {int(f) / 1024:.1f} MiB, peak {int(p) / 1024:.1f} MiB, "
          f"{(int(p) - int(f)) / max(u, 1):.1f} KiB per user ({u} users)")
total = max(report["users"], 1)
print(f"nginx peak RSS {int(nginx_kib) / 1024:.1f} MiB ({int(nginx_kib) / total:.2f} KiB per user); "
      f"drivers' peak RSS {int(driver_kib) / 1024:.1f} MiB ({int(driver_kib) / total:.2f} KiB per user)")
EOF
echo "reports: $WORK/all.json $WORK/all.html; drivers' own: $WORK/reports/"
exit "$FAILED"

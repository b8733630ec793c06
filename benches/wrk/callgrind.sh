#!/usr/bin/env bash
# User-space instructions per request of one server under callgrind: a figure that does
# not move with the machine's load, where req/s on a shared machine moves ±10 % between
# rounds. It leaves out the kernel (the socket work, the same for any server answering
# the same requests), and valgrind counts a `rep stosb` per byte (actix-http zeroes its
# header array with one per request: ~6 K of the count, a small share of real time).
#
#   benches/wrk/callgrind.sh me|ping -- COMMAND...   # the server; it must listen on $PORT
#
#   PORT=21401 benches/wrk/callgrind.sh me -- target/release/hearth serve --dev \
#       --data COPY --bind 127.0.0.1:21401 --durability never --metrics-bind off --admin-bind off
#   PORT=21401 benches/wrk/callgrind.sh me -- target/release/examples/minimal_handler 127.0.0.1:21401 2
#
# `me` is `GET /api/v1/users/me` with $AUTH_ONE's credentials, `ping` the presence ping
# with $AUTH_ALL's in rotation (files of `Authorization` values, see rotate.lua). The
# counters are zeroed after a warm-up (9 s for `ping`, so every user's first ping, which
# creates its entry, is behind it at 10 000 users), then 8 s of `wrk -t1 -c8` are counted.
set -euo pipefail
mode=$1
shift
[ "${1:-}" = "--" ] && shift
port=${PORT:?set PORT to the port the server listens on}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" "$@" >"$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 1 90); do
  sleep 2
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
done
drive() { # seconds
  if [ "$mode" = me ]; then
    HEARTH_WRK_AUTH=${AUTH_ONE:?} wrk -t1 -c8 -d"$1" -s "$here/rotate.lua" "http://127.0.0.1:$port"
  else
    HEARTH_WRK_AUTH=${AUTH_ALL:?} HEARTH_WRK_METHOD=POST HEARTH_WRK_PATH=/api/v1/users/me/presence \
      HEARTH_WRK_BODY='status=active&ping_only=true' \
      wrk -t1 -c8 -d"$1" -s "$here/rotate.lua" "http://127.0.0.1:$port"
  fi
}
drive "$([ "$mode" = ping ] && echo 9s || echo 3s)" >/dev/null
callgrind_control -z "$pid" >/dev/null 2>&1
requests=$(drive 8s | awk '/requests in/ {print $1}')
callgrind_control -d "$pid" >/dev/null 2>&1
sleep 1
total=$(callgrind_annotate "$(ls -t "$out"/cg.*.* | head -1)" 2>/dev/null |
  awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
echo "$mode requests=$requests instructions_per_request=$((total / requests))"

#!/usr/bin/env bash
# Side-by-side wrk rounds: the minimal handler and one or more hearth servers, each in
# a process of its own, alternating, so that every ratio comes from rounds run back to
# back on the same machine.
#
#   benches/wrk/side_by_side.sh ROUNDS SECONDS NAME=URL [NAME=URL ...]
#
# Requests (both with `benches/wrk/rotate.lua`, `wrk -t1 -c64`):
#   users_me   GET /api/v1/users/me with the credentials in $AUTH_ONE (one user);
#   ping       POST /api/v1/users/me/presence `status=active&ping_only=true`, the
#              credentials in $AUTH_ALL in rotation (e.g. 10 000 users).
# AUTH_ONE / AUTH_ALL hold one `Authorization` value a line (see rotate.lua).
# Prints one line per round and server: request, round, name, req/s, p50.
set -euo pipefail
rounds=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
run() { # request name url
  local request=$1 name=$2 url=$3 out
  if [ "$request" = users_me ]; then
    out=$(HEARTH_WRK_AUTH=$AUTH_ONE wrk -t1 -c64 -d"${secs}s" --latency -s "$here/rotate.lua" "$url")
  else
    out=$(HEARTH_WRK_AUTH=$AUTH_ALL HEARTH_WRK_METHOD=POST HEARTH_WRK_PATH=/api/v1/users/me/presence \
      HEARTH_WRK_BODY='status=active&ping_only=true' \
      wrk -t1 -c64 -d"${secs}s" --latency -s "$here/rotate.lua" "$url")
  fi
  local rps p50 errors
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  errors=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  echo "$request round=$r $name req/s=$rps p50=$p50 non2xx=${errors:-0} load=$(cut -d' ' -f1 /proc/loadavg)"
}
for request in users_me ping; do
  for r in $(seq 1 "$rounds"); do
    for pair in "$@"; do
      run "$request" "${pair%%=*}" "${pair#*=}"
    done
  done
done

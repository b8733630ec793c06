-- wrk script: one request shape, the credentials of many users in rotation.
--
--   HEARTH_WRK_AUTH=auth.txt HEARTH_WRK_METHOD=POST HEARTH_WRK_PATH=/api/v1/users/me/presence \
--   HEARTH_WRK_BODY='status=active&ping_only=true' wrk -t1 -c64 -d10s -s benches/wrk/rotate.lua URL
--
-- auth.txt holds one `Authorization` header value a line (`Basic base64(email:key)`),
-- e.g. from `load-users.tsv`:
--   while IFS=$'\t' read -r e k; do printf 'Basic %s\n' "$(printf '%s:%s' "$e" "$k" | base64 -w0)"; done
-- HEARTH_WRK_ACCEPT_ENCODING=gzip adds that header. The minimal handler answers every
-- request alike, so the same script drives it.
local auth = {}
local n = 0
local i = 0
local method = os.getenv("HEARTH_WRK_METHOD") or "GET"
local path = os.getenv("HEARTH_WRK_PATH") or "/api/v1/users/me"
local body = os.getenv("HEARTH_WRK_BODY")
local accept = os.getenv("HEARTH_WRK_ACCEPT_ENCODING")

function init(args)
  local file = os.getenv("HEARTH_WRK_AUTH") or "auth.txt"
  for line in io.lines(file) do
    n = n + 1
    auth[n] = line
  end
  -- Threads start at different users.
  i = math.random(n) - 1
end

function request()
  i = (i % n) + 1
  local headers = { ["Authorization"] = auth[i] }
  if body then
    headers["Content-Type"] = "application/x-www-form-urlencoded"
  end
  if accept then
    headers["Accept-Encoding"] = accept
  end
  return wrk.format(method, path, headers, body)
end

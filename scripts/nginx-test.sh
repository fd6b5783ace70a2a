#!/usr/bin/env bash
# A real reverse proxy: Debian's nginx with deploy/nginx/teamgate.conf (upstreams and listen port
# replaced) in front of two `teamgate serve` replicas on one fresh PostgreSQL database, driven by the
# official TypeScript SDK client (tests/interop/nginx.mjs). Then every log of the run is scanned for
# each secret it used. Installs nginx with apt-get when missing (never starting the system service).
# Skips, saying so, when no PostgreSQL server answers at TEAMGATE_TEST_POSTGRES.
# Usage: scripts/nginx-test.sh [path/to/teamgate]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${1:-target/debug/teamgate}"
ADMIN="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}"
NAME=nginx
source scripts/lib/replicas.sh
replicas_require_postgres
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [[ ! -x "$NGINX" ]]; then
  echo "nginx: installing Debian's nginx"
  # Keep the package's own service from starting (it would listen on every interface, port 80).
  made_policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made_policy=1
  fi
  timeout 300 apt-get update -qq >/dev/null && \
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 || \
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends nginx >/dev/null
  [[ -n "$made_policy" ]] && rm -f /usr/sbin/policy-rc.d
  NGINX=/usr/sbin/nginx
  [[ -x "$NGINX" ]] || { echo "nginx: cannot install nginx"; echo "nginx: 0 passed, 1 failed"; exit 1; }
fi
scripts/install-test-deps.sh >/dev/null || exit 1

DIR="$ROOT/.cache/nginx"; rm -rf "$DIR"; mkdir -p "$DIR"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT="$(free_port)"
PUBLIC="http://127.0.0.1:$PORT/mcp"
SCRAPE="scrape-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
replicas_prepare
replicas_start "$DIR" TEAMGATE__LOG__REQUESTS=true TEAMGATE__SERVER__PUBLIC_URL="$PUBLIC" \
  TEAMGATE__SERVER__TRUSTED_PROXIES='["127.0.0.1/32"]' TEAMGATE__TELEMETRY__METRICS__TOKEN="$SCRAPE"
ports=()
for u in "${urls[@]}"; do p="${u#http://127.0.0.1:}"; ports+=("${p%%/*}"); done

# deploy/nginx/teamgate.conf as shipped, with only the upstream servers and the listen line replaced.
sed -e "s|^\( *\)server teamgate:8080\(.*\)|\1server 127.0.0.1:${ports[0]}\2\n\1server 127.0.0.1:${ports[1]}\2|" \
    -e "s|^\( *\)listen 80;|\1listen 127.0.0.1:$PORT;|" deploy/nginx/teamgate.conf > "$DIR/teamgate.conf"
grep -q "127.0.0.1:${ports[1]}" "$DIR/teamgate.conf" && grep -q "listen 127.0.0.1:$PORT;" "$DIR/teamgate.conf" \
  || { echo "nginx: deploy/nginx/teamgate.conf no longer has the expected upstream/listen lines"; exit 1; }
mkdir -p "$DIR/tmp"
cat > "$DIR/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 256; }
http {
  access_log $DIR/access.log;
  client_body_temp_path $DIR/tmp/body;
  proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fastcgi;
  uwsgi_temp_path $DIR/tmp/uwsgi;
  scgi_temp_path $DIR/tmp/scgi;
  include $DIR/teamgate.conf;
}
CONF
"$NGINX" -t -p "$DIR" -c "$DIR/nginx.conf" >"$DIR/nginx-t.log" 2>&1 || { cat "$DIR/nginx-t.log"; exit 1; }
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" >"$DIR/nginx.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
echo "nginx: $("$NGINX" -v 2>&1) on 127.0.0.1:$PORT -> replicas 127.0.0.1:${ports[0]}, 127.0.0.1:${ports[1]} (PostgreSQL $DB)"

timeout 90 node tests/interop/nginx.mjs --url "$PUBLIC" --token "$TOKEN"; status=$?

extra_passed=0; extra_failed=0
served=0
for name in a b; do grep -q '"message":"mcp request"' "$DIR/$name.log" && served=$((served + 1)); done
if [[ $served -eq 2 ]]; then extra_passed=$((extra_passed + 1)); echo "ok - both replicas served requests through nginx"
else extra_failed=$((extra_failed + 1)); echo "not ok - only $served replica(s) served requests"; fi

# Stop the replicas so their last lines are written, then scan every log of the run.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=()
leaks=()
for secret in "$TOKEN" "${TOKEN##*_}" "$KEY" "$SCRAPE"; do
  grep -rqF -- "$secret" "$DIR"/*.log && leaks+=("${secret:0:6}…")
done
if [[ ${#leaks[@]} -eq 0 ]]; then extra_passed=$((extra_passed + 1)); echo "ok - no secret in any log line ($(cat "$DIR"/*.log | wc -l) lines scanned)"
else extra_failed=$((extra_failed + 1)); echo "not ok - secrets in the logs: ${leaks[*]}"; fi
echo "nginx-logs: $extra_passed passed, $extra_failed failed"
[[ $status -eq 0 && $extra_failed -eq 0 ]]

#!/usr/bin/env bash
# Starts the real teamgate binary on a loopback port with config/conformance.toml and runs the
# official conformance suites, the TypeScript and Python SDK clients and the MCP Inspector CLI
# against it; the SDK clients also reach the everything server as an upstream through it. Prints each tool's closing line and `interop: N passed, M failed` (suites, not checks).
# Usage: scripts/interop.sh [path/to/teamgate]   (default: target/debug/teamgate)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${1:-target/debug/teamgate}"
[[ -x "$BIN" ]] || { echo "interop: $BIN not built (run cargo build --features conformance)"; exit 1; }
# The fixtures are a cargo feature: a build without it refuses config/conformance.toml, and says so.
refused="$("$BIN" check-config --config config/conformance.toml 2>&1 >/dev/null)" \
  || { echo "$refused" | tail -n 3; echo "interop: $BIN cannot serve config/conformance.toml"; exit 1; }
scripts/install-test-deps.sh || exit 1
LOGDIR="$ROOT/.cache/interop"; mkdir -p "$LOGDIR"
LOG="$LOGDIR/server.log"

# A database of its own, and a personal token: every client below authenticates.
rm -f "$LOGDIR"/teamgate.db*
export TEAMGATE__STORE__URL="sqlite://$LOGDIR/teamgate.db"
# The operator commands never create a store of their own: `migrate` makes it.
"$BIN" migrate >/dev/null || { echo "interop: cannot create the store"; exit 1; }
TOKEN="$("$BIN" token create --user interop --name ci | tail -n 1)" || { echo "interop: cannot create a token"; exit 1; }
[[ "$TOKEN" == tg_* ]] || { echo "interop: unexpected token output"; exit 1; }
# The conformance overlay plus two upstreams: the everything server (tools `everything_*`), whose
# `tools.include` the upstream clients edit here to see list_changed (hot reload), and a server on
# the Python SDK that counts the cancellations it saw (`waiter_wait`, `waiter_cancelled`).
CONFIG="$LOGDIR/interop.toml"
EVERYTHING="$ROOT/.cache/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
{ cat config/conformance.toml; cat <<EOF

[[upstreams]]
name = "everything"
command = "$ROOT/.cache/bin/node22"
args = ["$EVERYTHING", "stdio"]
tools = { include = ["echo", "trigger-long-running-operation", "trigger-elicitation-request"] }

[[upstreams]]
name = "waiter"
command = "$ROOT/.cache/venv/bin/python"
args = ["$ROOT/tests/interop/waiter_server.py"]
EOF
} >"$CONFIG"
NARROW="$("$BIN" token create --user interop-narrow --name ci --scope tools:everything_echo --force | tail -n 1)"
[[ "$NARROW" == tg_* ]] || { echo "interop: cannot create the narrow token"; exit 1; }
TEAMGATE__LOG__FORMAT=json "$BIN" serve --config "$CONFIG" --listen 127.0.0.1:0 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null' EXIT
URL=""
for _ in $(seq 100); do   # the start-up line names the URL; wait up to 10 s
  URL="$(grep -o '"url":"http://[^"]*"' "$LOG" 2>/dev/null | head -1 | cut -d'"' -f4)" && [[ -n "$URL" ]] && break
  sleep 0.1
done
[[ -n "$URL" ]] || { echo "interop: server did not start:"; cat "$LOG"; exit 1; }
echo "interop: teamgate at $URL"

passed=0; failed=0; failures=()
run() {  # run NAME COMMAND...: one interop step, bounded in time
  local name="$1"; shift
  echo "=== $name"
  if timeout 1200 "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}
run ts-client node tests/interop/ts_client.mjs --url "$URL" --token "$TOKEN"
run ts-client-2025-06-18 node tests/interop/ts_client.mjs --url "$URL" --token "$TOKEN" --offer-version 2025-06-18
for mode in default legacy 2026-07-28; do
  run "py-client[$mode]" .cache/venv/bin/python tests/interop/py_client.py --url "$URL" --token "$TOKEN" --mode "$mode"
done
# Durable tasks: the Python SDK client across two replicas on PostgreSQL (one on SQLite without it).
run py-tasks tests/interop/tasks.sh "$BIN"
for era in legacy modern; do
  run "inspector[$era]" env INSPECTOR_ERA="$era" tests/interop/inspector.sh "$URL" "$TOKEN"
done
# The suites cannot send headers: conformance.sh puts a header-adding proxy in front.
run conformance env MCP_TOKEN="$TOKEN" tests/interop/conformance.sh "$URL"
# The SDK clients against the upstream: each adds one tool to see list_changed.
UP=(--url "$URL" --token "$TOKEN" --narrow "$NARROW" --config "$CONFIG")
run ts-upstream node tests/interop/ts_upstream.mjs "${UP[@]}" --add get-sum
run "py-upstream[legacy]" .cache/venv/bin/python tests/interop/py_upstream.py "${UP[@]}" --add get-tiny-image --mode legacy
run "py-upstream[2026-07-28]" .cache/venv/bin/python tests/interop/py_upstream.py "${UP[@]}" --add get-env --mode 2026-07-28
# Without a token, the server must refuse.
code="$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL" -H 'content-type: application/json' \
  -H 'accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')"
if [[ "$code" == 401 ]]; then passed=$((passed + 1)); echo "ok - no token: 401"; else failed=$((failed + 1)); failures+=("no-token:$code"); fi

# Every client above authenticated with $TOKEN: neither it nor its secret part may be in the log.
if grep -qF -e "${TOKEN##*_}" -e "${NARROW##*_}" "$LOG"; then failed=$((failed + 1)); failures+=("token-in-log")
else passed=$((passed + 1)); echo "ok - no token in the server log ($(wc -l <"$LOG") lines scanned)"; fi

# A server that survived everything above must still be alive.
if kill -0 "$SERVER" 2>/dev/null; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("server-alive"); fi
[[ ${#failures[@]} -gt 0 ]] && echo "interop: failed: ${failures[*]} (server log: $LOG)"
echo "interop: $passed passed, $failed failed"
[[ $failed -eq 0 ]]

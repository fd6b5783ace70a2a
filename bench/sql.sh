#!/usr/bin/env bash
# A SQL tool's c=16 throughput and p99 (issue 62): teamgate's [[sources.sql]] tool `issue_by_id` over
# HTTP (wrk, bench/load.lua, 2026-07-28 tools/call) against the same statement run directly with sqlx
# (bench/servers sql-direct: one pool, a read-only transaction per query, as teamgate runs it). On this
# machine's PostgreSQL (a database made and dropped here, 1,000 rows). Alternating pairs; loopback only;
# every run bounded by time. Usage: bench/sql.sh [BINARY] [PAIRS]
#   (build first: cargo build --release --features conformance; CARGO_TARGET_DIR=target cargo build
#   --release --manifest-path bench/servers/Cargo.toml --bin sql-direct)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${1:-target/release/teamgate}"
PAIRS="${2:-3}"
DIRECT="target/release/sql-direct"
PG="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}"
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null
[[ -x "$BIN" && -x "$DIRECT" ]] || { echo "build $BIN and $DIRECT first (see the header)" >&2; exit 1; }
db="teamgate_bench_sql_$$"
dir="$(mktemp -d)"
cleanup() { [[ -n "${pid:-}" ]] && kill "$pid" 2>/dev/null; psql "$PG" -qc "DROP DATABASE IF EXISTS $db" >/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
psql "$PG" -qc "CREATE DATABASE $db" >/dev/null
URL="${PG%/*}/$db"
psql "$URL" -q >/dev/null <<'SQL'
CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL, owner TEXT NOT NULL);
INSERT INTO issues SELECT i, 'issue ' || i, 'member' || (i % 10) FROM generate_series(1, 1000) i;
SQL
cat > "$dir/sql.toml" <<TOML
[[sources.sql]]
name = "tracker"
url = "$URL"
max_connections = 16
[[sources.sql.tools]]
name = "issue_by_id"
description = "One issue"
statement = "SELECT id, title, owner FROM issues WHERE id = \$1"
parameters = [{ name = "id", type = "integer" }]
TOML
port=$((19000 + RANDOM % 1000))
env TEAMGATE__STORE__URL="sqlite://$dir/t.db" TEAMGATE__AUTH__MODE=none TEAMGATE__RATE_LIMIT__ENABLED=false \
  TEAMGATE__RELOAD__WATCH=false "$BIN" serve --config "$dir/sql.toml" --listen "127.0.0.1:$port" >"$dir/log" 2>&1 &
pid=$!
sleep 2
BODY='{"jsonrpc":"2.0","id":__ID__,"method":"tools/call","params":{"name":"issue_by_id","arguments":{"id":7},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
echo "$(uptime)"
echo "$BIN against $DIRECT, c=16, 5 s per run, $PAIRS pairs"
for _ in $(seq "$PAIRS"); do
  BENCH_BODY="$BODY" BENCH_EXPECT='issue 7' BENCH_LIMIT=2000000 timeout 30 wrk -t1 -c16 -d5s --latency \
    -s bench/load.lua -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: issue_by_id' \
    "http://127.0.0.1:$port/mcp" > "$dir/wrk"
  rps=$(grep -o 'Requests/sec: *[0-9.]*' "$dir/wrk" | awk '{print $2}')
  p50=$(awk '$1=="50%"{print $2}' "$dir/wrk")
  p99=$(awk '$1=="99%"{print $2}' "$dir/wrk")
  failed=$(grep -o '"failed":[0-9]*' "$dir/wrk" || true)
  echo "teamgate c=16: $rps req/s, p50 $p50, p99 $p99 ($failed)"
  timeout 30 "$DIRECT" "$URL" 16 5
done

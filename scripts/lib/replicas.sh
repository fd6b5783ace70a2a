# Sourced by scripts/replicas.sh and scripts/nginx-test.sh: two `teamgate serve` replicas on one
# fresh PostgreSQL database. The caller sets BIN, ADMIN (an admin URL of the server) and NAME (its
# prefix for messages and the database name) before using these.

# Says SKIP (and "0 passed, 0 failed") and exits 0 when no PostgreSQL server answers at $ADMIN.
replicas_require_postgres() {
  if ! psql "$ADMIN" -qAtc 'select 1' >/dev/null 2>&1; then
    echo "$NAME: SKIP: no PostgreSQL server answers at $ADMIN"
    echo "$NAME: 0 passed, 0 failed"
    exit 0
  fi
}

# Creates a fresh database (DB, its URL in URL, exported as TEAMGATE__STORE__URL), a shared MRTR
# request-state key (KEY) and a personal token (TOKEN); the EXIT trap stops every process in
# `pids` and drops the database.
replicas_prepare() {
  DB="teamgate_${NAME}_$$_$RANDOM"
  psql "$ADMIN" -qc "create database $DB" || exit 1
  URL="${ADMIN%/*}/$DB"
  KEY="$NAME-test-key-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  pids=()
  trap replicas_cleanup EXIT
  export TEAMGATE__STORE__URL="$URL"
  TOKEN="$("$BIN" token create --user "$NAME-tester" --name ci | tail -n 1)" || exit 1
}

replicas_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  psql "$ADMIN" -qc "drop database if exists $DB with (force)" >/dev/null 2>&1
}

# replicas_start LOGDIR [VAR=value...]: starts the replicas named in REPLICAS (default: a and b) on
# 127.0.0.1:0 with the conformance config (and REPLICA_CONFIG on top, when set), JSON logs and the
# extra environment given; waits for each to log its URL (urls array).
replicas_start() {
  local logdir="$1" name log u
  shift
  urls=()
  for name in ${REPLICAS:-a b}; do
    log="$logdir/$name.log"
    env TEAMGATE__LOG__FORMAT=json TEAMGATE__MCP__REQUEST_STATE_KEYS="[\"$KEY\"]" "$@" \
      "$BIN" serve --config config/conformance.toml ${REPLICA_CONFIG:+--config "$REPLICA_CONFIG"} \
      --listen 127.0.0.1:0 >"$log" 2>&1 &
    pids+=($!)
    u=""
    for _ in $(seq 100); do
      u="$(grep -o '"url":"http://[^"]*"' "$log" 2>/dev/null | head -1 | cut -d'"' -f4)" && [[ -n "$u" ]] && break
      sleep 0.1
    done
    [[ -n "$u" ]] || { echo "$NAME: replica $name did not start:"; cat "$log"; exit 1; }
    urls+=("$u")
  done
}

#!/usr/bin/env bash
# Durable tasks with the official Python SDK client (tests/interop/py_tasks.py): two `teamgate serve`
# replicas on one fresh PostgreSQL database (a task created on one is polled and cancelled on the
# other, and the one running a task is killed); without PostgreSQL, one replica on SQLite plays both.
# Usage: tests/interop/tasks.sh [path/to/teamgate]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# replicas_start: the same start as scripts/replicas.sh, with this test's tools on top.
source scripts/lib/replicas.sh
BIN="${1:-target/debug/teamgate}"
ADMIN="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}"
LOGDIR="$ROOT/.cache/tasks"; rm -rf "$LOGDIR"; mkdir -p "$LOGDIR"
PIDFILE="$LOGDIR/hang.pid"
# Scripts, not a shell: teamgate runs no shell as a command tool's program.
printf '#!/bin/sh\nsleep 10\necho built\n' >"$LOGDIR/build.sh"
printf '#!/bin/sh\necho $$ > %s\nexec sleep 120\n' "$PIDFILE" >"$LOGDIR/hang.sh"
chmod +x "$LOGDIR/build.sh" "$LOGDIR/hang.sh"
cat >"$LOGDIR/tasks.toml" <<TOML
[tasks]
heartbeat_timeout = "4s"
poll_interval = "500ms"

[[tools.command]]
name = "task_build"
description = "Takes 10 s, then prints built"
program = "$LOGDIR/build.sh"

[[tools.command]]
name = "task_hang"
description = "Writes its pid, then sleeps"
program = "$LOGDIR/hang.sh"
timeout = "5m"
TOML
pids=(); DB=""
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [[ -n "$DB" ]] && psql "$ADMIN" -qc "drop database if exists $DB with (force)" >/dev/null 2>&1
}
trap cleanup EXIT
if psql "$ADMIN" -qAtc 'select 1' >/dev/null 2>&1; then
  DB="teamgate_tasks_$$_$RANDOM"
  psql "$ADMIN" -qc "create database $DB" || exit 1
  export TEAMGATE__STORE__URL="${ADMIN%/*}/$DB"; REPLICAS="a b"
else
  echo "tasks: no PostgreSQL at $ADMIN: one replica on SQLite plays both"
  export TEAMGATE__STORE__URL="sqlite://$LOGDIR/teamgate.db"; REPLICAS="a"
fi
KEY="tasks-test-key-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"$BIN" migrate >/dev/null || exit 1   # the operator commands never create a store themselves
TOKEN="$("$BIN" token create --user tasks-alice --name ci | tail -n 1)" || exit 1
OTHER="$("$BIN" token create --user tasks-bob --name ci | tail -n 1)" || exit 1
NAME=tasks REPLICA_CONFIG="$LOGDIR/tasks.toml"
replicas_start "$LOGDIR"
A="${urls[0]}"; B="${urls[1]:-${urls[0]}}"
KILL=(); [[ ${#urls[@]} -eq 2 ]] && KILL=(--a-pid "${pids[0]}")
echo "tasks: A=$A B=$B"
timeout 300 .cache/venv/bin/python tests/interop/py_tasks.py --a "$A" --b "$B" --token "$TOKEN" \
  --other "$OTHER" --pidfile "$PIDFILE" "${KILL[@]}"

#!/usr/bin/env bash
# Multi-replica check: two `teamgate serve` processes on one fresh PostgreSQL database, driven by the
# official TypeScript SDK client (tests/interop/replicas.mjs) with no sticky routing. Skips, saying so,
# when no PostgreSQL server answers at TEAMGATE_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/test).
# Usage: scripts/replicas.sh [path/to/teamgate]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${1:-target/debug/teamgate}"
ADMIN="${TEAMGATE_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}"
NAME=replicas
source scripts/lib/replicas.sh
replicas_require_postgres
scripts/install-test-deps.sh >/dev/null || exit 1
LOGDIR="$ROOT/.cache/replicas"; mkdir -p "$LOGDIR"
replicas_prepare
replicas_start "$LOGDIR"
echo "replicas: A=${urls[0]} B=${urls[1]} on PostgreSQL database $DB"
timeout 120 node tests/interop/replicas.mjs --a "${urls[0]}" --b "${urls[1]}" --token "$TOKEN"

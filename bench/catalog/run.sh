#!/usr/bin/env bash
# The search-mode benchmark in one command (issue 60): installs the nine servers (install.sh), starts
# teamgate with bench/catalog/teamgate.toml on 127.0.0.1:8091 with the dummy variables its upstreams
# need, waits until all nine are connected, runs recall.py (tools/list bytes, recall@1/@3, search_tools
# p50/p95) and stops teamgate. Builds nothing: it runs $TEAMGATE_BIN, else the first of target/dist,
# target/release, target/debug that has a teamgate binary.
#   bench/catalog/run.sh [recall.py options, e.g. --repeat 5 --min-recall3 0.9]
# (CATALOG_CONFIG=FILE: another configuration instead of bench/catalog/teamgate.toml.)
# Results: printed, and .cache/catalog/recall-<time>.json; teamgate's log beside it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CACHE="$ROOT/.cache/catalog"
say() { echo "[catalog] $*" >&2; }
die() { echo "[catalog] ERROR: $*" >&2; exit 1; }

BIN="${TEAMGATE_BIN:-}"
if [[ -z "$BIN" ]]; then
  for p in dist release debug; do
    [[ -x "target/$p/teamgate" ]] && { BIN="target/$p/teamgate"; break; }
  done
fi
[[ -n "$BIN" && -x "$BIN" ]] || die "no teamgate binary: build one or set TEAMGATE_BIN"

bench/catalog/install.sh >&2

export GITHUB_PERSONAL_ACCESS_TOKEN=catalog-dummy-token GITLAB_PERSONAL_ACCESS_TOKEN=catalog-dummy-token
export GITLAB_API_URL=https://gitlab.com/api/v4 SLACK_BOT_TOKEN=xoxb-catalog-dummy SLACK_TEAM_ID=T00000000
export NOTION_TOKEN=catalog-dummy-token KUBECONFIG="$CACHE/kubeconfig" MEMORY_FILE_PATH="$CACHE/memory.jsonl"

stamp="$(date +%Y%m%d-%H%M%S)"
log="$CACHE/teamgate-$stamp.log"
say "starting $BIN (log: ${log#$ROOT/})"
"$BIN" serve --config "${CATALOG_CONFIG:-bench/catalog/teamgate.toml}" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT

# All nine upstreams connected, within 90 s.
up=0
for _ in $(seq 1 180); do
  kill -0 "$pid" 2>/dev/null || die "teamgate exited; see ${log#$ROOT/}"
  up="$(curl -s --max-time 2 http://127.0.0.1:8091/metrics | grep -c '^teamgate_upstream_up{.*} 1$' || true)"
  [[ "$up" -ge 9 ]] && break
  sleep 0.5
done
[[ "$up" -ge 9 ]] || die "only $up of 9 upstreams connected after 90 s; see ${log#$ROOT/}"
say "9 upstreams connected"

python3 bench/catalog/recall.py --url http://127.0.0.1:8091/mcp --json "$CACHE/recall-$stamp.json" "$@"

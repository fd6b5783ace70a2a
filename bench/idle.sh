#!/usr/bin/env bash
# Idle RSS with the default configuration, as a team's first start has it: an empty
# configuration file in a folder holding this project's README.md and docs/ (which the default
# docs source reads), and in one holding nothing to read. Each start is read 5 s after it began
# (VmRSS, anonymous, file-backed); in the folder with docs, one search_docs call follows (the
# first search builds the index) and RSS is read again 5 s later.
#
#   bench/idle.sh [BIN] [STARTS]      BIN: the teamgate binary (default target/dist/teamgate)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
BIN="$(realpath "${1:-target/dist/teamgate}")" STARTS="${2:-3}"
WORK="$(mktemp -d)"; PID=""
trap '[[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/docs" "$WORK/empty"
cp -r README.md docs "$WORK/docs/"
rss() { awk '/^(VmRSS|RssAnon|RssFile)/{printf "%s %.1f MiB  ", $1, $2 / 1024}' "/proc/$PID/status"; }
search() {
  curl -s -m 30 -o /dev/null -w '%{http_code} %{time_total}s' "http://127.0.0.1:$1/mcp" \
    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H 'Mcp-Name: search_docs' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"'"$3"'"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
}
for folder in docs empty; do
  cd "$WORK/$folder"
  : > empty.toml
  "$BIN" migrate --config empty.toml >/dev/null 2>&1
  token="$("$BIN" token --config empty.toml create --user bench --name bench 2>/dev/null | tail -n 1)"
  for _ in $(seq "$STARTS"); do
    port="$(free_port)"
    "$BIN" serve --config empty.toml --listen "127.0.0.1:$port" >>serve.log 2>&1 &
    PID=$!
    sleep 5
    echo "$folder: idle: $(rss)"
    if [[ "$folder" == docs ]]; then
      echo "$folder: first search $(search "$port" "$token" "rate limits per member"), next $(search "$port" "$token" "audit shipping")"
      sleep 5
      echo "$folder: after the search: $(rss)"
    fi
    kill -INT "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  done
done

#!/usr/bin/env bash
# Interop check with the MCP Inspector 2.x CLI (installed by scripts/install-test-deps.sh; needs Node >= 22.19).
#   tests/interop/inspector.sh URL [TOKEN]
# Env INSPECTOR_ERA=legacy|auto|modern (Inspector --protocol-era; default legacy, the Inspector's own
# default for an ad-hoc URL; modern = server/discover pinned at 2026-07-28, no fallback).
# Checks: tools/list lists test_simple_text; tools/call test_simple_text returns the fixture text.
# Last line: `inspector: N passed, M failed`; exit 1 on any failure.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
URL="${1:?usage: inspector.sh URL [TOKEN]}"; TOKEN="${2:-}"
NODE22="$ROOT/.cache/bin/node22"
CLI="$ROOT/.cache/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[[ -x "$NODE22" && -f "$CLI" ]] || "$ROOT/scripts/install-test-deps.sh" || exit 1

# A throwaway HOME: the CLI writes ~/.mcp-inspector (catalog, client config, OAuth state) and we want
# neither stale state from earlier runs nor litter. --stored-auth-only: never start an interactive OAuth flow.
TMPHOME="$(mktemp -d)"; trap 'rm -rf "$TMPHOME"' EXIT
args=(--transport http --protocol-era "${INSPECTOR_ERA:-legacy}" --stored-auth-only --format json --connect-timeout 15000)
[[ -n "$TOKEN" ]] && args+=(--header "Authorization: Bearer $TOKEN")
inspect() { HOME="$TMPHOME" timeout 60 "$NODE22" "$CLI" --cli "$URL" "${args[@]}" "$@" 2>&1; }

passed=0; failed=0
check() {  # check NAME OUTPUT RC PATTERN
  if [[ $3 -eq 0 ]] && grep -qF -- "$4" <<<"$2"; then passed=$((passed+1)); echo "ok - $1"
  else failed=$((failed+1)); echo "not ok - $1: exit $3, output: $(head -c 300 <<<"$2")"; fi
}

out="$(inspect --method tools/list)"; rc=$?
check "inspector tools/list lists test_simple_text" "$out" $rc '"name":"test_simple_text"'
out="$(inspect --method tools/call --tool-name test_simple_text)"; rc=$?
check "inspector tools/call test_simple_text" "$out" $rc '"text":"This is a simple text response for testing."'

echo "inspector: $passed passed, $failed failed"
[[ $failed -eq 0 ]]

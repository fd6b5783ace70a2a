#!/usr/bin/env bash
# Loading a large real OpenAPI document (issue 62 part 1): GitHub's REST description from
# @octokit/openapi (installed by scripts/install-test-deps.sh) through `teamgate check-config`,
# which builds every configured tool, measured with /usr/bin/time: wall time and peak RSS, against
# the same command on a configuration without the source. Usage: bench/openapi.sh [BINARY] [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${1:-target/release/teamgate}"
RUNS="${2:-3}"
SPEC="$PWD/.cache/openapi-specs/node_modules/@octokit/openapi/generated/api.github.com.json"
[[ -f "$SPEC" ]] || { echo "run scripts/install-test-deps.sh first" >&2; exit 1; }
dir="$(mktemp -d)"; trap 'rm -rf "$dir"' EXIT
printf '[server]\n' > "$dir/none.toml"
cat > "$dir/five.toml" <<TOML
[[sources.openapi]]
name = "github"
spec = "$SPEC"
include = ["issues/get", "issues/create", "issues/list-for-repo", "pulls/list", "repos/get"]
TOML
cat > "$dir/all.toml" <<TOML
[[sources.openapi]]
name = "github"
spec = "$SPEC"
TOML
echo "$(uptime)"
echo "$BIN, $(stat -c %s "$SPEC") bytes of JSON"
for config in none five all; do
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "$config: %e s, peak RSS %M KiB" "$BIN" check-config --config "$dir/$config.toml" 2>&1 >/dev/null \
      | grep -E "^$config:"
  done
done

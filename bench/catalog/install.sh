#!/usr/bin/env bash
# Installs the nine MCP servers of the search-mode benchmark (issue 60) and the TypeScript SDK client
# that bench/catalog/dump.mjs uses, each into its own prefix under .cache/catalog/<key>/ (git-ignored),
# so that their different @modelcontextprotocol/sdk versions never meet. Versions are pinned exactly.
# Idempotent: a prefix whose package.json already names the pinned version is left alone.
# Usage: bench/catalog/install.sh [--force]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="$ROOT/.cache/catalog"

# key  package@version [extra pins]  (key = teamgate's upstream name in bench/catalog/teamgate.toml)
# gitlab's server declares no zod of its own and imports whatever zod is hoisted; a fresh resolve
# hoists zod 4 (zod-to-json-schema's peer range allows it), and zod-to-json-schema 3.x turns zod 4
# schemas into `{}`, so every inputSchema came out empty. Pinning zod 3 beside it gives the
# schemas the package had when it was published.
PKGS=(
  "github     @modelcontextprotocol/server-github@2025.4.8"
  "gitlab     @modelcontextprotocol/server-gitlab@2025.4.25 zod@3.25.76"
  "fs         @modelcontextprotocol/server-filesystem@2026.8.31"
  "memory     @modelcontextprotocol/server-memory@2026.8.31"
  "slack      @modelcontextprotocol/server-slack@2025.4.25"
  "notion     @notionhq/notion-mcp-server@2.5.2"
  "k8s        mcp-server-kubernetes@4.1.7"
  "playwright @playwright/mcp@0.0.86"
  "everything @modelcontextprotocol/server-everything@2026.8.31"
  "sdk        @modelcontextprotocol/sdk@1.32.2"
)

say() { echo "[catalog-install] $*"; }
die() { echo "[catalog-install] ERROR: $*" >&2; exit 1; }
command -v npm >/dev/null || die "npm not found on PATH"

for line in "${PKGS[@]}"; do
  read -r key spec extra <<<"$line"
  name="${spec%@*}"; version="${spec##*@}"
  dir="$CACHE/$key"
  current=1   # every pinned package of this prefix at its pinned version?
  for p in $spec $extra; do
    n="${p%@*}"; v="${p##*@}"; f="$dir/node_modules/$n/package.json"
    [[ -f "$f" && "$(node -p "require('$f').version" 2>/dev/null)" == "$v" ]] || current=0
  done
  if [[ "${1:-}" != "--force" && $current == 1 ]]; then
    say "$key: $spec $extra (already installed)"
    continue
  fi
  say "$key: npm install $spec $extra"
  mkdir -p "$dir"
  [[ -f "$dir/package.json" ]] || echo '{"private": true}' > "$dir/package.json"
  # --ignore-scripts: none of these needs an install script to list its tools (in particular no
  # browser download for @playwright/mcp). Bounded and retried: a registry fetch can hang.
  ok=0
  for attempt in 1 2 3; do
    if timeout -k 10 300 npm install --prefix "$dir" --save-exact --ignore-scripts --prefer-offline \
         --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=3 --loglevel=error $spec $extra; then
      ok=1; break
    fi
    say "npm install of $key failed or timed out (attempt $attempt of 3)"
  done
  [[ $ok == 1 ]] || die "npm install failed for $name@$version"
done
# What the servers need to start without any real service: an allowed root for the filesystem
# server and a kubeconfig for mcp-server-kubernetes (it reads one at start; this one names a
# cluster on a closed loopback port, so nothing is ever reached).
mkdir -p "$CACHE/fs-root"
cat > "$CACHE/kubeconfig" <<'KUBE'
apiVersion: v1
kind: Config
clusters:
- name: dummy
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: dummy
  user:
    token: dummy
contexts:
- name: dummy
  context:
    cluster: dummy
    user: dummy
current-context: dummy
KUBE
say "done: $CACHE"

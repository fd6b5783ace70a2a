#!/usr/bin/env bash
# The container image without a Docker engine: runs scripts/image.sh's build and install steps (the
# ones the Dockerfile runs; PROFILE=debug reuses target/debug/teamgate), then starts the installed
# binary the way the image does (its ENTRYPOINT and CMD, /etc/teamgate/teamgate.toml, the data volume
# as working directory) under a scratch root, and probes it with the image's HEALTHCHECK command.
# Only the listen address (loopback) and the data path (the scratch root) are overridden.
# Then checks deploy/'s compose file and Kubernetes manifests (tests/interop/deploy_check.py).
# Usage: scripts/image-test.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
finish() { echo "image: $passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit $?; }

# The Dockerfile must run these steps of image.sh and no build command of its own.
missing=""
for step in 'RUN scripts/image.sh deps' 'RUN scripts/image.sh build && scripts/image.sh install /out' \
            'image.sh user' 'image.sh", "probe", "/healthz"'; do
  grep -qF "$step" Dockerfile || missing+=" [$step]"
done
grep -q 'cargo ' Dockerfile && missing+=" [a cargo command outside image.sh]"
[[ -z "$missing" ]] && ok "the Dockerfile builds, installs and probes through image.sh" || not_ok "Dockerfile:$missing"

STAGE="$(mktemp -d)"
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$STAGE"' EXIT
# --all-targets: after `cargo test` this is up to date (a bin-only build would resolve the
# dependencies' features without the dev-dependencies and rebuild a score of crates).
export PROFILE=debug TEAMGATE_BUILD_TARGETS=--all-targets
if timeout 600 scripts/image.sh build >"$STAGE/build.log" 2>&1 \
   && scripts/image.sh install "$STAGE/root" >>"$STAGE/build.log" 2>&1; then
  ok "image.sh build and install"
else
  cat "$STAGE/build.log"; not_ok "image.sh build and install"; finish
fi
for f in usr/local/bin/teamgate etc/teamgate/teamgate.toml usr/share/teamgate/README.md var/lib/teamgate; do
  [[ -e "$STAGE/root/$f" ]] || not_ok "/$f is missing from the image tree"
done

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The image's paths, moved under the scratch root; everything else is the image's own configuration.
sed -e "s|/usr/share/teamgate|$STAGE/root/usr/share/teamgate|g" -e "s|/var/lib/teamgate|$STAGE/root/var/lib/teamgate|g" \
  "$STAGE/root/etc/teamgate/teamgate.toml" > "$STAGE/teamgate.toml"
cd "$STAGE/root/var/lib/teamgate"
export TEAMGATE__SERVER__LISTEN="127.0.0.1:$port"
# As `docker exec <container> teamgate token create --user ...` runs it: no --config, the image's WORKDIR.
TOKEN="$("$STAGE/root/usr/local/bin/teamgate" token create --user image-tester 2>/dev/null | tail -n 1)"
[[ "$TOKEN" == tg_* ]] && ok "token create against the image's data volume" || not_ok "token create: $TOKEN"
"$STAGE/root/usr/local/bin/teamgate" serve --config "$STAGE/teamgate.toml" >"$STAGE/serve.log" 2>&1 &
pid=$!
up=""
for _ in $(seq 100); do "$ROOT/scripts/image.sh" probe /healthz "$port" 2>/dev/null && { up=1; break; }; sleep 0.1; done
[[ -n "$up" ]] && ok "HEALTHCHECK (image.sh probe /healthz) passes" || { cat "$STAGE/serve.log"; not_ok "the server never became healthy"; }
"$ROOT/scripts/image.sh" probe /readyz "$port" && ok "readiness (/readyz) passes" || not_ok "/readyz"
grep -q '"level":"INFO"' "$STAGE/serve.log" && ok "logs are JSON, as configured for the image" || not_ok "logs are not JSON"
[[ -f "$STAGE/root/var/lib/teamgate/data/teamgate.db" ]] && ok "state lives in the data volume" || not_ok "no database in /var/lib/teamgate"
code="$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" -H "authorization: Bearer $TOKEN" \
  -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"image-test","version":"1"}}}')"
[[ "$code" == 200 ]] && ok "an authenticated initialize is served" || not_ok "initialize answered $code"
kill -TERM "$pid"; for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then not_ok "SIGTERM did not stop the server within 15 s"; else wait "$pid"; rc=$?; [[ $rc -eq 0 ]] && ok "SIGTERM drains and exits 0" || not_ok "exit status $rc after SIGTERM"; fi
pid=""
if [[ -z "$TOKEN" ]] || grep -qF -- "${TOKEN##*_}" "$STAGE/serve.log"; then not_ok "the token appears in the log"; else ok "no token in the log"; fi

# deploy/'s manifests, structurally (no engine or cluster to apply them here).
cd "$ROOT"
if scripts/install-test-deps.sh >/dev/null && .cache/venv/bin/python tests/interop/deploy_check.py "$ROOT"; then
  ok "deploy/ compose and Kubernetes manifests"
else
  not_ok "deploy/ compose and Kubernetes manifests"
fi
finish

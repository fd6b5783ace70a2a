#!/usr/bin/env bash
# The container image, built and run for real: builds the Dockerfile with the operator's command,
# scripts/build-image.sh, through Debian's buildah on stand-in bases made with debootstrap (the public defaults, rust:1-slim-trixie and debian:trixie-slim,
# are not pulled: the Debian archive is the one source this test needs), then runs the image with
# podman as its non-root user and checks /healthz, the HEALTHCHECK command, a mounted configuration
# and a data volume surviving a restart. Then checks deploy/'s compose file and Kubernetes manifests
# (tests/interop/deploy_check.py).
#
# The stand-in build base is Debian trixie with gcc, like the official Rust image, and no make: the
# Dockerfile's toolchain step must install it (tikv-jemalloc-sys runs make). Its cargo and rustc are
# this machine's toolchain, mounted read-only. To add minutes rather than a full release build, the
# image is built with PROFILE=debug on copies-on-write (overlay) mounts of this checkout's target/ and
# the cargo registry, at the paths cargo compiled them under, so only teamgate itself compiles; the
# overlays drop whatever the build writes.
#
# Installs buildah, podman and debootstrap with apt-get when missing; the debootstrap root filesystems
# are cached in .cache/image/ (a rerun takes a minute or two). Skips, saying why, only where buildah
# cannot be installed or cannot build here.
# Usage: scripts/image-test.sh     (IMAGE_TEST_KEEP=1 keeps the built image)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }
finish() { echo "image: $passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit $?; }
say() { echo "[image-test] $*"; }

# deploy/'s manifests, structurally (no cluster to apply them to here).
manifests() {
  if scripts/install-test-deps.sh >/dev/null && .cache/venv/bin/python tests/interop/deploy_check.py "$ROOT"; then
    ok "deploy/ compose and Kubernetes manifests"
  else
    not_ok "deploy/ compose and Kubernetes manifests"
  fi
}
skip() { say "SKIP the image build and run: $*"; manifests; finish; }

# The Dockerfile must run these steps of image.sh and no build command of its own, take its bases as
# build arguments, and name no configuration file on its command line.
missing=""
for step in 'ARG BUILD_IMAGE=docker.io/library/rust:1-slim-trixie' 'ARG RUNTIME_IMAGE=docker.io/library/debian:trixie-slim' \
            'FROM ${BUILD_IMAGE} AS build' 'FROM ${RUNTIME_IMAGE}' 'RUN scripts/image.sh toolchain' 'RUN scripts/image.sh deps' \
            'RUN scripts/image.sh build && scripts/image.sh install /out' 'image.sh user' 'image.sh", "probe", "/healthz"' \
            'ENV TEAMGATE_CONFIG=/etc/teamgate/teamgate.toml' 'CMD ["serve"]'; do
  grep -qF "$step" Dockerfile || missing+=" [$step]"
done
grep -v '^ *#' Dockerfile | grep -q 'cargo ' && missing+=" [a cargo command outside image.sh]"
[[ -z "$missing" ]] && ok "the Dockerfile builds, installs and probes through image.sh, bases as build arguments" \
  || not_ok "Dockerfile:$missing"

# ---- tools -----------------------------------------------------------------------------------------
if ! command -v buildah >/dev/null || ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null \
   || ! command -v runc >/dev/null; then
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    skip "buildah, podman and debootstrap are missing and apt-get cannot install them here (not root, or not Debian)"
  fi
  say "installing buildah, podman, runc and debootstrap (Debian packages)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
         buildah podman debootstrap runc containernetworking-plugins uidmap >/dev/null; }; then
    skip "apt-get could not install buildah, podman and debootstrap"
  fi
fi
[[ $(id -u) -eq 0 ]] || skip "debootstrap and a rootful buildah need root; run as root (CI does)"
probe_ctr="$(buildah from scratch 2>&1)" || skip "buildah cannot create a container here: $probe_ctr"
buildah rm "$probe_ctr" >/dev/null
# runc, not Debian's default crun: crun refuses hosts with cgroups in hybrid mode (v1 controllers
# beside a v2 hierarchy), as CI's VMs have. Explicit limits: the defaults (nproc and nofile near a
# million) exceed what a sandboxed root may set.
hard_nofile="$(ulimit -Hn)"; [[ "$hard_nofile" == unlimited || "$hard_nofile" -gt 65536 ]] && hard_nofile=65536
OCI=(--runtime runc --ulimit "nofile=$hard_nofile:$hard_nofile" --ulimit nproc=4096:4096)

# ---- stand-in bases --------------------------------------------------------------------------------
# scripts/lib/standin-bases.sh, which scripts/build-image.sh uses where Docker Hub cannot be reached.
source scripts/lib/standin-bases.sh
TOOLCHAIN="$STANDIN_TOOLCHAIN"
CARGO_HOME="$STANDIN_CARGO_HOME"
IMAGE="localhost/teamgate:image-test"
WORK="$(mktemp -d)"
ctr=""; vol=""
cleanup() {
  [[ -n "$ctr" ]] && podman rm -f -t 2 "$ctr" >/dev/null 2>&1
  [[ -n "$vol" ]] && podman volume rm -f "$vol" >/dev/null 2>&1
  [[ -z "${IMAGE_TEST_KEEP:-}" ]] && buildah rmi "$IMAGE" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
if ! standin_bases; then
  not_ok "stand-in base images (debootstrap $STANDIN_SUITE)"; finish
fi
ok "stand-in bases: $STANDIN_BUILD (gcc, no make, this machine's toolchain) and $STANDIN_RUNTIME"

# ---- build -----------------------------------------------------------------------------------------
# The debug build the host's `cargo test` compiled: resolver 2 gives dependencies their test-only
# features (dev-dependencies') only in builds with test targets, so TEAMGATE_DEV_FEATURES=1 builds
# one too and reuses them, where a bin-only build would recompile tokio and a score of others.
mkdir -p "$ROOT/target"
say "scripts/build-image.sh (BASES=debian, PROFILE=debug, target/ and the cargo registry overlay-mounted)"
start=$SECONDS
extra="--quiet --layers=false ${OCI[*]} --build-arg CARGO_TARGET_DIR=$ROOT/target --build-arg TEAMGATE_DEV_FEATURES=1"
extra+=" --volume $ROOT/target:$ROOT/target:O --volume $CARGO_HOME/registry:$CARGO_HOME/registry:O"
if BUILDER=buildah BASES=debian PROFILE=debug EXTRA_BUILD_ARGS="$extra" \
     timeout 1500 scripts/build-image.sh "$IMAGE" >"$WORK/build.log" 2>&1; then
  ok "scripts/build-image.sh builds the Dockerfile on Debian's archive ($((SECONDS - start)) s; make installed by the toolchain step)"
else
  tail -n 60 "$WORK/build.log"; not_ok "scripts/build-image.sh failed"; finish
fi

# The runtime image: the stripped binary, owned by root, run by uid 10001.
c="$(buildah from "$IMAGE")" && mnt="$(buildah mount "$c")"
bin="$mnt/usr/local/bin/teamgate"
if [[ -x "$bin" ]] && ! readelf -SW "$bin" | grep -qE ' \.(symtab|debug_info) '; then
  ok "the image holds the stripped binary ($(( $(stat -c %s "$bin") / 1048576 )) MiB)"
else
  not_ok "the binary in the image is missing or not stripped"
fi
[[ -f "$mnt/etc/teamgate/teamgate.toml" && -d "$mnt/usr/share/teamgate/docs" && ! -e "$mnt/usr/bin/make" ]] \
  && ok "runtime tree: configuration, docs, no build tools" || not_ok "runtime tree incomplete or carries build tools"
buildah umount "$c" >/dev/null; buildah rm "$c" >/dev/null
health="$(podman image inspect "$IMAGE" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)[0].get("Healthcheck")))')"
[[ "$health" == *'"/usr/local/lib/teamgate/image.sh", "probe", "/healthz"'* ]] && ok "HEALTHCHECK kept in the image" \
  || not_ok "HEALTHCHECK: $health"

# ---- run -------------------------------------------------------------------------------------------
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
vol="teamgate-image-test-$$"
ctr="teamgate-image-test-$$"
# A team's configuration, mounted and layered over the image's: its own server name and a docs source
# whose relative path is next to the file.
mkdir -p "$WORK/team/handbook"
printf '[mcp]\nserver_name = "image-test-team"\n[[sources.docs]]\nname = "team"\npaths = ["handbook"]\nwatch = false\n' > "$WORK/team/team.toml"
printf '# On call\nPage the owner.\n' > "$WORK/team/handbook/oncall.md"
chmod -R a+rX "$WORK"
podman volume create "$vol" >/dev/null
start_ctr() {
  # --health-interval disable: no systemd timer (none here); the test runs the HEALTHCHECK itself.
  podman run "${OCI[@]}" --health-interval disable -d --name "$ctr" -p "127.0.0.1:$port:8080" -v "$vol:/var/lib/teamgate" -v "$WORK/team:/etc/teamgate/team:ro" \
    -e TEAMGATE_CONFIG=/etc/teamgate/teamgate.toml:/etc/teamgate/team/team.toml "$IMAGE" >/dev/null 2>>"$WORK/podman.log" \
    || { tail -n 20 "$WORK/podman.log"; return 1; }
}
healthy() {  # the HEALTHCHECK command itself, run by podman in the container
  for _ in $(seq 100); do podman healthcheck run "$ctr" >/dev/null 2>&1 && return 0; sleep 0.2; done; return 1
}
initialize() {  # initialize with TOKEN; prints the HTTP status and the body
  curl -s -m 10 -w '\n%{http_code}' -X POST "http://127.0.0.1:$port/mcp" -H "authorization: Bearer $1" \
    -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"image-test","version":"1"}}}'
}
if ! start_ctr; then not_ok "podman run"; finish; fi
if healthy; then ok "HEALTHCHECK (podman healthcheck run) passes"; else podman logs "$ctr" | tail -n 30; not_ok "never healthy"; finish; fi
code="$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/healthz")"
[[ "$code" == 200 ]] && ok "/healthz answers 200 through the published port" || not_ok "/healthz answered $code"
uid="$(podman exec "$ctr" sh -c 'id -u')"
[[ "$uid" == 10001 ]] && ok "runs as the non-root user teamgate (uid 10001)" || not_ok "runs as uid $uid"

# As `docker exec <container> teamgate token create` runs it: no --config, TEAMGATE_CONFIG applies.
TOKEN="$(podman exec "$ctr" teamgate token create --user image-tester 2>/dev/null | tail -n 1)"
[[ "$TOKEN" == tg_* ]] && ok "token create in the running container" || not_ok "token create: $TOKEN"
reply="$(initialize "$TOKEN")"
[[ "${reply##*$'\n'}" == 200 && "$reply" == *'"name":"image-test-team"'* ]] \
  && ok "the mounted configuration is served (serverInfo.name image-test-team)" || not_ok "initialize: $reply"
effective="$(podman exec "$ctr" teamgate check-config 2>&1)"
[[ "$effective" == *'/etc/teamgate/team/handbook'* && "$effective" == *"configuration is valid"* ]] \
  && ok "check-config in the image: valid, the team's relative docs path next to its file" \
  || not_ok "check-config in the image: $(tail -n 5 <<<"$effective")"

# Restart with the same volume: the token (in the SQLite store) still works.
# (podman's stderr goes to a log: without systemd it complains about healthcheck timers it cannot set.)
podman stop -t 20 "$ctr" >/dev/null 2>>"$WORK/podman.log"; rc="$(podman inspect --format '{{.State.ExitCode}}' "$ctr")"
[[ "$rc" == 0 ]] && ok "SIGTERM drains and exits 0" || { podman logs "$ctr" | tail -n 20; not_ok "exit status $rc after stop"; }
podman rm "$ctr" >/dev/null 2>>"$WORK/podman.log"
if start_ctr && healthy; then
  reply="$(initialize "$TOKEN")"
  [[ "${reply##*$'\n'}" == 200 ]] && ok "the data volume survives a restart (the token still authenticates)" \
    || not_ok "after restart: $reply"
else
  not_ok "the container did not come back on the same volume"
fi
logs="$(podman logs "$ctr" 2>&1)"
grep -q '"level":"INFO"' <<<"$logs" && ok "logs are JSON, as configured for the image" || not_ok "logs are not JSON"
if [[ -z "$TOKEN" ]] || grep -qF -- "${TOKEN##*_}" <<<"$logs"; then not_ok "the token appears in the log"; else ok "no token in the log"; fi

manifests
finish

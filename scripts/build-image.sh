#!/usr/bin/env bash
# Builds teamgate's production container image from the Dockerfile, in Docker format (so the
# HEALTHCHECK stays), with buildah or docker:
#   scripts/build-image.sh [TAG]        TAG defaults to teamgate:<version in Cargo.toml>
# Then push it to the team's registry (buildah push / docker push) and name it in
# deploy/k8s/base/deployment.yaml or deploy/compose.yaml.
#
# Bases: the official docker.io/library/rust:1-slim-trixie and debian:trixie-slim when the
# registry answers. When it does not (no Docker Hub from here), with buildah as root: stand-ins
# made from Debian's archive with debootstrap (scripts/lib/standin-bases.sh), the build one
# running this machine's Rust toolchain, mounted read-only. BASES=official or BASES=debian forces one.
#
# Time on 2 cores from clean: PROFILE=dist (the default: fat LTO, the fastest binary) about 34
# minutes; PROFILE=release about 9 (BENCHMARKS.md "Build profiles").
# Environment: PROFILE (dist), BASES (auto|official|debian), BUILDER (buildah|docker; the first
# found), and EXTRA_BUILD_ARGS (more `buildah bud` arguments; scripts/image-test.sh uses it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "[build-image] $*"; }
die() { echo "[build-image] $*" >&2; exit 1; }

VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
TAG="${1:-teamgate:$VERSION}"
PROFILE="${PROFILE:-dist}"
BASES="${BASES:-auto}"
OFFICIAL_BUILD=docker.io/library/rust:1-slim-trixie
OFFICIAL_RUNTIME=docker.io/library/debian:trixie-slim
BUILDER="${BUILDER:-$(command -v buildah >/dev/null && echo buildah || { command -v docker >/dev/null && echo docker; } || true)}"
[[ -n "$BUILDER" ]] || die "neither buildah nor docker is installed (Debian: apt-get install buildah)"
read -r -a EXTRA <<<"${EXTRA_BUILD_ARGS:-}"
# docker needs its daemon for everything; without it every pull fails too, and the real cause would
# read as "docker.io cannot be reached". Say it first.
if [[ "$BUILDER" == docker ]] && ! why="$(timeout 20 docker info 2>&1 >/dev/null)"; then
  die "docker is installed but its daemon does not answer ($(head -n1 <<<"$why")): start it (systemctl start docker) or install buildah, which needs no daemon (apt-get install buildah)"
fi

official_reachable() {
  case "$BUILDER" in
    buildah) timeout 120 buildah pull --quiet "$OFFICIAL_BUILD" >/dev/null 2>&1 \
               && timeout 120 buildah pull --quiet "$OFFICIAL_RUNTIME" >/dev/null 2>&1 ;;
    docker) timeout 120 docker pull --quiet "$OFFICIAL_BUILD" >/dev/null 2>&1 \
              && timeout 120 docker pull --quiet "$OFFICIAL_RUNTIME" >/dev/null 2>&1 ;;
  esac
}

if [[ "$BASES" == auto ]]; then
  if official_reachable; then BASES=official; else
    say "the official bases cannot be pulled from docker.io: using stand-ins from Debian's archive"
    BASES=debian
  fi
fi
ARGS=(--build-arg "PROFILE=$PROFILE" -t "$TAG" -f Dockerfile)
if [[ "$BASES" == debian ]]; then
  [[ "$BUILDER" == buildah ]] || die "the Debian stand-in bases need buildah (they mount this machine's toolchain); apt-get install buildah"
  [[ "$(id -u)" == 0 ]] || die "the Debian stand-in bases need root (debootstrap)"
  command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
  # shellcheck source=lib/standin-bases.sh
  source scripts/lib/standin-bases.sh
  standin_bases || die "the stand-in bases could not be made"
  mkdir -p "$STANDIN_CARGO_HOME/registry"
  ARGS+=(--build-arg "BUILD_IMAGE=$STANDIN_BUILD" --build-arg "RUNTIME_IMAGE=$STANDIN_RUNTIME"
         --volume "$STANDIN_TOOLCHAIN:$STANDIN_TOOLCHAIN:ro" --network host)
  # The crates this machine downloaded already, copy-on-write (the build's writes are dropped).
  [[ " ${EXTRA[*]} " == *"/registry:"* ]] || ARGS+=(--volume "$STANDIN_CARGO_HOME/registry:$STANDIN_CARGO_HOME/registry:O")
fi
start=$SECONDS
say "$BUILDER: $TAG (PROFILE=$PROFILE, $BASES bases)"
case "$BUILDER" in
  buildah) buildah bud --format docker --layers "${ARGS[@]}" "${EXTRA[@]}" . ;;
  docker) docker build "${ARGS[@]}" "${EXTRA[@]}" . ;;
  *) die "BUILDER must be buildah or docker, not $BUILDER" ;;
esac
say "built $TAG in $((SECONDS - start)) s"

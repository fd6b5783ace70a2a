# Stand-in base images made from Debian's archive with debootstrap, for building the Dockerfile
# where Docker Hub (the official rust:1-slim-trixie and debian:trixie-slim) cannot be reached.
# Used by scripts/build-image.sh (an operator's build) and scripts/image-test.sh (the test).
#   source scripts/lib/standin-bases.sh
#   standin_bases        # makes $STANDIN_BUILD and $STANDIN_RUNTIME; non-zero on failure
# The build base is Debian trixie with gcc and no make (like the official Rust image; the
# Dockerfile's toolchain step installs make). Its cargo and rustc are this machine's toolchain
# ($STANDIN_TOOLCHAIN, to be mounted read-only into the build), CARGO_HOME at this machine's path.
# Needs root, buildah and debootstrap. Root filesystems are cached in .cache/image/.
STANDIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STANDIN_CACHE="$STANDIN_ROOT/.cache/image"
STANDIN_SUITE=trixie
STANDIN_MIRROR="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* | grep -v security | awk 'NR == 1 {print $2}' || true)"
STANDIN_MIRROR="${STANDIN_MIRROR:-http://deb.debian.org/debian}"
STANDIN_TOOLCHAIN="$(rustc --print sysroot 2>/dev/null || true)"
STANDIN_CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
STANDIN_BUILD="localhost/teamgate-standin-build:$STANDIN_SUITE"
STANDIN_RUNTIME="localhost/teamgate-standin-runtime:$STANDIN_SUITE"

# standin NAME IMAGE PACKAGES [ENV...]: a debootstrap root filesystem (cached as a tarball) committed
# as IMAGE, unless IMAGE exists with the same recipe.
standin() {
  local name="$1" image="$2" packages="$3"; shift 3
  local recipe="$STANDIN_SUITE $STANDIN_MIRROR $packages $*"
  local stamp; stamp="$(sha256sum <<<"$recipe" | cut -c1-12)"
  if [[ "$(buildah inspect --type image --format '{{index .ImageAnnotations "teamgate.standin"}}' "$image" 2>/dev/null)" == "$stamp" ]]; then
    return 0
  fi
  mkdir -p "$STANDIN_CACHE/debs"
  local tarball="$STANDIN_CACHE/$name-$STANDIN_SUITE-$stamp.tar"
  if [[ ! -f "$tarball" ]]; then
    echo "[standin] debootstrap $STANDIN_SUITE ($name: $packages) from $STANDIN_MIRROR"
    local work; work="$(mktemp -d)"
    timeout 900 debootstrap --variant=minbase --include="$packages" --cache-dir="$STANDIN_CACHE/debs" \
      "$STANDIN_SUITE" "$work/root" "$STANDIN_MIRROR" >"$work/log" 2>&1 || { tail -n 20 "$work/log"; rm -rf "$work"; return 1; }
    # Like Debian's official images: no apt caches, the mirror this machine uses.
    rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/*
    rm -f "$STANDIN_CACHE/$name-$STANDIN_SUITE-"*.tar
    tar -C "$work/root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$work"
  fi
  local c; c="$(buildah from scratch)" || return 1
  local mnt; mnt="$(buildah mount "$c")" || return 1
  tar -C "$mnt" -xf "$tarball" && buildah umount "$c" >/dev/null || return 1
  local env=()
  for e in "$@"; do env+=(--env "$e"); done
  buildah config "${env[@]}" --cmd /bin/bash --annotation "teamgate.standin=$stamp" "$c" >/dev/null \
    && buildah commit --quiet --rm "$c" "$image" >/dev/null
}

standin_bases() {
  [[ -n "$STANDIN_TOOLCHAIN" ]] || { echo "[standin] no rustc on PATH: the stand-in build base uses this machine's toolchain"; return 1; }
  standin runtime "$STANDIN_RUNTIME" ca-certificates \
    && standin build "$STANDIN_BUILD" ca-certificates,gcc,libc6-dev \
         "PATH=$STANDIN_TOOLCHAIN/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
         "CARGO_HOME=$STANDIN_CARGO_HOME"
}

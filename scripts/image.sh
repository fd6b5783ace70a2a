#!/usr/bin/env bash
# The container image's build and install steps, in one place: the Dockerfile runs them, and
# scripts/image-test.sh builds that Dockerfile with buildah and runs the image.
#   scripts/image.sh toolchain       install what the dependencies' builds run beyond cargo and cc
#                                    (make, for tikv-jemalloc-sys; binutils' strip) when missing
#   scripts/image.sh deps            build only the dependencies (the cached layer) from Cargo.toml/lock
#   scripts/image.sh build           build teamgate (PROFILE=dist by default; the test uses debug)
#   scripts/image.sh install ROOT    lay out the runtime tree under ROOT: /usr/local/bin/teamgate
#                                    (stripped), /etc/teamgate/teamgate.toml, /usr/share/teamgate (docs),
#                                    /var/lib/teamgate
#   scripts/image.sh user            create the unprivileged `teamgate` user and give it /var/lib/teamgate
#   scripts/image.sh probe PATH [PORT]  GET http://127.0.0.1:PORT/PATH with bash alone (no curl in the
#                                    image); exits 0 on a 200. The image's HEALTHCHECK.
set -euo pipefail
PROFILE="${PROFILE:-dist}"
# A build argument left unset arrives as an empty variable, which cargo would refuse.
[[ -n "${CARGO_TARGET_DIR:-}" ]] || unset CARGO_TARGET_DIR
TARGET="${CARGO_TARGET_DIR:-target}"
# TEAMGATE_DEV_FEATURES=1 (the image test): resolve dependency features as `cargo test` does, by
# building a test target too, so the build reuses dependencies compiled by `cargo test`.
if [[ -n "${TEAMGATE_DEV_FEATURES:-}" ]]; then DEPS_TARGETS=(--all-targets); BUILD_TARGETS=(--bin teamgate --test api)
else DEPS_TARGETS=(); BUILD_TARGETS=(--bin teamgate); fi
out_dir() { if [[ "$PROFILE" == dev || "$PROFILE" == debug ]]; then echo "$TARGET/debug"; else echo "$TARGET/$PROFILE"; fi; }
cargo_profile() { if [[ "$PROFILE" == debug ]]; then echo dev; else echo "$PROFILE"; fi; }

case "${1:-}" in
  toolchain)
    # The official Rust image has cargo and gcc but no make, which tikv-jemalloc-sys's build runs.
    need=()
    command -v make >/dev/null || need+=(make)
    command -v strip >/dev/null || need+=(binutils)
    command -v cc >/dev/null || need+=(gcc libc6-dev)
    if [[ ${#need[@]} -gt 0 ]]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
      rm -rf /var/lib/apt/lists/*
    fi
    ;;
  deps)
    # Dummy sources so `cargo build` compiles every dependency; the real sources arrive in a later
    # layer, so editing them never rebuilds this one.
    mkdir -p src
    [[ -f src/main.rs ]] || { echo 'fn main() {}' > src/main.rs; touch src/.dummy-main; }
    [[ -f src/lib.rs ]] || { echo '' > src/lib.rs; touch src/.dummy-lib; }
    cargo build --locked --profile "$(cargo_profile)" "${DEPS_TARGETS[@]}"
    [[ -f src/.dummy-main ]] && rm -f src/main.rs src/.dummy-main
    [[ -f src/.dummy-lib ]] && rm -f src/lib.rs src/.dummy-lib
    # Forget the dummy crate so the real one is rebuilt.
    rm -rf "$(out_dir)"/teamgate "$(out_dir)"/deps/teamgate-* "$(out_dir)"/deps/libteamgate-* \
      "$(out_dir)"/.fingerprint/teamgate-*
    touch "$TARGET/.image-deps-only"
    ;;
  build)
    # After `deps`, the copied sources may be older than the dummy build: make cargo see them.
    if [[ -f "$TARGET/.image-deps-only" ]]; then touch src/main.rs src/lib.rs; rm -f "$TARGET/.image-deps-only"; fi
    cargo build --locked --profile "$(cargo_profile)" "${BUILD_TARGETS[@]}"
    ;;
  install)
    ROOT="${2:?usage: image.sh install ROOT}"
    # Stripped: symbols and line tables are most of the file (about 150 MB of 180).
    install -D -m 0755 --strip "$(out_dir)/teamgate" "$ROOT/usr/local/bin/teamgate"
    install -D -m 0644 deploy/container.toml "$ROOT/etc/teamgate/teamgate.toml"
    install -d -m 0755 "$ROOT/usr/share/teamgate/docs" "$ROOT/var/lib/teamgate"
    install -m 0644 README.md "$ROOT/usr/share/teamgate/README.md"
    cp -R docs/. "$ROOT/usr/share/teamgate/docs/"
    ;;
  user)
    useradd --system --uid 10001 --user-group --home-dir /var/lib/teamgate --shell /usr/sbin/nologin teamgate
    install -d -o teamgate -g teamgate -m 0750 /var/lib/teamgate
    ;;
  probe)
    path="${2:?usage: image.sh probe PATH [PORT]}"; port="${3:-8080}"
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" >&3
    IFS= read -r -t 5 status <&3
    [[ "$status" == *" 200 "* ]]
    ;;
  *)
    sed -n '2,15p' "$0"; exit 2 ;;
esac

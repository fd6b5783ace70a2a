#!/usr/bin/env bash
# The container image's build and install steps, in one place: the Dockerfile runs them, and
# scripts/image-test.sh runs the same steps on this machine (which has no Docker engine), so the two
# cannot drift.
#   scripts/image.sh deps            build only the dependencies (the cached layer) from Cargo.toml/lock
#   scripts/image.sh build           build teamgate (PROFILE=release by default; the test uses debug)
#   scripts/image.sh install ROOT    lay out the runtime tree under ROOT: /usr/local/bin/teamgate,
#                                    /etc/teamgate/teamgate.toml, /usr/share/teamgate (docs), /var/lib/teamgate
#   scripts/image.sh user            create the unprivileged `teamgate` user and give it /var/lib/teamgate
#   scripts/image.sh probe PATH [PORT]  GET http://127.0.0.1:PORT/PATH with bash alone (no curl in the
#                                    image); exits 0 on a 200. The image's HEALTHCHECK.
set -euo pipefail
PROFILE="${PROFILE:-release}"
TARGET="${CARGO_TARGET_DIR:-target}"
out_dir() { if [[ "$PROFILE" == dev || "$PROFILE" == debug ]]; then echo "$TARGET/debug"; else echo "$TARGET/$PROFILE"; fi; }
cargo_profile() { if [[ "$PROFILE" == debug ]]; then echo dev; else echo "$PROFILE"; fi; }

case "${1:-}" in
  deps)
    # Dummy sources so `cargo build` compiles every dependency; the real sources arrive in a later
    # layer, so editing them never rebuilds this one.
    mkdir -p src
    [[ -f src/main.rs ]] || { echo 'fn main() {}' > src/main.rs; touch src/.dummy-main; }
    [[ -f src/lib.rs ]] || { echo '' > src/lib.rs; touch src/.dummy-lib; }
    cargo build --locked --profile "$(cargo_profile)"
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
    # shellcheck disable=SC2086  # TEAMGATE_BUILD_TARGETS is a list of cargo arguments
    cargo build --locked --profile "$(cargo_profile)" ${TEAMGATE_BUILD_TARGETS:---bin teamgate}
    ;;
  install)
    ROOT="${2:?usage: image.sh install ROOT}"
    install -D -m 0755 "$(out_dir)/teamgate" "$ROOT/usr/local/bin/teamgate"
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
    sed -n '2,13p' "$0"; exit 2 ;;
esac

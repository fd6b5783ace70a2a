# syntax=docker/dockerfile:1
# teamgate's container image. Every build and install step is in scripts/image.sh;
# scripts/image-test.sh builds this file with buildah (on stand-in bases) and runs the image.
#   scripts/build-image.sh teamgate      (buildah or docker; Debian's archive when docker.io is unreachable)
#   docker run -p 8080:8080 -v teamgate-data:/var/lib/teamgate teamgate
#   docker run --rm -v teamgate-data:/var/lib/teamgate teamgate token create --user alice
# A team's own configuration (deploy/README.md, "One container on SQLite"):
#   docker run -p 8080:8080 -v teamgate-data:/var/lib/teamgate -v "$PWD/team:/etc/teamgate/team:ro" \
#     -e TEAMGATE_CONFIG=/etc/teamgate/teamgate.toml:/etc/teamgate/team/team.toml teamgate
# The bases are build arguments (--build-arg BUILD_IMAGE=... RUNTIME_IMAGE=...); the build image
# must be Debian-based with cargo on PATH (apt-get installs what is missing), the runtime Debian.

ARG BUILD_IMAGE=docker.io/library/rust:1-slim-trixie
ARG RUNTIME_IMAGE=docker.io/library/debian:trixie-slim

FROM ${BUILD_IMAGE} AS build
# dist: fat LTO (Cargo.toml); the image test builds with debug to reuse its compiled dependencies.
ARG PROFILE=dist
# Where cargo builds, and dependency features as `cargo test` resolves them: set by the image test.
ARG CARGO_TARGET_DIR=
ARG TEAMGATE_DEV_FEATURES=
WORKDIR /src
COPY scripts/image.sh scripts/image.sh
RUN scripts/image.sh toolchain
# Dependencies first: this layer is rebuilt only when Cargo.toml or Cargo.lock change.
COPY Cargo.toml Cargo.lock ./
COPY .cargo/config.toml .cargo/config.toml
RUN scripts/image.sh deps
COPY . .
RUN scripts/image.sh build && scripts/image.sh install /out

FROM ${RUNTIME_IMAGE}
COPY --from=build /src/scripts/image.sh /usr/local/lib/teamgate/image.sh
# bubblewrap and util-linux's prlimit: sandboxed command tools and stdio upstreams (docs/security.md).
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates bubblewrap util-linux \
    && rm -rf /var/lib/apt/lists/* \
    && /usr/local/lib/teamgate/image.sh user
COPY --from=build /out/ /
RUN chown -R teamgate:teamgate /var/lib/teamgate
USER teamgate
WORKDIR /var/lib/teamgate
# Every command (serve, token, audit...) reads these files, ':'-separated, later ones winning,
# unless it is given --config. Mount a team's file and list it here, or mount over this one.
ENV TEAMGATE_CONFIG=/etc/teamgate/teamgate.toml
# Sessions, stream events, tokens and the audit trail (SQLite) live here.
VOLUME ["/var/lib/teamgate"]
# 8080: the MCP endpoint, /healthz, /readyz, /metrics.
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/lib/teamgate/image.sh", "probe", "/healthz"]
ENTRYPOINT ["/usr/local/bin/teamgate"]
CMD ["serve"]

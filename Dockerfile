# syntax=docker/dockerfile:1
# teamgate's container image. Every build and install step is in scripts/image.sh, which
# scripts/image-test.sh also runs (building and starting the binary the way this image does).
#   docker build -t teamgate .
#   docker run -p 8080:8080 -v teamgate-data:/var/lib/teamgate teamgate
#   docker run --rm -v teamgate-data:/var/lib/teamgate teamgate token create --user alice

FROM rust:1-slim-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is rebuilt only when Cargo.toml or Cargo.lock change.
COPY Cargo.toml Cargo.lock ./
COPY scripts/image.sh scripts/image.sh
RUN scripts/image.sh deps
COPY . .
RUN scripts/image.sh build && scripts/image.sh install /out

FROM debian:bookworm-slim
COPY --from=build /src/scripts/image.sh /usr/local/lib/teamgate/image.sh
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && /usr/local/lib/teamgate/image.sh user
COPY --from=build /out/ /
RUN chown -R teamgate:teamgate /var/lib/teamgate
USER teamgate
WORKDIR /var/lib/teamgate
# Sessions, stream events, tokens and the audit trail (SQLite) live here.
VOLUME ["/var/lib/teamgate"]
# 8080: the MCP endpoint, /healthz, /readyz, /metrics.
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/lib/teamgate/image.sh", "probe", "/healthz"]
ENTRYPOINT ["/usr/local/bin/teamgate"]
CMD ["serve", "--config", "/etc/teamgate/teamgate.toml"]

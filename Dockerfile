# syntax=docker/dockerfile:1
# engage: build with the official Swift image, run on a slim Debian with only the shared libraries
# the binary needs: libpq, libmicrohttpd and GnuTLS (HTTPS), zlib, and libcurl (FoundationNetworking,
# used by `engage simulate`); curl for the health check, which speaks HTTPS when engage does. The Swift standard library and Foundation are linked statically, so the
# runtime image needs no Swift toolchain.

FROM swift:6.3-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libpq-dev libmicrohttpd-dev libgnutls28-dev zlib1g-dev pkg-config libcurl4-openssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The manifest names every target, test targets included, so their folders must be present.
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks/EngageClientBench ./Benchmarks/EngageClientBench
RUN swift build -c release --product engage --static-swift-stdlib \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/engage" /out/engage

FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libpq5 libmicrohttpd12 libgnutls30 zlib1g libcurl4 curl libstdc++6 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 engage \
    && useradd --system --uid 10001 --gid engage --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin engage
COPY --from=build /out/engage /usr/local/bin/engage
# Migrations and views: engage migrate applies them, engage serve checks them in /readyz.
COPY sql /usr/local/share/engage/sql
ENV ENGAGE_SQL_DIR=/usr/local/share/engage/sql \
    ENGAGE_LOG_FORMAT=logfmt
USER 10001:10001
EXPOSE 8080
# /healthz, over HTTPS when ENGAGE_TLS_CERT is set (-k: the certificate names the public host, not
# 127.0.0.1). It assumes the default port 8080; services started with another command (migrate,
# project) turn it off in docker-compose.yml.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["sh", "-c", "curl -fsSk -o /dev/null http${ENGAGE_TLS_CERT:+s}://127.0.0.1:8080/healthz"]
ENTRYPOINT ["engage"]
CMD ["serve", "--listen", "0.0.0.0:8080"]

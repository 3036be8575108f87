# Herald in a container: built on the Swift image, run on Debian slim with only the runtime libraries.
#   docker build -t herald .
#   docker run --rm -p 8080:8080 -v herald-data:/var/lib/herald herald
FROM swift:6.3-bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libmicrohttpd-dev libsqlite3-dev libpq-dev pkg-config >/dev/null \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The manifest first, so the dependency layer is cached while only sources change.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
# Sources/HeraldServer/Resources/openapi.yaml links to this one; the build embeds it.
COPY openapi.yaml ./
COPY Tests ./Tests
RUN swift build -c release --product herald --static-swift-stdlib \
 && install -D .build/release/herald /out/herald && strip /out/herald

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libmicrohttpd12 libsqlite3-0 libpq5 >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin herald \
 && install -d -o herald -g herald -m 0750 /var/lib/herald
COPY --from=build /out/herald /usr/local/bin/herald
USER herald
ENV HERALD_HOST=0.0.0.0 \
    HERALD_PORT=8080 \
    HERALD_DATA_DIR=/var/lib/herald
# The store: mount a volume here to keep state across containers.
VOLUME /var/lib/herald
EXPOSE 8080
# bash's /dev/tcp: no curl or wget needed in the image. Ready, not only live: a draining Herald
# (SIGTERM, --drain-seconds) reports unhealthy, so traffic moves before its streams end.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${HERALD_PORT} && printf 'GET /health/ready HTTP/1.0\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
LABEL org.opencontainers.image.title="Herald" org.opencontainers.image.version="0.1.0"
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/herald"]

# devpilot's container image: one image for every command.
#
#   docker build -t devpilot .            (or: podman build -t devpilot .)
#   docker run --rm -p 8080:8080 --read-only -v devpilot-data:/data devpilot           # run
#   docker run --rm --read-only devpilot serve | worker | migrate                        # the others
#
# The image runs as uid/gid 65532 (no root, no shell, no package manager), on
# a read-only root filesystem: the only path it writes is /data (the embedded
# SQLite database, its secret key and the sandbox's token in `run`, and every
# temporary file: TMPDIR is /data too).
#
# No HEALTHCHECK: orchestrators probe over HTTP. `run` and `serve` answer
# GET /livez (the process is alive) and GET /readyz (it can take traffic: 503
# while a migration is pending or while it stops) on :8080; `worker` answers
# both, and /metrics, on :9091.
#
# Build arguments: VERSION (what `devpilot version` prints, e.g.
# --build-arg VERSION=$(git describe --always --dirty)) and BUILD_TAGS
# (--build-arg BUILD_TAGS=nosandbox builds a binary without the sandbox
# providers). hosts/devpilot/image_test.go builds the run stage below, as it
# is, on a binary built by the test: keep the run stage free of RUN steps.

# ---- build: a static binary, and the files of the run stage under /out ----
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
# The modules first, in a layer of their own: it is rebuilt only when go.mod
# or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=""
ARG BUILD_TAGS=""
# /out/root is copied to / as root-owned (read-only to the image's user);
# /out/owned to / as the image's user: only /data.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
      go build -trimpath -tags "$BUILD_TAGS" -ldflags "-s -w -X main.version=$VERSION" \
      -o /out/root/devpilot ./hosts/devpilot \
 && mkdir -p /out/root/etc/ssl/certs /out/owned/data \
 && cp /etc/ssl/certs/ca-certificates.crt /out/root/etc/ssl/certs/ca-certificates.crt \
 && chmod 0755 /out/root/devpilot && chmod 0700 /out/owned/data

# ---- run: the binary, CA certificates and /data on an empty base ----
FROM scratch AS run
ARG VERSION=""
LABEL org.opencontainers.image.title="devpilot" \
      org.opencontainers.image.description="devpilot: an AI assistant, specification engine, cloud, content and GitHub integration for product teams (run, serve, worker, migrate)" \
      org.opencontainers.image.source="https://github.com/devpilot/devpilot" \
      org.opencontainers.image.version="$VERSION"
COPY --from=build /out/root/ /
COPY --from=build --chown=65532:65532 /out/owned/ /
USER 65532:65532
# DEVPILOT_HTTP_ADDR: `run` listens on loopback by default, unreachable from
# outside a container. DEVPILOT_WORKER_ADDR: likewise the worker's probes and
# metrics. TMPDIR: spooled request bodies, audio and webhook payloads, and
# SQLite's temporary files, on the one writable path.
ENV DEVPILOT_DATA_DIR=/data \
    DEVPILOT_HTTP_ADDR=:8080 \
    DEVPILOT_WORKER_ADDR=:9091 \
    TMPDIR=/data
VOLUME /data
WORKDIR /data
EXPOSE 8080 9091
ENTRYPOINT ["/devpilot"]
CMD ["run"]

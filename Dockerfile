# Engram server image: a static binary on a distroless base, run as a
# non-root user, with the data dir as a volume.
#
#   docker build -t engram .
#   docker run -p 8080:8080 -v engram-data:/data engram
#
# NOT RUN HERE: no container engine runs on the development machines. What
# is tested (deploy/deploy_test.go): the build stage's `go build` command,
# run as written with the same flags, gives a static binary; and the
# HEALTHCHECK's command (`engram healthcheck`) is tested against a live,
# a failing and a stopped server (internal/cli/e2e_serve_test.go).

# Build: the SQLite driver (modernc.org/sqlite) is pure Go, so the binary
# needs no C library and runs on an image without one.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
RUN mkdir /data
RUN CGO_ENABLED=0 go build -ldflags "-s -w -X github.com/engram-memory/engram/internal/cli.version=${VERSION} -X github.com/engram-memory/engram/internal/cli.commit=${COMMIT}" -o /out/engram ./cmd/engram

# Run: distroless static has no shell and no curl; the health check is the
# binary's own `engram healthcheck`.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/engram /engram
# The data dir (SQLite log and read models, embedded index state, outbox);
# the nonroot user (65532) owns it.
COPY --from=build --chown=65532:65532 /data /data
VOLUME ["/data"]
USER 65532:65532
# 8080: the API; 9464: Prometheus metrics (/metrics).
EXPOSE 8080 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/engram", "healthcheck", "--url", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/engram"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--data-dir", "/data", "--metrics-addr", "0.0.0.0:9464"]

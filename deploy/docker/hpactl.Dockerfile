# syntax=docker/dockerfile:1
# Image of the hpactl CLI: a static binary (CGO off) on distroless, running as
# the nonroot user (65532). Build from the repository root:
#   docker build -f deploy/docker/hpactl.Dockerfile -t hpactl:dev .
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/hpactl ./cmd/hpactl

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/hpactl /usr/local/bin/hpactl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hpactl"]

# syntax=docker/dockerfile:1
# Image of hpa-scaler, the in-cluster client: a static binary (CGO off) on distroless, running as
# the nonroot user (65532). Build from the repository root:
#   docker build -f deploy/docker/hpa-scaler.Dockerfile -t hpa-scaler:dev .
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
    go build -trimpath -ldflags="-s -w" -o /out/hpa-scaler ./cmd/hpa-scaler

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/hpa-scaler /usr/local/bin/hpa-scaler
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/hpa-scaler"]

# syntax=docker/dockerfile:1
# Image of the hpa-recommender gRPC service: a static binary (CGO off) on distroless, running as
# the nonroot user (65532). Build from the repository root:
#   docker build -f deploy/docker/hpa-recommender.Dockerfile -t hpa-recommender:dev .
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
    go build -trimpath -ldflags="-s -w" -o /out/hpa-recommender ./cmd/hpa-recommender

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/hpa-recommender /usr/local/bin/hpa-recommender
USER 65532:65532
# Listen on every interface in a container (the binary defaults to loopback for `make run`);
# flags and the manifests override these.
ENV HPA_RECOMMENDER_LISTEN=:50051 \
    HPA_RECOMMENDER_METRICS_LISTEN=:9090
EXPOSE 50051 9090
ENTRYPOINT ["/usr/local/bin/hpa-recommender"]

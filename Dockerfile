# syntax=docker/dockerfile:1
# The pipeline image: a static binary on distroless, non-root.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t pipeline .
#
# Machines that cannot pull base images build the same image offline with
# `make image` (deploy/imagebuild assembles it from bin/pipeline).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
# Set by BuildKit and buildah from --platform; linux/amd64 otherwise.
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/pipeline ./cmd/pipeline

# distroless/static: CA certificates, tzdata, /tmp, and the nonroot user
# 65532; no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="pipeline" \
      org.opencontainers.image.description="Declarative pipelines that keep eBPF maps, NATS and audit trails in sync with Kubernetes" \
      org.opencontainers.image.source="https://github.com/pipeline/pipeline" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/pipeline /pipeline
USER 65532:65532
# 9464: /metrics, /healthz, /readyz (the manifests pass --listen 0.0.0.0:9464).
EXPOSE 9464
ENTRYPOINT ["/pipeline"]
CMD ["run", "/etc/pipeline"]

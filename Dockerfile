# syntax=docker/dockerfile:1
#
# vllm-prober container image: a static Go binary on a distroless runtime.
#
#   docker build -t vllm-prober \
#     --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg BRANCH=$(git rev-parse --abbrev-ref HEAD) \
#     --build-arg BUILD_DATE=$(date -u +%Y%m%d-%H:%M:%S) .
#
# The build stage runs deploy/build.sh, the one build command (`make build`
# and deploy/check.sh run it too; deploy/deploytest checks its flags).

ARG GO_VERSION=1.26

# The build stage runs on the build machine and cross-compiles for the
# target platform (docker buildx build --platform linux/amd64,linux/arm64).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_USER=docker
ARG BUILD_DATE=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    VERSION=${VERSION} REVISION=${REVISION} BRANCH=${BRANCH} BUILD_USER=${BUILD_USER} BUILD_DATE=${BUILD_DATE} \
      deploy/build.sh /out/vllm-prober

# distroless/static carries CA certificates, tzdata and /etc/passwd with the
# nonroot user (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="vllm-prober" \
      org.opencontainers.image.description="Client-side SLO prober and Prometheus exporter for vLLM" \
      org.opencontainers.image.source="https://github.com/vllm-prober/vllm-prober" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/vllm-prober /vllm-prober
COPY deploy/docker/vllm-prober.yml /etc/vllm-prober/vllm-prober.yml
WORKDIR /etc/vllm-prober
USER 65532:65532
EXPOSE 9478
ENTRYPOINT ["/vllm-prober"]
CMD ["run", "--config.file=/etc/vllm-prober/vllm-prober.yml"]

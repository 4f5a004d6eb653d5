#!/bin/sh
# The one build command of vllm-prober: `make build`, the Dockerfile's build
# stage and deploy/check.sh all run it, so the flags live here only
# (deploy/deploytest checks them and that every caller runs this script).
#
#   deploy/build.sh [OUTPUT]        (default: ./vllm-prober, from the
#                                    working directory)
#
# The build information of `--version` and vllm_prober_build_info comes
# from the environment, with defaults taken from the repository: VERSION
# (the VERSION file, else 0.1.0), REVISION (git HEAD), BRANCH, BUILD_USER
# (user@host) and BUILD_DATE (now, UTC). GOOS and GOARCH cross-compile as
# usual.
set -eu
out="${1:-vllm-prober}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cd "$(dirname "$0")/.."
VERSION="${VERSION:-$(cat VERSION 2>/dev/null || echo 0.1.0)}"
REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
BRANCH="${BRANCH:-$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)}"
BUILD_USER="${BUILD_USER:-$(whoami 2>/dev/null || echo unknown)@$(hostname 2>/dev/null || echo unknown)}"
BUILD_DATE="${BUILD_DATE:-$(date -u +%Y%m%d-%H:%M:%S)}"
CGO_ENABLED=0 \
  go build -trimpath \
    -ldflags "-s -w \
      -X github.com/prometheus/common/version.Version=${VERSION} \
      -X github.com/prometheus/common/version.Revision=${REVISION} \
      -X github.com/prometheus/common/version.Branch=${BRANCH} \
      -X github.com/prometheus/common/version.BuildUser=${BUILD_USER} \
      -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
    -o "$out" .

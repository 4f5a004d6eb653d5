#!/usr/bin/env bash
# Checks of the deployment artefacts that need tools outside Go's test
# runner: the build command (deploy/build.sh, run here outside Docker), the
# shipped prober configs, the Helm chart (helm lint and helm template) and
# the compose stack's Prometheus and Alertmanager configs (promtool, amtool).
# The strict decoding of manifests and rendered charts is in
# deploy/deploytest (`go test ./deploy/deploytest`, and `-tags e2e` for the
# chart and kustomize output). Needs go, promtool and amtool on PATH
# (promtool and amtool: Debian's prometheus and prometheus-alertmanager
# packages); helm and kustomize run at the versions pinned in tools/go.mod
# through `go tool`, so nothing else has to be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "--- deploy/check.sh: $*"; }
need() {
  command -v "$1" >/dev/null 2>&1 || { echo "deploy/check.sh: $1 not found on PATH ($2)" >&2; exit 1; }
}
need go "install Go"
need promtool "apt-get install prometheus"
need amtool "apt-get install prometheus-alertmanager"
helm() { go tool -modfile=tools/go.mod helm "$@"; }
kustomize() { go tool -modfile=tools/go.mod kustomize "$@"; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

step "the build command of the Dockerfile and make build (deploy/build.sh), outside Docker"
VERSION=0.0.0-check
REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
BRANCH=check
VERSION="$VERSION" REVISION="$REVISION" BRANCH="$BRANCH" BUILD_USER=check.sh deploy/build.sh "$out/vllm-prober"
bin="$out/vllm-prober"
"$bin" --version 2>&1 | grep -qF "version ${VERSION} (branch: ${BRANCH}, revision: ${REVISION})" ||
  { echo "vllm-prober --version does not carry the -ldflags build information" >&2; "$bin" --version >&2; exit 1; }
go version -m "$bin" | grep -q 'CGO_ENABLED=0' || { echo "binary was not built with CGO_ENABLED=0" >&2; exit 1; }
go version -m "$bin" | grep -q -- '-trimpath=true' || { echo "binary was not built with -trimpath" >&2; exit 1; }

step "shipped prober configs (vllm-prober --config.check)"
for f in deploy/docker/vllm-prober.yml deploy/compose/vllm-prober.yml deploy/examples/*.yml; do
  "$bin" run --config.check --config.file="$f"
done

step "kustomize build"
for dir in deploy/kubernetes/*/; do
  kustomize build "$dir" >"$out/kustomize-$(basename "$dir").yaml"
done

step "helm lint and helm template"
chart=deploy/helm/vllm-prober
helm lint --strict "$chart"
helm template check "$chart" >"$out/default.yaml"
for values in "$chart"/ci/*-values.yaml; do
  name="$(basename "$values" -values.yaml)"
  args=(-f "$values")
  if [ -f "$chart/ci/$name-rules.yml" ]; then
    promtool check rules "$chart/ci/$name-rules.yml"
    args+=(--set-file "prometheusRule.rules=$chart/ci/$name-rules.yml")
  fi
  helm lint --strict "$chart" "${args[@]}"
  helm template check "$chart" "${args[@]}" >"$out/$name.yaml"
done
if helm template check "$chart" --set mode=bogus >/dev/null 2>&1; then
  echo "the chart's values schema accepted mode=bogus" >&2
  exit 1
fi

step "compose: generated rules, Prometheus config, Alertmanager config"
mkdir -p "$out/rules"
"$bin" rules --config.file=deploy/compose/vllm-prober.yml --output="$out/rules/vllm-prober.rules.yml"
promtool check rules "$out/rules/vllm-prober.rules.yml"
# The same Prometheus config, with the rule files where this check wrote
# them instead of the compose volume, so promtool loads them too.
sed "s#/etc/prometheus/rules/#$out/rules/#" deploy/compose/prometheus.yml >"$out/prometheus.yml"
grep -qF "$out/rules/" "$out/prometheus.yml" || { echo "compose prometheus.yml does not read /etc/prometheus/rules/" >&2; exit 1; }
promtool check config "$out/prometheus.yml"
amtool check-config deploy/alertmanager/alertmanager.yml

step "ok"

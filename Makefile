# vllm-prober build, test and benchmark targets.
GO          ?= go
# staticcheck runs at the version pinned by go.mod's tool directive; helm
# and kustomize (deploy checks) at the versions pinned in tools/go.mod.
STATICCHECK ?= $(GO) tool staticcheck
# An execution count, not a duration: Go 1.26's fuzz coordinator can fail a
# duration-limited run with "context deadline exceeded" as the time runs out
# (fixed in Go 1.27); a count has no deadline to race.
FUZZTIME    ?= 50000x

.PHONY: all build test unit lint vet staticcheck fmt e2e e2e-tools fuzz bench soak clean

all: build test

# build runs deploy/build.sh, the one build command (the Dockerfile and
# deploy/check.sh run it too). VERSION, REVISION, BRANCH, BUILD_USER and
# BUILD_DATE given on the command line or in the environment override the
# build information it derives from the repository.
build:
	./deploy/build.sh vllm-prober

# test is the README's test command: formatting, vet, staticcheck and the
# unit tests with the race detector.
test: lint unit

# Packages run in parallel: the unit tests assert on ledgers, traces and the
# simulator's own clock, with timeouts that are not their subject made
# generous, so a loaded machine does not fail them; measured accuracy is in
# `make bench`.
unit:
	$(GO) test -race -count=1 ./...

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

staticcheck:
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./...

# e2e runs the end-to-end tests against real Prometheus, promtool,
# Alertmanager, amtool and Chromium from Debian's packages (.ci/run installs
# them); e2e-tools stops at once, naming what is missing and how to install it.
# They keep -p 1: they wait for real Prometheus rule evaluations and alerts
# against wall-clock deadlines, so no other package's tests run beside them.
# The rules package's alert matrix alone takes 10-16 minutes on two cores.
E2E_TOOLS := prometheus promtool prometheus-alertmanager amtool chromium
e2e: e2e-tools
	$(GO) test -race -count=1 -p 1 -tags e2e -timeout 30m ./...

e2e-tools:
	@missing=""; for t in $(E2E_TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make e2e: missing on PATH:$$missing"; \
	  echo "install them with: apt-get install -y --no-install-recommends prometheus prometheus-alertmanager chromium"; \
	  exit 1; \
	fi

# fuzz runs every fuzz target for FUZZTIME each (executions, or a duration).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# bench runs the prober's own benchmarks (internal/perf: every part of
# `go run ./internal/perf/cmd/perf -h`: fidelity, schedule lag, daemon cost
# with the sidecar, a 400-pair fleet, 30 to 1,000 pairs on one prober, scrape
# cost, hot paths, accuracy against a naive client and a 30-minute soak of
# 1,000 pairs under reloads; about 70 minutes) and prints the summary table of docs/BENCHMARKS.md with the
# machine and its load beside each part.
# PERF_FLAGS="-scale 0.1" shortens every run, the soak's to 3 minutes;
# PERF_FLAGS="-only cost,soak" runs some parts.
PERF_FLAGS ?=
bench:
	$(GO) run ./internal/perf/cmd/perf -dir . $(PERF_FLAGS)

# soak runs the daemon binary at 20 requests/s with random faults and
# reloads for SOAK_DURATION and fails when goroutines, heap or RSS grow
# after the warm-up (e2e/soak_test.go; `make e2e` runs a 90s soak).
SOAK_DURATION ?= 30m
soak:
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -tags e2e -timeout 0 -v -run '^TestSoak$$' ./e2e/

clean:
	rm -f vllm-prober

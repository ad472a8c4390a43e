# See https://tech.davis-hansson.com/p/make/
SHELL := bash
.DELETE_ON_ERROR:
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables
MAKEFLAGS += --no-builtin-rules
MAKEFLAGS += --no-print-directory

# Build tools are pinned in tools.mod, kept out of go.mod (see shared/TOOLING.md §1). tools.mod
# holds the tools and what they need only: `go mod tidy -modfile=tools.mod` also reads this
# module's own packages and would add their libraries (k8s.io/apimachinery, go-cmp) to it.
GO ?= go
TOOL := $(GO) tool -modfile=tools.mod
BUF := $(TOOL) buf
BIN := $(abspath bin)
# grpcurl cannot live in tools.mod: with buf in the same graph it needs
# github.com/jhump/protoreflect/v2@v2.0.0, whose zip the module proxy refuses (403).
GRPCURL_VERSION := v1.9.4

.PHONY: help
help: ## Describe useful make targets
	@grep -E '^[a-zA-Z0-9_/.-]+:.*?## .*$$' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*?## "}; {printf "%-20s %s\n", $$1, $$2}'

.PHONY: all
all: generate lint test ## Generate, lint and test

# The CentralHorizontalPodAutoscaler custom resource: Go types in clients/scaler/api, from which
# controller-gen writes their deep copies and the CRD manifest in deploy/base/crd.
CRD_API := clients/scaler/api
CRD_DIR := deploy/base/crd
GENERATED := proto store/proto store/internal/recordpb server/apidescriptors.binpb $(CRD_API) $(CRD_DIR)

.PHONY: generate
generate: ## Regenerate proto/gen (the API), store/internal/recordpb (the record format), server/apidescriptors.binpb (reflection), the custom resource's deep copies and CRD, and format the .proto files
	$(BUF) generate
	$(BUF) generate --template buf.gen.store.yaml
	$(BUF) format -w
	$(BUF) build --path proto/recommender --exclude-imports -o server/apidescriptors.binpb
	$(TOOL) controller-gen object paths=./$(CRD_API)/... crd:crdVersions=v1 output:crd:dir=$(CRD_DIR)

.PHONY: checkgenerate
checkgenerate: generate ## Fail if generated code or proto formatting is stale
	@if [[ -n "$$(git status --porcelain -- $(GENERATED))" ]]; then \
		echo "generated code or .proto formatting is out of date; run make generate and commit:" >&2; \
		git status --porcelain -- $(GENERATED) >&2; \
		git --no-pager diff -- $(GENERATED) >&2; \
		exit 1; \
	fi

.PHONY: lint
lint: ## Lint protos (buf lint, buf format) and Go (go vet, staticcheck)
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(GO) vet ./...
	$(GO) vet -tags e2e,crashtest ./...
	$(GO) -C $(MONITORING_CHECK) vet ./...
	$(TOOL) staticcheck -tags e2e,crashtest ./...

.PHONY: breaking
breaking: ## Check the API for breaking changes against the main branch
	$(BUF) breaking --against '.git#branch=main'

# deploy/monitoring/check tests the alerting rules and the dashboard with Prometheus's own
# parsers, in a module of its own: github.com/prometheus/prometheus stays out of go.mod.
MONITORING_CHECK := deploy/monitoring/check

.PHONY: test
test: bin/grpcurl ## Run every test with the race detector (installs grpcurl for the README examples), and deploy/monitoring's check
	PATH="$(BIN):$$PATH" $(GO) test -race ./...
	$(GO) -C $(MONITORING_CHECK) test ./...

# The conformance cases live next to this repository (shared/conformance).
SHARED ?= ../shared
CONFORMANCE_ADDR ?= 127.0.0.1:50061

.PHONY: conformance
conformance: bin/grpcurl bin/hpa-recommender ## Run shared/conformance (seed cases and upstream scenarios) against a fresh server
	@set -euo pipefail; \
	$(BIN)/hpa-recommender --store memory --listen $(CONFORMANCE_ADDR) --metrics-listen "" 2>conformance-server.log & pid=$$!; \
	trap 'kill $$pid 2>/dev/null || true' EXIT; \
	for i in $$(seq 1 100); do \
		$(BIN)/grpcurl -plaintext $(CONFORMANCE_ADDR) grpc.health.v1.Health/Check >/dev/null 2>&1 && break; sleep 0.1; \
	done; \
	PATH="$(BIN):$$PATH" python3 $(SHARED)/conformance/run.py $(CONFORMANCE_ADDR); \
	PATH="$(BIN):$$PATH" python3 $(SHARED)/conformance/run.py $(CONFORMANCE_ADDR) --golden $(SHARED)/conformance/upstream-scenarios.jsonl.gz

# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can fail a clean run with
# "context deadline exceeded" at the deadline (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 20000x

.PHONY: fuzz
fuzz: ## Run every fuzz target FUZZTIME times each (default 20000x; CI runs this short pass)
	$(GO) test -run '^$$' -fuzz '^FuzzDecide$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzSimulatePolicyLimit$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzValidateSpec$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzSimulationFromProto$$' -fuzztime $(FUZZTIME) ./internal/apiconv
	$(GO) test -run '^$$' -fuzz '^FuzzKeyEncoding$$' -fuzztime $(FUZZTIME) ./store/internal/codec
	$(GO) test -run '^$$' -fuzz '^FuzzUpgradeAndUnmarshal$$' -fuzztime $(FUZZTIME) ./store/internal/codec

.PHONY: bin/hpa-recommender
bin/hpa-recommender: ## Build the service into bin/
	$(GO) build -o $(BIN)/hpa-recommender ./cmd/hpa-recommender

.PHONY: build
build: ## Build every package
	$(GO) build ./...

.PHONY: run
run: bin/hpa-recommender ## Run the service on 127.0.0.1:50051 (bbolt at ./data); Ctrl-C stops it cleanly
	@# exec: the service itself takes the interrupt, drains, and its exit status (0) is make's.
	exec $(BIN)/hpa-recommender

.PHONY: crashtest
crashtest: ## Kill -9 the real binary under load 20 times, bbolt alone and one etcd replica of three (CRASHTEST_ITERATIONS, CRASHTEST_SEED); verify every acknowledged write survived
	$(GO) test -tags crashtest -run TestCrashLoop -count=1 -v -timeout 30m ./cmd/hpa-recommender/

# End-to-end tests against a real control plane (internal/controlplane): etcd, kube-apiserver,
# kube-controller-manager and kubectl are built from the Go module proxy in their own modules
# (tools/kube-1.MINOR per release, tools/etcd; k8s.io/kubernetes never enters go.mod) into a cache
# outside the repository, keyed by version, and built only when missing (shared/TOOLING.md §5, §6).
# The suite runs on KUBE_VERSION; the shadow differentials (TestShadowAgreesWithInTree, TestShadowOnMetricsServer) run again
# on KUBE_NEWEST, the newest release the module proxy serves that builds.
KUBE_VERSION := v1.34.4
KUBE_NEWEST := v1.37.2
ETCD_VERSION := v3.6.16
# Prometheus for the Prometheus-source e2e tests, from tools/prometheus: release v3.16.0 is Go
# module version v0.316.0 (Prometheus tags its Go module v0.MAJORMINOR.PATCH).
PROMETHEUS_VERSION := v3.16.0
PROMETHEUS_MODULE_VERSION := v0.316.0
# Where the binaries are built and looked for (make e2e CACHE_DIR=... moves every one of them).
CACHE_DIR ?= $(HOME)/.cache/hpa-recommender
KUBE_CACHE := $(CACHE_DIR)/kube-$(KUBE_VERSION)
KUBE_NEWEST_CACHE := $(CACHE_DIR)/kube-$(KUBE_NEWEST)
ETCD_CACHE ?= $(CACHE_DIR)/etcd-$(ETCD_VERSION)
PROMETHEUS_CACHE ?= $(CACHE_DIR)/prometheus-$(PROMETHEUS_VERSION)
KUBE_TOOLS := kube-apiserver kube-controller-manager kubectl
# Simulated nodes and pods with kubelet resource metrics (kwok) and the real metrics-server that
# scrapes them and serves metrics.k8s.io, each pinned in its own module under tools/.
KWOK_VERSION := v0.8.0
METRICS_SERVER_VERSION := v0.8.0
KWOK_BIN := $(CACHE_DIR)/kwok-$(KWOK_VERSION)/kwok
METRICS_SERVER_BIN := $(CACHE_DIR)/metrics-server-$(METRICS_SERVER_VERSION)/metrics-server
# kwok's own default stages (node initialize and lease heartbeat; pod ready, complete, delete), its
# kubelet /metrics/resource emulation and CPU/memory usage from pod annotations, as kwokctl
# configures them: the YAML shipped in the pinned module, joined into one --config file.
KWOK_CONFIG := $(CACHE_DIR)/kwok-$(KWOK_VERSION)/kwok.yaml
KWOK_CONFIG_FILES := stage/node/fast/node-initialize.yaml stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	stage/pod/fast/pod-ready.yaml stage/pod/fast/pod-complete.yaml stage/pod/fast/pod-delete.yaml \
	metrics/resource/metrics-resource.yaml metrics/usage/usage-from-annotation.yaml
# Packages with e2e tests: every directory holding a file behind the e2e build tag.
E2E_PKGS ?= $(sort $(patsubst %/,%,$(dir $(shell grep -rl --include='*.go' --exclude-dir=tools -e '^//go:build.*\be2e\b' . 2>/dev/null))))

# $(CACHE_DIR)/kube-vX.Y.Z/TOOL, built from tools/kube-X.Y: the stem is vX.Y.Z/TOOL.
$(CACHE_DIR)/kube-%:
	@v=$(patsubst %/,%,$(dir $*)); minor=$$(echo $$v | cut -d. -f2); mod=tools/kube-1.$$minor; \
	grep -q "k8s.io/kubernetes $$v" $$mod/go.mod || { echo "$$mod/go.mod does not pin k8s.io/kubernetes $$v" >&2; exit 1; }; \
	mkdir -p $(@D); \
	echo "building $(@F) $$v into $(@D) (a few minutes the first time)"; \
	x="-X k8s.io/component-base/version.gitVersion=$$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$$minor"; \
	x="$$x -X k8s.io/client-go/pkg/version.gitVersion=$$v -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$$minor"; \
	$(GO) build -C $$mod -o $@.tmp -ldflags "-s -w $$x" k8s.io/kubernetes/cmd/$(@F) && mv $@.tmp $@

$(ETCD_CACHE)/etcd:
	@grep -q 'go.etcd.io/etcd/server/v3 $(ETCD_VERSION)' tools/etcd/go.mod || { echo "tools/etcd/go.mod does not pin etcd $(ETCD_VERSION)" >&2; exit 1; }
	@mkdir -p $(ETCD_CACHE)
	$(GO) build -C tools/etcd -o $@.tmp -ldflags "-s -w" .
	@mv $@.tmp $@

$(KWOK_BIN):
	@grep -q 'sigs.k8s.io/kwok $(KWOK_VERSION)' tools/kwok/go.mod || { echo "tools/kwok/go.mod does not pin kwok $(KWOK_VERSION)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(GO) build -C tools/kwok -o $@.tmp -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok
	@mv $@.tmp $@

$(METRICS_SERVER_BIN):
	@grep -q 'sigs.k8s.io/metrics-server $(METRICS_SERVER_VERSION)' tools/metrics-server/go.mod || { echo "tools/metrics-server/go.mod does not pin metrics-server $(METRICS_SERVER_VERSION)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(GO) build -C tools/metrics-server -o $@.tmp -ldflags "-s -w" sigs.k8s.io/metrics-server/cmd/metrics-server
	@mv $@.tmp $@

$(KWOK_CONFIG):
	@mkdir -p $(@D)
	@cd tools/kwok && $(GO) mod download sigs.k8s.io/kwok && dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok); \
	for f in $(KWOK_CONFIG_FILES); do echo "# $$f"; cat "$$dir/kustomize/$$f"; echo "---"; done >$@.tmp
	@mv $@.tmp $@

.PHONY: kwok-binaries
kwok-binaries: $(KWOK_BIN) $(KWOK_CONFIG) $(METRICS_SERVER_BIN) ## Build the kwok controller and metrics-server into $(CACHE_DIR) if missing

# Without service discovery (build tag remove_all_sd): the tests' static targets need none, and
# the cloud providers' SDKs stay out of the build. The web UI is not embedded (no builtinassets).
$(PROMETHEUS_CACHE)/prometheus:
	@grep -q 'github.com/prometheus/prometheus $(PROMETHEUS_MODULE_VERSION)' tools/prometheus/go.mod || { echo "tools/prometheus/go.mod does not pin prometheus $(PROMETHEUS_MODULE_VERSION)" >&2; exit 1; }
	@mkdir -p $(PROMETHEUS_CACHE)
	@echo "building prometheus $(PROMETHEUS_VERSION) into $(PROMETHEUS_CACHE) (a minute or two the first time)"
	$(GO) build -C tools/prometheus -tags remove_all_sd -o $@.tmp -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION:v%=%)" github.com/prometheus/prometheus/cmd/prometheus
	@mv $@.tmp $@

.PHONY: prometheus
prometheus: $(PROMETHEUS_CACHE)/prometheus ## Build Prometheus (the e2e tests' metrics source) into $(CACHE_DIR) if missing

.PHONY: kube-binaries
kube-binaries: $(addprefix $(KUBE_CACHE)/,$(KUBE_TOOLS)) $(addprefix $(KUBE_NEWEST_CACHE)/,$(KUBE_TOOLS)) $(ETCD_CACHE)/etcd ## Build etcd and kube-apiserver, kube-controller-manager, kubectl of both releases into $(CACHE_DIR) if missing

.PHONY: e2e
e2e: kube-binaries kwok-binaries prometheus ## Run the e2e tests (build tag e2e) against a real etcd, kube-apiserver, kube-controller-manager, metrics-server on kwok nodes and Prometheus
	@[[ -n "$(strip $(E2E_PKGS))" ]] || { echo "no packages with e2e tests" >&2; exit 1; }
	KUBE_BIN_DIR=$(KUBE_CACHE) ETCD_BIN=$(ETCD_CACHE)/etcd KWOK_BIN=$(KWOK_BIN) METRICS_SERVER_BIN=$(METRICS_SERVER_BIN) PROMETHEUS_BIN=$(PROMETHEUS_CACHE)/prometheus \
		$(GO) test -tags e2e -race -timeout 45m $(E2E_PKGS)
	@# The shadow differentials (metrics adapter; metrics-server on kwok) again, beside kube-controller-manager $(KUBE_NEWEST).
	KUBE_BIN_DIR=$(KUBE_NEWEST_CACHE) ETCD_BIN=$(ETCD_CACHE)/etcd KWOK_BIN=$(KWOK_BIN) METRICS_SERVER_BIN=$(METRICS_SERVER_BIN) \
		$(GO) test -tags e2e -race -timeout 20m -run '^TestShadow(AgreesWithInTree|OnMetricsServer)$$' ./clients/scaler/

bin/grpcurl: Makefile ## Install the pinned grpcurl into bin/
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)
	@touch $@

.PHONY: tools
tools: bin/grpcurl ## Build every pinned tool once (the first buf build takes about a minute)
	$(BUF) --version
	$(TOOL) staticcheck -version

.PHONY: clean
clean: ## Remove the installed tools in bin/
	rm -rf $(BIN)

# See https://tech.davis-hansson.com/p/make/
SHELL := bash
.DELETE_ON_ERROR:
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables
MAKEFLAGS += --no-builtin-rules
MAKEFLAGS += --no-print-directory

# Build tools are pinned in tools.mod, kept out of go.mod (see shared/TOOLING.md §1).
GO ?= go
TOOL := $(GO) tool -modfile=tools.mod
BUF := $(TOOL) buf
BIN := $(abspath bin)
# grpcurl cannot live in tools.mod: with buf in the same graph it needs
# github.com/jhump/protoreflect/v2@v2.0.0, whose zip the module proxy refuses (403).
GRPCURL_VERSION := v1.9.4

.PHONY: help
help: ## Describe useful make targets
	@grep -E '^[a-zA-Z_/.-]+:.*?## .*$$' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*?## "}; {printf "%-20s %s\n", $$1, $$2}'

.PHONY: all
all: generate lint test ## Generate, lint and test

.PHONY: generate
generate: ## Regenerate proto/gen from proto/ and format the .proto files
	$(BUF) generate
	$(BUF) format -w

.PHONY: checkgenerate
checkgenerate: generate ## Fail if generated code or proto formatting is stale
	@if [[ -n "$$(git status --porcelain -- proto)" ]]; then \
		echo "proto/ or proto/gen is out of date; run make generate and commit:" >&2; \
		git status --porcelain -- proto >&2; \
		git --no-pager diff -- proto >&2; \
		exit 1; \
	fi

.PHONY: lint
lint: ## Lint protos (buf lint, buf format) and Go (go vet, staticcheck)
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(GO) vet ./...
	$(TOOL) staticcheck ./...

.PHONY: breaking
breaking: ## Check the API for breaking changes against the main branch
	$(BUF) breaking --against '.git#branch=main'

.PHONY: test
test: bin/grpcurl ## Run every test with the race detector (installs grpcurl for the README examples)
	PATH="$(BIN):$$PATH" $(GO) test -race ./...

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

FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (CI runs a short pass)
	$(GO) test -run '^$$' -fuzz '^FuzzDecide$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzSimulatePolicyLimit$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzValidateSpec$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzCleanChecksAgree$$' -fuzztime $(FUZZTIME) ./recommender
	$(GO) test -run '^$$' -fuzz '^FuzzSimulationFromProto$$' -fuzztime $(FUZZTIME) ./server
	$(GO) test -run '^$$' -fuzz '^FuzzDecisionInputMatchesUncached$$' -fuzztime $(FUZZTIME) ./server
	$(GO) test -run '^$$' -fuzz '^FuzzKeyEncoding$$' -fuzztime $(FUZZTIME) ./store/internal/codec

.PHONY: bin/hpa-recommender
bin/hpa-recommender: ## Build the service into bin/
	$(GO) build -o $(BIN)/hpa-recommender ./cmd/hpa-recommender

.PHONY: build
build: ## Build every package
	$(GO) build ./...

.PHONY: run
run: ## Run the service on 127.0.0.1:50051 (bbolt at ./data)
	$(GO) run ./cmd/hpa-recommender

.PHONY: crashtest
crashtest: ## Kill -9 the real binary under load 20 times (CRASHTEST_ITERATIONS, CRASHTEST_SEED) and verify every acknowledged write survived
	$(GO) test -tags crashtest -run TestCrashLoop -count=1 -v -timeout 30m ./cmd/hpa-recommender/

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

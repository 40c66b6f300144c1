# metawatch — see README.md. `make run` and `make test` are all a fresh machine needs.
GO        ?= go
BIN       := bin
TEST_TIMEOUT ?= 60m
# TEST_PARALLEL: test packages run at once. Above the cores: the integration
# packages mostly wait (for Leases to expire, syncs, quiet), each on a control
# plane of its own.
TEST_PARALLEL ?= 4
# FUZZTIME: empty runs each fuzz target for a count of inputs (see fuzz); a duration (10m) runs each that long.
FUZZTIME  ?=
VERSION   ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/metawatch/Chart.yaml)
COMMIT    ?= $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
IMAGE     ?= ghcr.io/metawatch/metawatch:$(VERSION)
LDFLAGS   := -X github.com/metawatch/metawatch/pkg/version.version=$(VERSION) -X github.com/metawatch/metawatch/pkg/version.commit=$(COMMIT)
# The product builds from its own go.mod only; go.work joins bench and hack for their own builds and tests.
PRODUCT   := GOWORK=off
# Every module of the workspace: the product, the bench harness, the hack tools.
MODULES   := . bench hack
PACKAGES  := ./... ./bench/... ./hack/...
GOLANGCI_LINT_VERSION := v2.15.0
TOOLS_DIR ?= $(or $(METAWATCH_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/metawatch)/tools
GOLANGCI_LINT := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

.PHONY: all help build run test test-unit test-integration test-node verify verify-docs verify-clean unit test-versions cluster-test controlplane cluster kind kind-test fuzz vet lint tidy clean image bench

all: build

## help: list the targets and what they do.
help:
	@sed -n 's/^## \([a-z-]*\): \(.*\)/\1\t\2/p' $(MAKEFILE_LIST) | awk -F'\t' '{gsub(/[$$][$$]/, "$$", $$2); printf "  %-17s %s\n", $$1, $$2}'

## build: metawatch (the product, from its own go.mod) and metawatch-dev (the workshop's, hack/) into bin/, with the version stamped (bin/metawatch --version).
build:
	$(PRODUCT) $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/ ./hack/metawatch-dev

## run: metawatch in the foreground against $$KUBECONFIG, or a local control plane it starts.
run: build
	$(BIN)/metawatch-dev -- $(ARGS)

## controlplane: build (once, cached by version) kube-apiserver, etcd, kubectl and helm.
controlplane:
	$(GO) run ./hack/controlplane

## test: everything: verify, then every test (integration, fuzz, the chart on a real node); what CI runs.
test: verify test-integration fuzz test-node

## verify: the checks that run no test of behaviour: go.mod tidy, vet (in verify-clean), lint, the docs checks.
verify: tidy verify-clean lint verify-docs

## test-unit: the pure tests only (go test -short: no control plane), with the race detector; seconds on a warm cache.
test-unit:
	$(GO) test -race -short $(PACKAGES)

# unit: the old name of test-unit.
unit: test-unit

## test-integration: every test but the real node's, on local control planes (built once, cached by version), with the race detector.
test-integration: controlplane
	$(GO) test -race -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -skip '^($(NODE_TESTS)|$(KIND_TESTS))$$' $(PACKAGES)

# The tests on a real node run alone, after the others: one node per machine, and its load would disturb timed tests.
NODE_TESTS := (TestChartOnARealNode|TestMakeClusterStopsOnSignals|TestStartAfterAKilledRun)
## test-versions: the suites that talk to an API server on each Kubernetes minor 1.34-1.37 (each built once, cached by version); not part of make test. ARGS go to hack/testversions (--versions, --run, --build-only).
test-versions:
	$(GO) run ./hack/testversions $(ARGS)

# The kind tests are make kind-test's only: they start dockerd (the engine's test as soon as docker.io is installed, which make kind does), make kind five times, the bench and make test-node beside it; a cold run builds the node image too.
KIND_TESTS := (TestKindClusterChartAndBench|TestTheEngineLeavesTheNetworkNamespaceAsItWas)

## test-node: the chart on a one-node cluster (make cluster's); skipped, saying why, where a node cannot run (no root, no cgroups).
test-node: controlplane
	$(GO) test -race -count=1 -timeout 20m -v -run '^$(NODE_TESTS)$$' ./hack/cluster

# cluster-test: the old name of test-node.
cluster-test: test-node

## verify-docs: docs/flags.md has every flag of metawatch --help, docs/metrics.md every metawatch_ metric, ARCHITECTURE.md's map every pkg/ folder; the links of README.md and docs/ resolve and their lines stay under 100 characters.
verify-docs:
	$(GO) test -short -count=1 -run '^(TestEvery|TestDocs)' ./cmd/metawatch

## verify-clean: building and vetting every module (tests included) changes nothing in the tree: go.work.sum and the go.sums are complete, no output lands outside bin/.
verify-clean:
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "verify-clean: not a git checkout, nothing to compare"; exit 0; }; \
	before=$$(git status --porcelain --untracked-files=all); \
	$(PRODUCT) $(GO) build -o /dev/null ./cmd/metawatch && $(GO) build $(PACKAGES) && $(GO) vet $(PACKAGES) || exit 1; \
	after=$$(git status --porcelain --untracked-files=all); \
	if [ "$$before" != "$$after" ]; then echo "building and vetting changed the tree (commit the sums, or ignore the output):"; \
		echo "$$after"; exit 1; fi

## cluster: a one-node cluster on this machine (root; kubelet, containerd, kube-proxy in a network namespace of its own) until Ctrl-C.
# cluster and kind run until Ctrl-C: built, then exec'd rather than go run, which exits 1 once
# interrupted whatever its program did (make would print "Error 1" after a clean stop).
cluster: controlplane
	$(GO) build -o $(BIN)/metawatch-cluster ./hack/cluster && exec $(BIN)/metawatch-cluster

## kind: a kind cluster, metawatch-bench (root; docker.io installed and dockerd started when missing, the node image built here once, no registry) until Ctrl-C or kind delete cluster; ARGS="--name NAME --kubernetes v1.35.4".
# kind builds the control plane's tools itself, after checking it can run at all.
kind:
	$(GO) build -o $(BIN)/metawatch-kind ./hack/kind && exec $(BIN)/metawatch-kind $(ARGS)

## kind-test: make kind, the chart on it the way users install it, the bench on it and make test-node beside it, then nothing left; skipped, saying why, where kind cannot run.
kind-test: controlplane
	$(GO) test -race -count=1 -p 1 -timeout 90m -v -run '^$(KIND_TESTS)$$' ./hack/kindnode ./hack/kind

## fuzz: fuzz the config parser, the guardrails, the rules core, label selectors as admission CEL, the managedFields stripper and its frame reader, the shard selectors, bucket assignment and cache moves, the streaming informer against client-go's, the GC's pace while lists stream, about 10 s each (FUZZTIME=10m make fuzz for a long run).
# Each target's budget is a count of inputs, about 10 s of fuzzing each on the 2-core VM, not a
# duration: with a duration, Go 1.26's fuzz coordinator can fail a clean run with a bare
# "context deadline exceeded" as the time runs out (golang/go#75804, fixed in Go 1.27; it
# failed CI once, on FuzzEvaluate). A count sets no deadline, so it cannot race; FUZZTIME=10m still can.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(or $(FUZZTIME),3000x) ./pkg/config
	$(GO) test -run '^$$' -fuzz FuzzGuardrails -fuzztime $(or $(FUZZTIME),5000x) ./pkg/config
	$(GO) test -run '^$$' -fuzz FuzzEvaluate -fuzztime $(or $(FUZZTIME),40000x) ./pkg/rules
	$(GO) test -run '^$$' -fuzz FuzzWithinGuardrails -fuzztime $(or $(FUZZTIME),20000x) ./pkg/rules
	$(GO) test -run '^$$' -fuzz FuzzSelectorCEL -fuzztime $(or $(FUZZTIME),20000x) ./pkg/admission
	$(GO) test -run '^$$' -fuzz FuzzStripManagedFields -fuzztime $(or $(FUZZTIME),10000x) ./pkg/wire
	$(GO) test -run '^$$' -fuzz FuzzFrameStripper -fuzztime $(or $(FUZZTIME),10000x) ./pkg/wire
	$(GO) test -run '^$$' -fuzz FuzzKeepUIDsInLists -fuzztime $(or $(FUZZTIME),10000x) ./pkg/wire
	$(GO) test -run '^$$' -fuzz FuzzSelectorMatchesItsBuckets -fuzztime $(or $(FUZZTIME),8000x) ./pkg/sharding
	$(GO) test -run '^$$' -fuzz FuzzMembershipChangeMovesAboutOneNth -fuzztime $(or $(FUZZTIME),4000x) ./pkg/sharding
	$(GO) test -run '^$$' -fuzz FuzzCoverageMoves -fuzztime $(or $(FUZZTIME),20000x) ./pkg/sharding
	$(GO) test -run '^$$' -fuzz FuzzStreamingMatchesStock -fuzztime $(or $(FUZZTIME),2000x) ./pkg/informer
	$(GO) test -run '^$$' -fuzz FuzzListsGiveTheGCPercentBack -fuzztime $(or $(FUZZTIME),100000x) ./pkg/memlimit

## vet: go vet every module.
vet:
	$(GO) vet $(PACKAGES)

## lint: golangci-lint (.golangci.yaml) on every module; built once through the module proxy, cached by version.
lint: $(GOLANGCI_LINT)
	@for m in $(MODULES); do echo "golangci-lint $$m"; (cd $$m && $(GOLANGCI_LINT) run ./...) || exit 1; done

$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(dir $@) (once; a few minutes)"
	@mkdir -p $(dir $@)
	GOWORK=off GOFLAGS= GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

## tidy: fail if any module's go.mod or go.sum is not what go mod tidy makes of it.
tidy:
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy -diff) || { echo "$$m: go.mod is not tidy: run (cd $$m && GOWORK=off go mod tidy)"; exit 1; }; done

## bench: the benchmark harness (bench/README.md); ARGS="--sizes 10000 --kind NAME ..." to choose. Report in bench/out.
bench: controlplane
	$(GO) run ./bench $(ARGS)

## image: a static binary packed into an OCI image tarball (bin/metawatch-image.tar), no container engine needed.
image:
	$(PRODUCT) CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/linux-amd64/metawatch ./cmd/metawatch
	$(GO) run ./hack/image --binary $(BIN)/linux-amd64/metawatch --ref $(IMAGE) --out $(BIN)/metawatch-image.tar

## clean: remove bin/.
clean:
	rm -rf $(BIN)

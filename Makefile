# metawatch — see README.md. `make run` and `make test` are all a fresh machine needs.
GO        ?= go
BIN       := bin
TEST_TIMEOUT ?= 60m
FUZZTIME  ?= 10s
VERSION   ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/metawatch/Chart.yaml)
IMAGE     ?= ghcr.io/metawatch/metawatch:$(VERSION)

.PHONY: all build run test controlplane fuzz vet clean image bench

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## run: metawatch in the foreground against $$KUBECONFIG, or a local control plane it starts.
run: build
	$(BIN)/metawatch-dev -- $(ARGS)

## controlplane: build (once, cached by version) kube-apiserver, etcd, kubectl and helm.
controlplane:
	$(GO) run ./hack/controlplane

## test: every test on the local control plane, with the race detector, plus short fuzz runs.
test: controlplane vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) fuzz

## fuzz: fuzz the config parser, the rules core, the managedFields stripper and its frame reader, FUZZTIME each (FUZZTIME=10m make fuzz for a long run).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./pkg/config
	$(GO) test -run '^$$' -fuzz FuzzEvaluate -fuzztime $(FUZZTIME) ./pkg/rules
	$(GO) test -run '^$$' -fuzz FuzzStripManagedFields -fuzztime $(FUZZTIME) ./pkg/wire
	$(GO) test -run '^$$' -fuzz FuzzFrameStripper -fuzztime $(FUZZTIME) ./pkg/wire

vet:
	$(GO) vet ./...

## bench: the benchmark harness (bench/README.md); ARGS="--sizes 10000 --kind NAME ..." to choose. Report in bench/out.
bench: controlplane
	$(GO) run ./bench $(ARGS)

## image: a static binary packed into an OCI image tarball (bin/metawatch-image.tar), no container engine needed.
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/linux-amd64/metawatch ./cmd/metawatch
	$(GO) run ./hack/image --binary $(BIN)/linux-amd64/metawatch --ref $(IMAGE) --out $(BIN)/metawatch-image.tar



clean:
	rm -rf $(BIN)

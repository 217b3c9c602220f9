# pipeline: make demo runs the flagship job, make test runs every test (CI).
SHELL := /bin/bash
GO ?= go
KUBE_VERSION ?= v1.37.2
KUBE_ASSETS ?= $(CURDIR)/.cache/kube/$(KUBE_VERSION)
export PIPELINE_KUBE_ASSETS := $(KUBE_ASSETS)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# -s -w drop the symbol table and DWARF: bin/pipeline is ~67 MB instead of
# ~94 MB (go tool pprof and panics still name functions).
LDFLAGS := -s -w -X main.version=$(VERSION)
# Fuzzing budgets are counts, not durations: Go 1.26's fuzz coordinator can
# fail a run with "context deadline exceeded" when a -fuzztime duration ends
# while a worker minimizes a new input (golang/go#75804), which says nothing
# about our code. 20000 inputs take about 50 s on two idle cores.
FUZZTIME ?= 20000x
FUZZMINIMIZE ?= 5s
# FuzzGrammar's inputs are whole configurations, some of them megabytes.
GRAMMARFUZZTIME ?= 500x

-include mk/kube.mk
-include mk/nats.mk

.PHONY: all build build-demo setup test unit integration race fuzz vet docs docs-check demo bench bench-smoke contenders clean image image-test soak

all: build

build:
	@$(call gobuild,bin/pipeline,-o bin/pipeline ./cmd/pipeline)

## build-demo: bin/pipeline and bin/demo in one go build (make demo).
build-demo:
	@mkdir -p bin
	@$(call gobuild,bin/pipeline and bin/demo,-o bin/ ./cmd/pipeline ./cmd/demo)

# gobuild says what it builds and why a first build is slow, then shows the
# packages compiled as go build -v names them (a cached package is not
# named), one line per 50, and the time taken. Compiler errors pass through.
define gobuild
echo '==> go build $(1)'; \
echo '    A first build compiles every dependency (Kubernetes client, NATS, cilium/ebpf: some 900'; \
echo '    packages): about 4 minutes on two idle cores, far longer on a busy machine. Go keeps them'; \
echo "    in its build cache ($$($(GO) env GOCACHE)), so later builds take seconds."; \
set -o pipefail; start=$$SECONDS; \
CGO_ENABLED=0 $(GO) build -v -trimpath -ldflags '$(LDFLAGS)' $(2) 2>&1 | awk \
  '/^[^ :]+$$/ { if (++n % 50 == 0) { printf "    %d packages compiled ...\n", n; fflush() }; next } { print; fflush() } \
   END { if (n) printf "    %d packages compiled\n", n }' && \
echo "    built $(1) in $$((SECONDS - start))s"
endef

## test: everything CI runs: vet, unit, race, integration (real kube-apiserver,
## real BPF maps as root), docs freshness, the container image under podman,
## every fuzz target's corpus (its seeds and testdata/fuzz, run by go test as
## plain tests). It does not fuzz: new random inputs would make a run's verdict
## depend on luck; make fuzz does that. scripts/setup.sh first installs what
## a fresh Debian machine lacks (as root) and mounts the bpffs.
test:
	./scripts/setup.sh
	@$(MAKE) --no-print-directory vet
	@echo '==> kube-apiserver and etcd for the integration tests ($(KUBE_ASSETS))'
	@$(MAKE) --no-print-directory kube-assets
	@echo '==> nats-server for the NATS tests (.cache/nats)'
	@$(MAKE) --no-print-directory nats-assets
	@echo '==> tests of every package with -tags integration (real kube-apiserver, nats-server, BPF maps, XDP)'
	$(GO) test -count=1 -tags integration ./...
	@echo '==> engine and transforms under -race'
	$(GO) test -count=1 -race ./engine/... ./transforms/...
	@echo '==> docs/reference.md is fresh'
	@$(MAKE) --no-print-directory docs-check
	@echo '==> the container image under podman (make image-test)'
	@$(MAKE) --no-print-directory image-test
	@echo '==> every row of make bench at tiny sizes (make bench-smoke)'
	@$(MAKE) --no-print-directory bench-smoke

## setup: what make test needs on this machine (packages, bpffs, Go modules).
setup:
	./scripts/setup.sh

unit:
	$(GO) test ./...

vet:
	@echo '==> gofmt and go vet (with and without -tags integration)'
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	@echo '==> staticcheck: its default checks (the integration tag sees every caller)'
	$(GO) tool staticcheck -tags integration ./...

## fuzz: every fuzz target on new random inputs, FUZZTIME each (go test runs
## one target per invocation). Run it after changing a parser; an input it
## finds is written to the package's testdata/fuzz, which make test then runs
## on every run. FUZZ_TARGETS lists them as package:Target, or as
## package:Target:N for a target slow enough to get its own N inputs.
FUZZ_TARGETS := \
	./cmd/pipeline:FuzzCompile \
	./internal/fastexpr:FuzzSameAsHCL \
	./engine/sinkloop/byteindex:FuzzIndex \
	./sinks/audit:FuzzVerifyCatchesTampering \
	./sources/kubernetes/wire:FuzzProjector \
	./sources/kubernetes/wire:FuzzProtobufDecode \
	./cmd/pipeline/lsp:FuzzHandlers \
	./cmd/pipeline/lsp:FuzzFraming \
	./cmd/pipeline/view:FuzzPrintable \
	./schema:FuzzCheckNesting \
	./internal/haproxy:FuzzDiff \
	./sources/files:FuzzByteOrderMark \
	./sources/files:FuzzCSVFieldsRoundTrip \
	./sources/files:FuzzExactNumbers \
	./sources/files:FuzzYAMLStream \
	./sinks/template:FuzzCachedRender:500x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$(FUZZTIME); \
		case $$rest in *:*) n=$${rest#*:};; esac; \
		echo "$(GO) test $$pkg -run '^$$' -fuzz '^$$name$$' -fuzztime $$n"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $$n -fuzzminimizetime $(FUZZMINIMIZE); \
	done
	$(GO) test ./cmd/pipeline -run '^$$' -fuzz '^FuzzGrammar$$' -fuzztime $(GRAMMARFUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE)

docs: build
	./bin/pipeline schema --markdown > docs/reference.md

docs-check: build
	./bin/pipeline schema --markdown | diff -u docs/reference.md - || { echo 'docs/reference.md is stale: run make docs'; exit 1; }

## demo: the flagship job against a real kube-apiserver (root: a real pinned
## eBPF map). Removes what it created at the end; KEEP=1 keeps it.
demo:
	./scripts/demo.sh

## bench: the performance table (real kube-apiserver; BPF rows need root),
## written to bench/results.json. BENCHFLAGS="-pods 50000 -runs 3" etc.
bench: build contenders kube-assets
	$(GO) run ./bench/cmd/benchtable $(BENCHFLAGS)

## bench-smoke: every row of the table at tiny sizes, one run (make test runs it).
bench-smoke: build contenders kube-assets
	$(GO) run ./bench/cmd/benchtable -smoke -json '' $(BENCHFLAGS)

## contenders: the programs make bench measures the pipeline against, each
## its own small binary linking only client-go and cilium/ebpf, built as
## bin/pipeline is; and bin/agents, many pipeline agents in one process
## (P9b), which is not a contender but the pipeline packed for the bench.
contenders:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/contenders/ ./bench/contenders/floor ./bench/contenders/controller \
		./bench/contenders/planfloor ./bench/contenders/ssafloor
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/agents ./bench/cmd/agents

## image: the container image, assembled offline from a static binary
## (the Dockerfile builds the same image where base images can be pulled).
IMAGE ?= localhost/pipeline:$(VERSION)
IMAGE_TAR ?= bin/pipeline-image.tar
image:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o bin/image/pipeline ./cmd/pipeline
	$(GO) run ./deploy/imagebuild -binary bin/image/pipeline -tag $(IMAGE) -version $(VERSION) \
		-revision $$(git rev-parse HEAD 2>/dev/null || echo unknown) -o $(IMAGE_TAR)

## image-test: run the image with podman: health, metrics, non-root, SIGTERM.
image-test: image
	./deploy/image-test.sh $(IMAGE_TAR) $(IMAGE)

## clean: build outputs and demo leftovers (not .cache/kube, the API server build).
clean:
	rm -rf bin .cache/demo
	-[ ! -e /sys/fs/bpf/pipeline-demo ] || rm -rf /sys/fs/bpf/pipeline-demo

## soak: the robustness tests (cmd/pipeline TestRobustness: files rewritten,
## pin deleted and replaced, pipeline killed -9, reloads; TestRobustnessServers:
## kube-apiserver stopped and started, nats-server killed -9, configuration
## edited) for DURATION each, then what they survived. SEED=N replays a
## schedule. Needs root (bpffs).
DURATION ?= 10m
soak: kube-assets nats-assets
	PIPELINE_SOAK=$(DURATION) $(if $(SEED),PIPELINE_SEED=$(SEED)) $(GO) test -tags integration ./cmd/pipeline -run '^TestRobustness(Servers)?$$' -count=1 -v -timeout 0

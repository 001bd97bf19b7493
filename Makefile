# The ledger's build. Every step CI needs is here; nothing is installed by hand.
GO       ?= go
BIN      := bin/ledger
PKGS     := ./...
FUZZTIME ?= 30s
DEMO_DIR ?=

.PHONY: all build test lint fuzz demo bench clean

all: lint test build

build:
	$(GO) build -o $(BIN) ./cmd/ledger

# Unit, golden, fuzz-corpus regression and end-to-end tests (the e2e tests
# build and run the real binary).
test:
	$(GO) test -count=1 $(PKGS)

# gofmt, go vet, staticcheck and errcheck; fails on any finding. The two
# linters are pinned in tools/go.mod, a module of their own (their
# dependencies stay out of the ledger's build list), and `go tool` builds
# them from the module proxy on first use: nothing to install by hand.
# tools/errcheck_excludes.txt lists the few calls whose error is
# deliberately not checked, and why.
LINTTOOL := $(GO) tool -modfile=tools/go.mod
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(LINTTOOL) staticcheck $(PKGS)
	$(LINTTOOL) errcheck -exclude tools/errcheck_excludes.txt $(PKGS)

# Each fuzz target for a short run (FUZZTIME per target).
fuzz:
	@scripts/fuzz-all.sh $(FUZZTIME)

# The main job on an embedded default: sample documents from testdata/.
demo: build
	@scripts/demo.sh $(BIN)

# Codec micro-benchmarks, then bin/ledger-bench (cmd/ledger-bench) at full
# size; BENCHFLAGS go to ledger-bench (e.g. BENCHFLAGS=--quick).
bench:
	$(GO) build -o bin/ledger-bench ./cmd/ledger-bench
	@scripts/bench.sh bin/ledger-bench $(BENCHFLAGS)

clean:
	rm -rf bin

# The ledger's build. Every step CI needs is here; nothing is installed by hand.
GO       ?= go
BIN      := bin/ledger
PKGS     := ./...
FUZZTIME ?= 30s
DEMO_DIR ?=

.PHONY: all build test lint fuzz fuzz-corpus demo bench clean

all: lint test build

# -buildvcs=auto stamps the binary with the commit it was built from
# (`ledger --version`) even where GOFLAGS turns stamping off.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/ledger

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

# Each fuzz target for a short run (FUZZTIME per target; 30 targets, so
# about 15 minutes at the default 30s). The tree stays clean: new corpus
# entries stay in the Go cache. fuzz-corpus runs the same and copies them
# into testdata/fuzz/<Target>/ (FUZZ_KEEP=1) for review and commit.
fuzz:
	@scripts/fuzz-all.sh $(FUZZTIME)

fuzz-corpus:
	@FUZZ_KEEP=1 scripts/fuzz-all.sh $(FUZZTIME)

# The main job on an embedded default: sample documents from testdata/. The
# trend chart it draws is kept in DEMO_DIR (default ./demo, gitignored).
demo: build
	@DEMO_DIR=$(DEMO_DIR) scripts/demo.sh $(BIN)

# Codec micro-benchmarks, then bin/ledger-bench (cmd/ledger-bench) at full
# size: about 20 minutes. BENCHFLAGS go to ledger-bench (BENCHFLAGS=--quick:
# seconds, at toy sizes).
bench:
	$(GO) build -o bin/ledger-bench ./cmd/ledger-bench
	@scripts/bench.sh bin/ledger-bench $(BENCHFLAGS)

clean:
	rm -rf bin

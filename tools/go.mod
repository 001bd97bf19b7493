// The linters `make lint` runs, pinned. A module of its own so that their
// dependencies (golang.org/x/tools and others) never enter the ledger's
// build list: in the root go.mod, `go get -tool` would raise
// golang.org/x/sys and golang.org/x/exp, which the ledger's own packages
// and Pebble build against. Run them from the repository root with
// `go tool -modfile=tools/go.mod staticcheck ./...` (or errcheck); upgrade
// one with `cd tools && go get -tool <pkg>@<version>`.
module github.com/proofledger/ledger/tools

go 1.26.0

tool (
	github.com/kisielk/errcheck
	honnef.co/go/tools/cmd/staticcheck
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/kisielk/errcheck v1.30.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

module github.com/proofledger/ledger

go 1.26

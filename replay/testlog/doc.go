// Package testlog reads the summary lines test runners print and adds them
// up: which runners a log shows and how many tests passed, failed, were
// skipped or errored.
//
// Start with Parse. It recognises go test (text, -v and -json), pytest,
// cargo test, node's test runner (TAP and spec reporters), jest, vitest,
// JUnit (Maven Surefire, Ant, the JUnit 4 text runner and the JUnit 5
// console launcher) and, when none of those appear, the plain
// "N passed, N failed" line. The rules for each runner, and what Parse
// does when several appear in one log, are written at the top of parse.go.
//
// This package owns test-log reading only: it knows nothing of witness
// bundles or outcomes (package replay judges a bundle's claimed outcome
// from a Summary), it does no I/O and keeps no state between calls.
package testlog

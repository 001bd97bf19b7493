package replay

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

var update = flag.Bool("update", false, "rewrite the golden files and the generated fixture bundles")

const (
	fixtureDir = "testdata/rvww"
	logDir     = "testlog/testdata/logs"
	// fixtureNS is 2026-02-02T09:00:00Z; fixture i is created i minutes later.
	fixtureNS = uint64(1770022800) * 1e9
)

// fixture is a witness bundle made for replay's tests, with the outcome
// check it must get.
type fixture struct {
	name    string
	outcome rvww.Outcome
	policy  governance.Policy
	task    task
	// log names a file of testlog/testdata/logs used as TEST_LOG, or is
	// "-" for no TEST_LOG section.
	log        string
	postmortem string
	// spec replaces the task's spec when set; editLog, when set, changes
	// the test log (line endings, colour).
	spec    string
	editLog func([]byte) []byte
	// want is the outcome check and runner replay must report.
	want   Verdict
	runner string
}

// task is the realistic content of a bundle: what was asked, planned and
// changed, and the tools called.
type task struct {
	spec, plan, diff string
	tools            []string
}

var (
	pagerTask = task{
		spec: "Title: Pager.Page returns the first item of the next page last\n\nRepository: github.com/acme/pager\nIssue: #212\n\n" +
			"Page(n) repeats the first item of page n+1 at its end.\n\nAcceptance: the existing tests pass and a regression test covers the last page.\n",
		plan: "1. Read pager/pager.go and its tests\n2. Find the bound of the slice in Page\n3. Add a failing test for the last page\n4. Fix the bound, run the tests\n",
		diff: "diff --git a/pager/pager.go b/pager/pager.go\nindex 3f2b9c1..7d4e8f6 100644\n--- a/pager/pager.go\n+++ b/pager/pager.go\n" +
			"@@ -41,7 +41,7 @@ func (p *Pager) Page(n int) []Item {\n \tstart := n * p.size\n-\tend := start + p.size + 1\n+\tend := start + p.size\n \tif end > len(p.items) {\n \t\tend = len(p.items)\n \t}\n",
		tools: []string{"Read", "Grep", "Read", "Edit", "Bash", "Bash"},
	}
	invoiceTask = task{
		spec: "Title: VAT is rounded per line instead of per invoice\n\nRepository: github.com/acme/billing\nIssue: #88\n\n" +
			"An invoice of three lines at 0.333 each shows 1.00 VAT; the law asks for rounding once, on the total.\n",
		plan:  "1. Read billing/tax.py\n2. Move the rounding out of line_vat into invoice_vat\n3. Run the test suite\n",
		diff:  "--- a/billing/tax.py\n+++ b/billing/tax.py\n@@ -12,9 +12,9 @@ def line_vat(line, rate):\n-    return round(line.amount * rate, 2)\n+    return line.amount * rate\n \n def invoice_vat(invoice, rate):\n-    return sum(line_vat(l, rate) for l in invoice.lines)\n+    return round(sum(line_vat(l, rate) for l in invoice.lines), 2)\n",
		tools: []string{"Read", "Grep", "Edit", "Bash"},
	}
	cartTask = task{
		spec:  "Title: the cart total ignores percentage discounts\n\nRepository: github.com/acme/web\nIssue: #1403\n\nA 10% voucher on a 100.00 cart still shows 100.00.\n",
		plan:  "1. Read src/cart/cart.ts\n2. Apply discounts in total()\n3. npx jest, npx vitest\n",
		diff:  "--- a/src/cart/cart.ts\n+++ b/src/cart/cart.ts\n@@ -20,5 +20,6 @@ export class Cart {\n   total(): number {\n-    return this.items.reduce((s, i) => s + i.price, 0);\n+    const sum = this.items.reduce((s, i) => s + i.price, 0);\n+    return Math.round(sum * (1 - this.discount) * 100) / 100;\n   }\n",
		tools: []string{"Read", "Glob", "Read", "Edit", "Bash", "Bash"},
	}
	stockTask = task{
		spec:  "Title: reserving more than the stock leaves a negative count\n\nRepository: github.com/acme/inventory\nIssue: #57\n",
		plan:  "1. Read StockService.reserve\n2. Refuse reservations above the available count\n3. mvn test\n",
		diff:  "--- a/src/main/java/com/acme/inventory/Stock.java\n+++ b/src/main/java/com/acme/inventory/Stock.java\n@@ -55,6 +55,9 @@ public final class Stock {\n   public void reserve(int n) {\n+    if (n > available) {\n+      throw new InsufficientStockException(sku, n, available);\n+    }\n     available -= n;\n",
		tools: []string{"Read", "Grep", "Edit", "Bash"},
	}
)

// fixtures lists every generated fixture. Deterministic: fixed names,
// times, hashes and key.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	approved, autonomous, restricted := governance.Approved(), governance.Autonomous(), governance.Restricted()
	// A policy no ledger has registered: replay must say it is unknown.
	unregistered := governance.Policy{Name: "ci-nightly", Mode: governance.ModeAutonomous, Deny: []string{"WebFetch"},
		MaxCostMicrodollars: 250_000, MaxToolCalls: 120}
	hostile := "Title: \x1b[2J\x1b[Hcleared your screen\n" +
		"\x1b]0;owned\x07The window title was set; \x1b[8mhidden text\x1b[0m; \u202eevil\u202c reversed;\n" +
		"a bell\a, a backspace\b, a NUL-free C1 \u009b31m, invalid UTF-8 \xff\xfe, tabs\tkept.\n"
	return []fixture{
		// Claimed outcomes the test log contradicts.
		{name: "solved_pytest_failures", outcome: rvww.OutcomeSolved, policy: autonomous, task: invoiceTask,
			log: "pytest_fail.log", want: Contradicts, runner: "pytest"},
		{name: "solved_go_build_failed", outcome: rvww.OutcomeSolved, policy: approved, task: pagerTask,
			log: "go_build_failed.log", want: Contradicts, runner: "go test"},
		{name: "solved_jest_suite_did_not_run", outcome: rvww.OutcomeSolved, policy: autonomous, task: cartTask,
			log: "jest_suite_error.log", want: Contradicts, runner: "jest"},
		{name: "solved_pytest_no_tests_ran", outcome: rvww.OutcomeSolved, policy: autonomous, task: invoiceTask,
			log: "pytest_no_tests.log", want: Contradicts, runner: "pytest"},
		{name: "solved_go_and_jest_one_fails", outcome: rvww.OutcomeSolved, policy: autonomous, task: cartTask,
			log: "mixed_go_jest.log", want: Contradicts, runner: "go test + jest"},
		{name: "failed_vitest_all_pass", outcome: rvww.OutcomeFailed, policy: approved, task: cartTask,
			log: "vitest_pass.log", postmortem: "Gave up: the discount is applied twice in checkout.", want: Contradicts, runner: "vitest"},
		{name: "errored_cargo_all_pass", outcome: rvww.OutcomeErrored, policy: autonomous, task: pagerTask,
			log: "cargo_pass.log", postmortem: "The push to the fork timed out.", want: Contradicts, runner: "cargo test"},
		// Claimed outcomes the log supports.
		{name: "solved_pytest_ansi_pass", outcome: rvww.OutcomeSolved, policy: autonomous, task: invoiceTask,
			log: "pytest_pass.log", editLog: colourPassed, want: Matches, runner: "pytest"},
		{name: "solved_cargo_crlf", outcome: rvww.OutcomeSolved, policy: approved, task: pagerTask,
			log: "cargo_pass.log", editLog: crlf, want: Matches, runner: "cargo test"},
		{name: "failed_maven_failures", outcome: rvww.OutcomeFailed, policy: approved, task: stockTask,
			log: "maven_fail.log", postmortem: "loadFromDisk needs a fixture file the sandbox does not have.", want: Matches, runner: "junit"},
		{name: "errored_cargo_compile_error", outcome: rvww.OutcomeErrored, policy: autonomous, task: pagerTask,
			log: "cargo_compile_error.log", postmortem: "The toolchain in the sandbox is older than the crate's MSRV.", want: Matches, runner: "cargo test"},
		{name: "skipped_pytest_no_tests_ran", outcome: rvww.OutcomeSkipped, policy: restricted, task: invoiceTask,
			log: "pytest_no_tests.log", postmortem: "Skipped: the suite needs a database restricted mode cannot start.", want: Matches, runner: "pytest"},
		// Logs that cannot decide.
		{name: "solved_no_runner_summary", outcome: rvww.OutcomeSolved, policy: autonomous, task: pagerTask,
			log: "no_summary.log", want: Inconclusive},
		{name: "errored_node_failures", outcome: rvww.OutcomeErrored, policy: autonomous, task: cartTask,
			log: "node_tap.log", postmortem: "The runner crashed while reporting.", want: Inconclusive, runner: "node --test"},
		{name: "solved_without_test_log", outcome: rvww.OutcomeSolved, policy: autonomous, task: pagerTask,
			log: "-", want: Inconclusive},
		// A policy the ledger does not know, and hostile text.
		{name: "solved_unregistered_policy", outcome: rvww.OutcomeSolved, policy: unregistered, task: pagerTask,
			log: "go_verbose_pass.log", want: Matches, runner: "go test"},
		{name: "solved_hostile_text", outcome: rvww.OutcomeSolved, policy: autonomous, task: pagerTask, spec: hostile,
			log: "pytest_ansi.log", want: Contradicts, runner: "pytest"},
	}
}

func crlf(log []byte) []byte { return bytes.ReplaceAll(log, []byte("\n"), []byte("\r\n")) }

func colourPassed(log []byte) []byte {
	return bytes.ReplaceAll(log, []byte(" passed in "), []byte(" \x1b[32mpassed\x1b[0m in "))
}

// build encodes a fixture, signed with the vectors' HMAC key.
func (f fixture) build(t testing.TB, seq int, key []byte) []byte {
	t.Helper()
	sum := sha256.Sum256([]byte("replay fixture:" + f.name))
	id := [16]byte(sum[:16])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	b := &rvww.Bundle{Header: rvww.Header{
		TaskID: id, PolicyHash: f.policy.Hash(), CreatedNS: fixtureNS + uint64(seq)*60e9,
		Outcome: f.outcome, Mode: rvww.Mode(f.policy.Mode),
	}}
	spec := f.task.spec
	if f.spec != "" {
		spec = f.spec
	}
	b.Spec, b.HasSpec = []byte(spec), true
	b.Plan, b.HasPlan = []byte(f.task.plan), true
	b.Diff, b.HasDiff = []byte(f.task.diff), true
	if f.log != "-" {
		data, err := os.ReadFile(filepath.Join(logDir, f.log))
		if err != nil {
			t.Fatal(err)
		}
		if f.editLog != nil {
			data = f.editLog(data)
		}
		b.TestLog, b.HasTestLog = data, true
	}
	if f.postmortem != "" {
		b.Postmortem, b.HasPostmortem = []byte(f.postmortem), true
	}
	for i, tool := range f.task.tools {
		h := func(what string) [8]byte {
			s := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s/%s", f.name, i, tool, what))
			return [8]byte(s[:8])
		}
		b.Calls = append(b.Calls, rvww.ToolCall{
			Action: tool, PolicyCheck: rvww.PolicyCheck(f.policy.Check(tool)),
			ArgsHash: h("args"), ResultHash: h("result"),
			LatencyMS: uint32(40 + 35*i*i), CostMicrodollars: uint32(90 + 70*i), Tokens: uint32(400 + 310*i),
		})
	}
	data, err := rvww.Encode(b, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFixtures checks that testdata/rvww holds exactly what the generator
// makes (with -update it rewrites the files), and that replay gives each
// fixture the outcome check and runner it was made for: the bundles whose
// test log contradicts their claimed outcome are caught.
func TestFixtures(t *testing.T) {
	key := vectorKey(t)
	names := map[string]bool{}
	for i, f := range fixtures(t) {
		names[f.name+".rvww"] = true
		data := f.build(t, i, key)
		path := filepath.Join(fixtureDir, f.name+".rvww")
		if *update {
			if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if disk, err := os.ReadFile(path); err != nil || !bytes.Equal(disk, data) {
			t.Fatalf("%s differs from the generator's output or is missing (run go test ./replay -update): %v", path, err)
		}
		r := replayFile(t, path)
		if r.OutcomeCheck != f.want || r.Tests.Runner != f.runner {
			t.Errorf("%s: outcome check %s, runner %q; want %s, %q (%s)", f.name, r.OutcomeCheck, r.Tests.Runner, f.want, f.runner, r.OutcomeReason)
		}
		if r.Signature.Status != SignatureVerified {
			t.Errorf("%s: signature %+v, want verified", f.name, r.Signature)
		}
	}
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] {
			t.Errorf("%s/%s is not made by the generator; delete it or add it to fixtures()", fixtureDir, e.Name())
		}
	}
}

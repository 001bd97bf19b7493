package ledgertest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Vocabularies of the generated text. They are read-only.
var (
	orgNames  = []string{"acme", "northwind", "globex", "initech", "umbrella", "hooli", "stark-labs", "wayne-ent"}
	repoNames = []string{"widget", "billing-api", "ingest", "scheduler", "authz", "search", "notifier", "ledger-sync", "media-pipeline", "geo"}
	pkgDirs   = []string{"internal/store", "internal/http", "pkg/parser", "pkg/cache", "cmd/server", "internal/queue", "pkg/auth", "internal/report", "pkg/retry", "internal/config"}
	fileStems = []string{"handler", "store", "parser", "cache", "client", "config", "worker", "retry", "limits", "encode", "decode", "session", "index", "router"}
	idents    = []string{"ctx", "req", "resp", "buf", "key", "val", "item", "cfg", "opts", "conn", "rows", "err2", "n", "limit", "offset", "cursor", "token", "batch", "entry", "deadline"}
	funcNames = []string{"Open", "Close", "Lookup", "Parse", "Encode", "Flush", "Retry", "Validate", "Resolve", "Commit", "Fetch", "Store", "Render", "Normalize", "Merge", "Split"}
	typeNames = []string{"Store", "Client", "Parser", "Cache", "Queue", "Session", "Router", "Worker", "Config", "Index"}
	words     = []string{"request", "timeout", "cache", "entry", "deadline", "retry", "empty", "input", "unicode", "nil", "pointer", "race", "lock", "batch", "limit", "offset", "header", "token", "expired", "overflow", "negative", "duplicate", "missing", "field", "config", "default", "concurrent", "write", "read", "path"}
	symptoms  = []string{
		"panics with a nil pointer dereference", "returns stale results after an update", "leaks a goroutine per request",
		"ignores the configured timeout", "double-counts retried requests", "rejects valid unicode input",
		"deadlocks under concurrent writes", "drops the last batch on shutdown", "reports the wrong offset",
		"allocates on every call in the hot path",
	}
	rootCauses = []string{
		"the fix touched the wrong layer; the bug is in the caller's retry loop",
		"the test suite depends on wall-clock time and flakes under load",
		"the sandbox ran out of memory while building the dependency graph",
		"an upstream API change broke the generated client",
		"the agent's patch compiled but changed the public API the tests pin",
		"tool call budget ran out before the failing test was isolated",
	}
)

// pick returns a random element of list.
func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

// logNormal draws from a log-normal distribution with the given median and
// shape sigma, clamped to [lo, hi].
func logNormal(r *rand.Rand, median, sigma, lo, hi float64) float64 {
	v := median * math.Exp(r.NormFloat64()*sigma)
	return min(max(v, lo), hi)
}

// repo is the repository a task is about; a task's re-runs share it.
type repo struct {
	org, name string
	lang      int // index into languages
	issue     int
	pkg       string
	file      string
	symptom   string
	fn, typ   string
}

// language describes how a repository's code and tests look.
type language struct {
	name, runtime, ext string
	goStyle            bool
}

var languages = []language{
	{"go", "go1.22", ".go", true},
	{"python", "python3.11", ".py", false},
	{"python", "python3.12", ".py", false},
	{"javascript", "node20", ".js", false},
}

func newRepo(r *rand.Rand) repo {
	return repo{
		org: pick(r, orgNames), name: pick(r, repoNames), lang: r.IntN(len(languages)),
		issue: 100 + r.IntN(9900), pkg: pick(r, pkgDirs), file: pick(r, fileStems),
		symptom: pick(r, symptoms), fn: pick(r, funcNames), typ: pick(r, typeNames),
	}
}

func (p repo) path() string { return p.pkg + "/" + p.file + languages[p.lang].ext }

// specText is a task's SPEC section: the issue the agent was asked to fix.
func specText(r *rand.Rand, p repo) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Title: %s.%s %s\n\nRepository: github.com/%s/%s\nIssue: #%d\n\n", p.typ, p.fn, p.symptom, p.org, p.name, p.issue)
	fmt.Fprintf(&b, "Since the last release, %s.%s in %s %s when the %s is %s. ", p.typ, p.fn, p.path(), p.symptom, pick(r, words), pick(r, words))
	fmt.Fprintf(&b, "This shows up in production about %d times a day.\n\n", 2+r.IntN(400))
	b.WriteString("Steps to reproduce:\n")
	for i := range 2 + r.IntN(3) {
		fmt.Fprintf(&b, "%d. call %s with a %s %s\n", i+1, p.fn, pick(r, words), pick(r, words))
	}
	fmt.Fprintf(&b, "\nExpected: %s succeeds and returns the %s.\nActual: it %s.\n\nAcceptance: the existing test suite passes and a regression test covers the %s case.\n",
		p.fn, pick(r, words), p.symptom, pick(r, words))
	return []byte(b.String())
}

// planText is a bundle's PLAN section.
func planText(r *rand.Rand, p repo) []byte {
	var b strings.Builder
	steps := []string{
		fmt.Sprintf("Read %s and the callers of %s.%s", p.path(), p.typ, p.fn),
		fmt.Sprintf("Grep for %q to find where the %s is set", p.fn, pick(r, words)),
		fmt.Sprintf("Write a failing regression test for the %s %s case", pick(r, words), pick(r, words)),
		fmt.Sprintf("Fix %s so that it %s", p.fn, pick(r, []string{"checks for nil first", "honours the deadline", "copies the buffer", "holds the lock while reading", "resets the cursor"})),
		"Run the package tests, then the whole suite",
		"Review the diff for API changes",
	}
	n := 3 + r.IntN(len(steps)-2)
	for i := range n {
		fmt.Fprintf(&b, "%d. %s\n", i+1, steps[i])
	}
	return []byte(b.String())
}

// codeLine returns one plausible line of source code.
func codeLine(r *rand.Rand, goStyle bool) string {
	id, id2, fn := pick(r, idents), pick(r, idents), pick(r, funcNames)
	if !goStyle {
		switch r.IntN(8) {
		case 0:
			return "    if " + id + " is None:"
		case 1:
			return "        raise ValueError(\"" + pick(r, words) + " " + pick(r, words) + "\")"
		case 2:
			return "    " + id + " = self." + strings.ToLower(fn) + "(" + id2 + ")"
		case 3:
			return "    # " + pick(r, words) + " " + pick(r, words) + " " + pick(r, words)
		case 4:
			return "    return " + id
		case 5:
			return "def " + strings.ToLower(fn) + "_" + pick(r, words) + "(self, " + id + ", " + id2 + "=None):"
		case 6:
			return "    for " + id + " in " + id2 + ":"
		}
		return "        " + id + ".append(" + id2 + ")"
	}
	switch r.IntN(10) {
	case 0:
		return "\tif err := " + id + "." + fn + "(" + id2 + "); err != nil {"
	case 1:
		return "\t\treturn fmt.Errorf(\"" + strings.ToLower(fn) + " " + pick(r, words) + ": %w\", err)"
	case 2:
		return "\t}"
	case 3:
		return "\t" + id + " := " + id2 + "." + fn + "(ctx)"
	case 4:
		return "func (s *" + pick(r, typeNames) + ") " + fn + "(ctx context.Context, " + id + " []byte) error {"
	case 5:
		return "\t// " + fn + " " + pick(r, words) + " the " + pick(r, words) + " before " + pick(r, words) + "."
	case 6:
		return "\tfor _, " + id + " := range " + id2 + " {"
	case 7:
		return "\treturn " + id + ", nil"
	case 8:
		return ""
	}
	return "\t" + id + " = append(" + id + ", " + id2 + "...)"
}

// diffText is a unified diff of about size bytes (never more, unless size
// is under 1 KiB) over one to four files.
func diffText(r *rand.Rand, p repo, size int) []byte {
	lang := languages[p.lang]
	floor := max(size*3/4, 1<<10)
	b := make([]byte, 0, size+512)
	var h []byte
	files := 1 + r.IntN(4)
	perFile := size / files
	for f := range files {
		path := p.path()
		if f > 0 {
			path = pick(r, pkgDirs) + "/" + pick(r, fileStems) + lang.ext
		}
		b = fmt.Appendf(b, "diff --git a/%s b/%s\nindex %07x..%07x 100644\n--- a/%s\n+++ b/%s\n", path, path, r.Uint32()>>4, r.Uint32()>>4, path, path)
		start := len(b)
		line := 10 + r.IntN(200)
		for len(b)-start < perFile {
			ctx, del, add := 3, r.IntN(4), 1+r.IntN(8)
			h = fmt.Appendf(h[:0], "@@ -%d,%d +%d,%d @@ %s\n", line, ctx*2+del, line, ctx*2+add, codeLine(r, lang.goStyle))
			for _, part := range []struct {
				mark byte
				n    int
			}{{' ', ctx}, {'-', del}, {'+', add}, {' ', ctx}} {
				for range part.n {
					h = append(h, part.mark)
					h = append(h, codeLine(r, lang.goStyle)...)
					h = append(h, '\n')
				}
			}
			if len(b)+len(h) > size && len(b) >= floor {
				return b
			}
			b = append(b, h...)
			line += 20 + r.IntN(80)
		}
	}
	return b
}

// testName returns a test function name in the language's style.
func testName(r *rand.Rand, goStyle bool) string {
	w1, w2 := pick(r, words), pick(r, words)
	if goStyle {
		return "Test" + pick(r, funcNames) + strings.ToUpper(w1[:1]) + w1[1:] + strings.ToUpper(w2[:1]) + w2[1:]
	}
	return "test_" + strings.ToLower(pick(r, funcNames)) + "_" + w1 + "_" + w2
}

// testLogText is a test runner's output of about size bytes; passed says
// whether the run ended green.
func testLogText(r *rand.Rand, p repo, size int, passed bool) []byte {
	lang := languages[p.lang]
	b := make([]byte, 0, size+256)
	failAt := -1
	if !passed {
		failAt = size / 2
	}
	failed := 0
	if lang.goStyle {
		for len(b) < size {
			name := testName(r, true)
			b = append(b, "=== RUN   "+name+"\n"...)
			if failAt >= 0 && len(b) >= failAt && failed < 3 {
				failed++
				b = fmt.Appendf(b, "    %s_test.go:%d: %s(%q) = %d, want %d\n--- FAIL: %s (%.2fs)\n",
					p.file, 20+r.IntN(400), p.fn, pick(r, words), r.IntN(10), 10+r.IntN(10), name, r.Float64())
				continue
			}
			b = fmt.Appendf(b, "--- PASS: %s (%.2fs)\n", name, r.Float64()*0.3)
		}
		pkg := "github.com/" + p.org + "/" + p.name + "/" + p.pkg
		if failed > 0 {
			return fmt.Appendf(b, "FAIL\nFAIL\t%s\t%.3fs\nFAIL\n", pkg, 0.1+r.Float64()*4)
		}
		return fmt.Appendf(b, "PASS\nok  \t%s\t%.3fs\n", pkg, 0.1+r.Float64()*4)
	}
	b = fmt.Appendf(b, "============================= test session starts ==============================\nplatform linux -- Python 3.11.7, pytest-8.1.1, pluggy-1.4.0\nrootdir: /workspace/%s\n", p.name)
	total := 0
	for len(b) < size {
		name := testName(r, false)
		total++
		if failAt >= 0 && len(b) >= failAt && failed < 3 {
			failed++
			b = fmt.Appendf(b, "tests/test_%s.py::%s FAILED\n    assert %s(%q) == %d\nE   AssertionError: got %d\n", p.file, name, strings.ToLower(p.fn), pick(r, words), r.IntN(10), 10+r.IntN(10))
			continue
		}
		b = fmt.Appendf(b, "tests/test_%s.py::%s PASSED\n", p.file, name)
	}
	if failed > 0 {
		return fmt.Appendf(b, "=========================== %d failed, %d passed in %.2fs ===========================\n", failed, total-failed, 0.5+r.Float64()*20)
	}
	return fmt.Appendf(b, "============================== %d passed in %.2fs ==============================\n", total, 0.5+r.Float64()*20)
}

// postmortemText is a POSTMORTEM section for a task that was not solved.
func postmortemText(r *rand.Rand, p repo, outcome string, retry int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Outcome: %s (attempt %d)\nTask: github.com/%s/%s#%d\n\n", outcome, retry+1, p.org, p.name, p.issue)
	fmt.Fprintf(&b, "Root cause: %s.\n", pick(r, rootCauses))
	fmt.Fprintf(&b, "Tried: %s; %s.\n", pick(r, []string{"a guard in " + p.fn, "a retry around the call", "a lock around the " + pick(r, words)}),
		pick(r, []string{"bisecting the failing test", "reading the upstream changelog", "rerunning with -race"}))
	fmt.Fprintf(&b, "Next step: %s.\n", pick(r, []string{"escalate to a human reviewer", "retry with a larger budget", "split the task", "pin the dependency and retry"}))
	return []byte(b.String())
}

// uuid4 draws a random UUID version 4.
func uuid4(r *rand.Rand) [16]byte {
	var u [16]byte
	lo, hi := r.Uint64(), r.Uint64()
	for i := range 8 {
		u[i] = byte(lo >> (8 * i))
		u[8+i] = byte(hi >> (8 * i))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// uuidString writes u in the 8-4-4-4-12 form.
func uuidString(u [16]byte) string {
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[c>>4], hexd[c&15])
	}
	return string(out)
}

// hex8 draws 8 random hex digits.
func hex8(r *rand.Rand) string {
	s := strconv.FormatUint(uint64(r.Uint32()), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

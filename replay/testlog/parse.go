package testlog

// How Parse reads a log
//
// The log is read line by line. Each line is first cleaned: a trailing CR
// is dropped (CRLF logs read like LF ones), text before a bare CR is
// dropped (what a terminal shows after a progress line redraws itself),
// ANSI escape sequences are removed, and so is a leading CI timestamp
// ("2026-01-05T10:00:00.1234567Z "). Lines longer than maxLine bytes are
// skipped: no runner prints a summary line that long.
//
// Each cleaned line is offered to the runners in a fixed order (go test
// -json, go test, cargo, pytest, jest, vitest, node, JUnit); the first
// that recognises it takes it. What each runner counts:
//
//   - go test: with -v (any "=== RUN" or top-level "--- PASS"/"--- SKIP"
//     line) or -json, the top-level tests ("--- PASS: TestX", not the
//     indented subtests, which would count a failing subtest twice with
//     its parent); a package that FAILs without a failing test of its own
//     (a panic, a timeout, TestMain exiting) and a build or setup failure
//     are each one error. Without -v, go test prints only the failing
//     tests, so it counts packages instead (ok, FAIL, and build or setup
//     failures as errors) and says so in Part.Unit.
//   - pytest: the final "=== 3 passed, 1 failed in 0.12s ===" line, with
//     or without its "=" border (-q); xfailed counts as skipped, xpassed
//     as passed, errors as errors; deselected, warnings and reruns are
//     read but not counted.
//   - cargo test: every "test result:" line (unit, integration and doc
//     tests each print one), summed; ignored counts as skipped. "error:
//     could not compile" is one error.
//   - node --test: the "# pass N" / "# fail N" totals of the TAP reporter
//     and the "ℹ pass N" totals of the spec reporter; skipped and todo
//     count as skipped, cancelled as errors.
//   - jest: "Tests: 1 failed, 5 passed, 6 total". A failed test suite
//     with no failed test (a suite that did not compile or load) counts
//     as one error per suite.
//   - vitest: "Tests  2 failed | 10 passed (12)", the same rule for failed
//     test files, and "Errors  N errors" (unhandled errors) after them.
//   - JUnit: Maven Surefire and Ant "Tests run: 10, Failures: 1, Errors:
//     0, Skipped: 2" lines. Per-class lines (those with "Time elapsed" or
//     " - in ") are summed only when the log has no total line; otherwise
//     the total lines (the "Results:" summary, one per module) are summed.
//     Also the JUnit 4 text runner ("OK (5 tests)") and the JUnit 5
//     console launcher ("[ 12 tests successful ]"; failed containers are
//     errors).
//   - plain: a line made only of counts, "12 passed, 1 failed, 2 skipped"
//     (optionally labelled, "Summary: ...", and timed, "in 1.2s").
//
// Several runners in one log (a Go backend and a JavaScript frontend, say)
// are each reported as a Part and their counts are summed. The plain line
// is a fallback: it is used only when no named runner is recognised,
// because wrapper scripts often repeat a runner's totals in that form and
// counting both would count every test twice. Counts saturate at the
// largest int64 instead of overflowing.

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Runner names a test runner whose summary lines Parse recognises.
type Runner string

// The runners Parse recognises.
const (
	GoTest   Runner = "go test"
	Pytest   Runner = "pytest"
	Cargo    Runner = "cargo test"
	NodeTest Runner = "node --test"
	Jest     Runner = "jest"
	Vitest   Runner = "vitest"
	JUnit    Runner = "junit"
	Plain    Runner = "plain"
)

// Units of a Part's counts.
const (
	// UnitTests: each count is a test (or a test case, for JUnit).
	UnitTests = "tests"
	// UnitPackages: each count is a Go package (go test without -v).
	UnitPackages = "packages"
)

// maxLine is the longest line Parse reads; longer lines are skipped.
const maxLine = 8 << 10

// Counts are test totals. Errors are what a runner reports apart from
// failures: tests that could not run, suites that did not load, builds
// that failed.
type Counts struct {
	Passed  int64 `json:"passed"`
	Failed  int64 `json:"failed"`
	Skipped int64 `json:"skipped"`
	Errors  int64 `json:"errors"`
}

// Add returns c + d, each count saturating at the largest int64.
func (c Counts) Add(d Counts) Counts {
	return Counts{
		Passed:  satAdd(c.Passed, d.Passed),
		Failed:  satAdd(c.Failed, d.Failed),
		Skipped: satAdd(c.Skipped, d.Skipped),
		Errors:  satAdd(c.Errors, d.Errors),
	}
}

// String renders "3 passed, 1 failed, 0 skipped, 0 errors".
func (c Counts) String() string {
	return strconv.FormatInt(c.Passed, 10) + " passed, " + strconv.FormatInt(c.Failed, 10) + " failed, " +
		strconv.FormatInt(c.Skipped, 10) + " skipped, " + strconv.FormatInt(c.Errors, 10) + " errors"
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Part is what one runner's summary lines in a log add up to.
type Part struct {
	Runner Runner `json:"runner"`
	Counts Counts `json:"counts"`
	// Unit is UnitTests, or UnitPackages for go test output without -v.
	Unit string `json:"unit"`
	// Lines is how many summary lines were read; FirstLine and LastLine
	// are the 1-based line numbers of the first and the last.
	Lines     int `json:"lines"`
	FirstLine int `json:"first_line"`
	LastLine  int `json:"last_line"`
}

// Summary is what Parse found in a log.
type Summary struct {
	// Parts has one entry per runner recognised, in the order of their
	// first summary line. It is empty when no summary line was found.
	Parts []Part `json:"parts"`
	// Counts is the sum of the parts' counts.
	Counts Counts `json:"counts"`
}

// Found reports whether any runner's summary was recognised.
func (s Summary) Found() bool { return len(s.Parts) > 0 }

// Runner names the runners recognised, joined with " + " in the order of
// Parts, or "" when none was.
func (s Summary) Runner() string {
	names := make([]string, len(s.Parts))
	for i, p := range s.Parts {
		names[i] = string(p.Runner)
	}
	return strings.Join(names, " + ")
}

// Parse reads a test log and returns the runners it recognised and their
// counts. It never fails: a log with no recognisable summary gives an
// empty Summary. The same input always gives the same Summary.
func Parse(log []byte) Summary {
	p := parser{}
	n := 0
	for len(log) > 0 {
		line := log
		if i := bytes.IndexByte(log, '\n'); i >= 0 {
			line, log = log[:i], log[i+1:]
		} else {
			log = nil
		}
		n++
		if len(line) > maxLine {
			continue
		}
		p.line(clean(line), n)
	}
	return p.finish()
}

// clean returns the text a terminal would show for one raw line (see the
// comment at the top of this file).
func clean(line []byte) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if i := bytes.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	s := string(StripANSI(line))
	for {
		loc := reTimestamp.FindStringIndex(s)
		if loc == nil {
			return s
		}
		s = s[loc[1]:]
	}
}

var reTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z `)

// StripANSI returns b without its ANSI escape sequences: CSI sequences
// (colours, cursor movement), OSC sequences (titles, hyperlinks) up to BEL
// or ST, and other escapes (ESC, intermediate bytes, a final byte). It returns b itself when b holds no
// ESC byte.
func StripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != 0x1b {
			out = append(out, b[i])
			i++
			continue
		}
		i = skipEscape(b, i)
	}
	return out
}

// skipEscape returns the index after the escape sequence that starts with
// the ESC at b[i].
func skipEscape(b []byte, i int) int {
	i++
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '[': // CSI: parameter and intermediate bytes, then one final byte
		i++
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
			i++
		}
		if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e {
			i++
		}
		return i
	case ']': // OSC: up to BEL or ESC \
		for i++; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	// Other escapes: intermediate bytes, then one final byte ("ESC ( B").
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x2f {
		i++
	}
	return min(i+1, len(b))
}

// acc accumulates one runner's counts and the lines they came from.
type acc struct {
	counts      Counts
	lines       int
	first, last int
}

func (a *acc) saw(n int) {
	if a.lines == 0 {
		a.first = n
	}
	a.lines++
	a.last = n
}

func (a *acc) part(r Runner, unit string) Part {
	return Part{Runner: r, Counts: a.counts, Unit: unit, Lines: a.lines, FirstLine: a.first, LastLine: a.last}
}

type parser struct {
	goT    goState
	pytest acc
	cargo  acc
	node   acc
	jest   suiteState
	vitest suiteState
	junit  junitState
	plain  acc
}

func (p *parser) line(s string, n int) {
	t := strings.TrimSpace(s)
	if t == "" {
		return
	}
	_ = p.goJSON(t, n) || p.goText(s, n) || p.cargoLine(t, n) || p.pytestLine(t, n) ||
		p.jestLine(t, n) || p.vitestLine(t, n) || p.nodeLine(t, n) || p.junitLine(t, n) || p.plainLine(t, n)
}

func (p *parser) finish() Summary {
	var parts []Part
	add := func(a *acc, r Runner, unit string) {
		if a.lines > 0 {
			parts = append(parts, a.part(r, unit))
		}
	}
	goAcc, goUnit := p.goT.result()
	add(&goAcc, GoTest, goUnit)
	add(&p.pytest, Pytest, UnitTests)
	add(&p.cargo, Cargo, UnitTests)
	jest := p.jest.result()
	add(&jest, Jest, UnitTests)
	vitest := p.vitest.result()
	add(&vitest, Vitest, UnitTests)
	add(&p.node, NodeTest, UnitTests)
	junit := p.junit.result()
	add(&junit, JUnit, UnitTests)
	if len(parts) == 0 {
		add(&p.plain, Plain, UnitTests)
	}
	slices.SortStableFunc(parts, func(a, b Part) int { return a.FirstLine - b.FirstLine })
	s := Summary{Parts: parts}
	for _, pt := range parts {
		s.Counts = s.Counts.Add(pt.Counts)
	}
	return s
}

// num parses a run of decimal digits, saturating at the largest int64.
func num(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64 // only digits reach here: the number is too large
	}
	return v
}

// slot names the count an item adds to.
type slot int

const (
	uncounted slot = iota // read but not counted
	passed
	failed
	skipped
	errored
)

func (c *Counts) add(s slot, v int64) {
	switch s {
	case passed:
		c.Passed = satAdd(c.Passed, v)
	case failed:
		c.Failed = satAdd(c.Failed, v)
	case skipped:
		c.Skipped = satAdd(c.Skipped, v)
	case errored:
		c.Errors = satAdd(c.Errors, v)
	}
}

// items reads "N word" items separated by sep. slotOf says which count
// each word adds to, or false for a word that does not belong; then, as
// when an item is not "N word", items reports false.
func items(s, sep string, slotOf func(word string) (slot, bool)) (c Counts, words []string, ok bool) {
	for _, part := range strings.Split(s, sep) {
		m := reItem.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return Counts{}, nil, false
		}
		sl, ok := slotOf(m[2])
		if !ok {
			return Counts{}, nil, false
		}
		c.add(sl, num(m[1]))
		words = append(words, m[2])
	}
	return c, words, true
}

var reItem = regexp.MustCompile(`^(\d+) ([a-z][a-z ]*[a-z])$`)

// --- go test ---------------------------------------------------------------

type goState struct {
	acc
	verbose  bool
	json     bool
	tests    Counts // top-level tests, from --- lines and -json events
	pkgs     Counts // packages: ok, FAIL, build or setup failures
	pkgLines int
	// errors: packages that failed without a failing test of their own,
	// and build or setup failures, counted with the tests.
	errors    int64
	segFailed int64            // top-level --- FAIL lines since the last package line
	jsonFails map[string]int64 // failing top-level tests per package (-json)
}

func (g *goState) result() (acc, string) {
	a := g.acc
	if g.pkgLines > 0 && !g.verbose && !g.json {
		a.counts = g.pkgs
		return a, UnitPackages
	}
	a.counts = g.tests
	a.counts.Errors = satAdd(a.counts.Errors, g.errors)
	return a, UnitTests
}

var (
	reGoPkg     = regexp.MustCompile(`^(ok|FAIL|\?)[ \t]+(\S+)[ \t]+(.+)$`)
	reGoOKRest  = regexp.MustCompile(`^(?:\(cached\)|\d+(?:\.\d+)?s)(?:[ \t]|$)`)
	reGoFailRst = regexp.MustCompile(`^(?:\d+(?:\.\d+)?s(?:[ \t]|$)|\[(?:build|setup) failed\])`)
)

// goText reads go test's text output. s is the cleaned line, untrimmed:
// top-level "--- PASS" lines start in column 0, subtests' are indented.
func (p *parser) goText(s string, n int) bool {
	g := &p.goT
	for _, marker := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(s, marker) {
			g.verbose = true
			return true
		}
	}
	if rest, ok := strings.CutPrefix(s, "--- "); ok {
		switch {
		case strings.HasPrefix(rest, "PASS: "):
			g.verbose = true
			g.tests.Passed = satAdd(g.tests.Passed, 1)
		case strings.HasPrefix(rest, "FAIL: "):
			g.tests.Failed = satAdd(g.tests.Failed, 1)
			g.segFailed++
		case strings.HasPrefix(rest, "SKIP: "):
			g.verbose = true
			g.tests.Skipped = satAdd(g.tests.Skipped, 1)
		default:
			return false
		}
		g.saw(n)
		return true
	}
	m := reGoPkg.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	switch rest := m[3]; m[1] {
	case "ok":
		if !reGoOKRest.MatchString(rest) {
			return false
		}
		g.pkgs.Passed = satAdd(g.pkgs.Passed, 1)
	case "FAIL":
		if !reGoFailRst.MatchString(rest) {
			return false
		}
		if strings.HasPrefix(rest, "[") {
			g.pkgs.Errors = satAdd(g.pkgs.Errors, 1)
			g.errors = satAdd(g.errors, 1)
		} else {
			g.pkgs.Failed = satAdd(g.pkgs.Failed, 1)
			if g.segFailed == 0 {
				g.errors = satAdd(g.errors, 1)
			}
		}
	case "?":
		if !strings.HasPrefix(rest, "[no test files]") {
			return false
		}
	}
	g.segFailed = 0
	g.pkgLines++
	g.saw(n)
	return true
}

// goEvent is the part of a go test -json event Parse reads.
type goEvent struct {
	Action      string `json:"Action"`
	Package     string `json:"Package"`
	Test        string `json:"Test"`
	FailedBuild string `json:"FailedBuild"`
}

// goJSON reads one go test -json event.
func (p *parser) goJSON(t string, n int) bool {
	if t[0] != '{' || !strings.Contains(t, `"Action"`) {
		return false
	}
	var ev goEvent
	if err := json.Unmarshal([]byte(t), &ev); err != nil || ev.Action == "" {
		return false
	}
	g := &p.goT
	g.json = true
	if ev.Test != "" {
		if strings.Contains(ev.Test, "/") {
			return true // a subtest: counted through its parent
		}
		switch ev.Action {
		case "pass":
			g.tests.Passed = satAdd(g.tests.Passed, 1)
		case "fail":
			g.tests.Failed = satAdd(g.tests.Failed, 1)
			if g.jsonFails == nil {
				g.jsonFails = map[string]int64{}
			}
			g.jsonFails[ev.Package]++
		case "skip":
			g.tests.Skipped = satAdd(g.tests.Skipped, 1)
		default:
			return true
		}
		g.saw(n)
		return true
	}
	switch ev.Action {
	case "fail":
		if ev.FailedBuild != "" || g.jsonFails[ev.Package] == 0 {
			g.errors = satAdd(g.errors, 1)
		}
	case "pass", "skip":
	default:
		return true
	}
	g.saw(n)
	return true
}

// --- cargo test ------------------------------------------------------------

var (
	reCargo      = regexp.MustCompile(`^test result: (?:ok|FAILED)\. (.*)$`)
	reCargoBuild = regexp.MustCompile("^error(?:\\[E\\d+\\])?: could not compile `")
)

func (p *parser) cargoLine(t string, n int) bool {
	if reCargoBuild.MatchString(t) {
		p.cargo.counts.Errors = satAdd(p.cargo.counts.Errors, 1)
		p.cargo.saw(n)
		return true
	}
	m := reCargo.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	rest := m[1]
	if i := strings.Index(rest, "; finished in "); i >= 0 {
		rest = rest[:i]
	}
	c, _, ok := items(rest, ";", func(word string) (slot, bool) {
		switch word {
		case "passed":
			return passed, true
		case "failed":
			return failed, true
		case "ignored":
			return skipped, true
		case "measured", "filtered out":
			return uncounted, true
		}
		return 0, false
	})
	if !ok {
		return false
	}
	p.cargo.counts = p.cargo.counts.Add(c)
	p.cargo.saw(n)
	return true
}

// --- pytest ----------------------------------------------------------------

var (
	rePytestBorder = regexp.MustCompile(`^=+ (.+?) =+$`)
	rePytestTail   = regexp.MustCompile(` in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d(?:\.\d+)?\))?$`)
)

func (p *parser) pytestLine(t string, n int) bool {
	inner := t
	if m := rePytestBorder.FindStringSubmatch(t); m != nil {
		inner = m[1]
	}
	loc := rePytestTail.FindStringIndex(inner)
	if loc == nil {
		return false
	}
	inner = inner[:loc[0]]
	var c Counts
	if inner != "no tests ran" {
		var ok bool
		c, _, ok = items(inner, ",", func(word string) (slot, bool) {
			switch word {
			case "passed", "xpassed":
				return passed, true
			case "failed":
				return failed, true
			case "skipped", "xfailed":
				return skipped, true
			case "error", "errors":
				return errored, true
			case "deselected", "warning", "warnings", "rerun", "reruns":
				return uncounted, true
			}
			return 0, false
		})
		if !ok {
			return false
		}
	}
	p.pytest.counts = p.pytest.counts.Add(c)
	p.pytest.saw(n)
	return true
}

// --- jest and vitest -------------------------------------------------------

// suiteState reads runners that report test suites (files) apart from
// tests: a failed suite with no failed test is an error.
type suiteState struct {
	acc
	pendingSuites int64 // failed suites of the last suite line, not yet matched by a tests line
}

func (s *suiteState) suites(failed int64, n int) {
	s.pendingSuites = satAdd(s.pendingSuites, failed)
	s.saw(n)
}

func (s *suiteState) tests(c Counts, n int) {
	if c.Failed == 0 {
		c.Errors = satAdd(c.Errors, s.pendingSuites)
	}
	s.pendingSuites = 0
	s.counts = s.counts.Add(c)
	s.saw(n)
}

func (s *suiteState) result() acc {
	a := s.acc
	a.counts.Errors = satAdd(a.counts.Errors, s.pendingSuites)
	return a
}

var (
	reJest      = regexp.MustCompile(`^(Tests|Test Suites):\s+(.+)$`)
	reVitest    = regexp.MustCompile(`^(Tests|Test Files)\s+(.+?)\s+\(\d+\)$`)
	reVitestErr = regexp.MustCompile(`^Errors\s+(\d+) errors?\b`)
)

func (p *parser) jestLine(t string, n int) bool {
	m := reJest.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	c, words, ok := items(m[2], ",", func(word string) (slot, bool) {
		switch word {
		case "passed":
			return passed, true
		case "failed":
			return failed, true
		case "skipped", "todo", "pending":
			return skipped, true
		case "total":
			return uncounted, true
		}
		return 0, false
	})
	if !ok || words[len(words)-1] != "total" {
		return false
	}
	if m[1] == "Test Suites" {
		p.jest.suites(c.Failed, n)
	} else {
		p.jest.tests(c, n)
	}
	return true
}

func (p *parser) vitestLine(t string, n int) bool {
	if m := reVitestErr.FindStringSubmatch(t); m != nil && p.vitest.lines > 0 {
		p.vitest.counts.Errors = satAdd(p.vitest.counts.Errors, num(m[1]))
		p.vitest.saw(n)
		return true
	}
	m := reVitest.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	c, _, ok := items(m[2], "|", func(word string) (slot, bool) {
		switch word {
		case "passed":
			return passed, true
		case "failed":
			return failed, true
		case "skipped", "todo", "expected fail":
			return skipped, true
		}
		return 0, false
	})
	if !ok {
		return false
	}
	if m[1] == "Test Files" {
		p.vitest.suites(c.Failed, n)
	} else {
		p.vitest.tests(c, n)
	}
	return true
}

// --- node --test -----------------------------------------------------------

var reNode = regexp.MustCompile(`^(?:#|ℹ) (pass|fail|skipped|todo|cancelled) (\d+)$`)

func (p *parser) nodeLine(t string, n int) bool {
	m := reNode.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	sl := errored // cancelled
	switch m[1] {
	case "pass":
		sl = passed
	case "fail":
		sl = failed
	case "skipped", "todo":
		sl = skipped
	}
	p.node.counts.add(sl, num(m[2]))
	p.node.saw(n)
	return true
}

// --- JUnit -----------------------------------------------------------------

type junitState struct {
	acc
	class, total Counts
	hasTotal     bool
}

func (j *junitState) result() acc {
	a := j.acc
	a.counts = j.class
	if j.hasTotal {
		a.counts = j.total
	}
	return a
}

var (
	reLogPrefix = regexp.MustCompile(`^\[[A-Za-z]+\]\s*`)
	reJUnit     = regexp.MustCompile(`^Tests run:\s*(\d+),\s*Failures:\s*(\d+)(?:,\s*Errors:\s*(\d+))?(?:,\s*Skipped:\s*(\d+))?(.*)$`)
	reJUnit4OK  = regexp.MustCompile(`^OK \((\d+) tests?\)$`)
	reJUnit5    = regexp.MustCompile(`^\[\s*(\d+) (tests|containers) (successful|failed|skipped|aborted|found|started)\s*\]$`)
)

func (p *parser) junitLine(t string, n int) bool {
	j := &p.junit
	if m := reJUnit5.FindStringSubmatch(t); m != nil {
		v := num(m[1])
		switch m[2] + " " + m[3] {
		case "tests successful":
			j.total.Passed = satAdd(j.total.Passed, v)
		case "tests failed":
			j.total.Failed = satAdd(j.total.Failed, v)
		case "tests skipped", "tests aborted":
			j.total.Skipped = satAdd(j.total.Skipped, v)
		case "containers failed", "containers aborted":
			j.total.Errors = satAdd(j.total.Errors, v)
		default:
			return true // found, started, other container lines: read, not counted
		}
		j.hasTotal = true
		j.saw(n)
		return true
	}
	u := reLogPrefix.ReplaceAllString(t, "")
	if m := reJUnit4OK.FindStringSubmatch(u); m != nil {
		j.total.Passed = satAdd(j.total.Passed, num(m[1]))
		j.hasTotal = true
		j.saw(n)
		return true
	}
	m := reJUnit.FindStringSubmatch(u)
	if m == nil {
		return false
	}
	run, failures := num(m[1]), num(m[2])
	var errs, skipped int64
	if m[3] != "" {
		errs = num(m[3])
	}
	if m[4] != "" {
		skipped = num(m[4])
	}
	passed := run
	for _, x := range []int64{failures, errs, skipped} {
		passed -= x
	}
	c := Counts{Passed: max(passed, 0), Failed: failures, Errors: errs, Skipped: skipped}
	if rest := m[5]; strings.Contains(rest, "Time elapsed") || strings.Contains(rest, " - in ") {
		j.class = j.class.Add(c)
	} else {
		j.total = j.total.Add(c)
		j.hasTotal = true
	}
	j.saw(n)
	return true
}

// --- plain -----------------------------------------------------------------

var (
	rePlainLabel = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 _-]{0,30}:\s*`)
	rePlainTime  = regexp.MustCompile(`\s*(?:\bin \d+(?:\.\d+)?m?s|\(\d+(?:\.\d+)?m?s\))$`)
	rePlainSep   = regexp.MustCompile(`\s*[,;|]\s*`)
)

func (p *parser) plainLine(t string, n int) bool {
	s := strings.Trim(t, "=-*#>[]: \t")
	s = rePlainLabel.ReplaceAllString(s, "")
	s = rePlainTime.ReplaceAllString(s, "")
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	c, words, ok := items(rePlainSep.ReplaceAllString(s, ","), ",", func(word string) (slot, bool) {
		switch word {
		case "passed":
			return passed, true
		case "failed":
			return failed, true
		case "skipped":
			return skipped, true
		case "error", "errors", "errored":
			return errored, true
		}
		return 0, false
	})
	if !ok || !slices.ContainsFunc(words, func(w string) bool { return w == "passed" || w == "failed" }) {
		return false
	}
	p.plain.counts = p.plain.counts.Add(c)
	p.plain.saw(n)
	return true
}

package testlog

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const logDir = "testdata/logs"

func readLog(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(logDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// c builds Counts: passed, failed, skipped, errors.
func c(p, f, s, e int64) Counts { return Counts{Passed: p, Failed: f, Skipped: s, Errors: e} }

// part builds the expected Part of one runner.
type wantPart struct {
	runner      Runner
	counts      Counts
	unit        string
	first, last int
}

// TestParseLogs reads one realistic log per runner and case (files in
// testdata/logs) and checks the runners recognised, their counts, units
// and the lines the counts came from.
func TestParseLogs(t *testing.T) {
	tests := []struct {
		file  string
		parts []wantPart
	}{
		// go test
		{"go_verbose_pass.log", []wantPart{{GoTest, c(4, 0, 1, 0), UnitTests, 2, 25}}},
		{"go_verbose_fail.log", []wantPart{{GoTest, c(3, 1, 0, 0), UnitTests, 2, 17}}},
		{"go_plain_pass.log", []wantPart{{GoTest, c(3, 0, 0, 0), UnitPackages, 2, 5}}},
		{"go_plain_fail.log", []wantPart{{GoTest, c(2, 1, 0, 0), UnitPackages, 2, 8}}},
		{"go_build_failed.log", []wantPart{{GoTest, c(1, 0, 0, 1), UnitPackages, 4, 5}}},
		{"go_timeout.log", []wantPart{{GoTest, c(1, 0, 0, 1), UnitTests, 2, 13}}},
		{"go_json.log", []wantPart{{GoTest, c(2, 1, 1, 1), UnitTests, 5, 27}}},
		{"go_ci_timestamps.log", []wantPart{{GoTest, c(1, 1, 0, 0), UnitTests, 3, 7}}},
		// pytest
		{"pytest_pass.log", []wantPart{{Pytest, c(12, 0, 0, 0), UnitTests, 11, 11}}},
		{"pytest_fail.log", []wantPart{{Pytest, c(8, 2, 0, 0), UnitTests, 27, 27}}},
		{"pytest_mixed.log", []wantPart{{Pytest, c(31, 1, 5, 1), UnitTests, 23, 23}}},
		{"pytest_quiet.log", []wantPart{{Pytest, c(79, 1, 0, 0), UnitTests, 9, 9}}},
		{"pytest_no_tests.log", []wantPart{{Pytest, c(0, 0, 0, 0), UnitTests, 6, 6}}},
		{"pytest_collection_error.log", []wantPart{{Pytest, c(0, 0, 0, 1), UnitTests, 13, 13}}},
		{"pytest_long_run.log", []wantPart{{Pytest, c(1200, 0, 4, 0), UnitTests, 8, 8}}},
		{"pytest_ansi.log", []wantPart{{Pytest, c(3, 1, 1, 0), UnitTests, 11, 11}}},
		{"pytest_progress_cr.log", []wantPart{{Pytest, c(3, 0, 0, 0), UnitTests, 3, 3}}},
		// cargo test
		{"cargo_pass.log", []wantPart{{Cargo, c(7, 0, 1, 0), UnitTests, 11, 27}}},
		{"cargo_fail.log", []wantPart{{Cargo, c(3, 1, 0, 0), UnitTests, 23, 23}}},
		{"cargo_fail_crlf.log", []wantPart{{Cargo, c(3, 1, 0, 0), UnitTests, 23, 23}}},
		{"cargo_compile_error.log", []wantPart{{Cargo, c(0, 0, 0, 1), UnitTests, 9, 9}}},
		// node --test
		{"node_tap.log", []wantPart{{NodeTest, c(2, 1, 1, 0), UnitTests, 52, 56}}},
		{"node_spec.log", []wantPart{{NodeTest, c(4, 0, 0, 0), UnitTests, 10, 14}}},
		{"node_spec_cancelled.log", []wantPart{{NodeTest, c(1, 0, 0, 1), UnitTests, 8, 12}}},
		// jest and vitest
		{"jest_pass.log", []wantPart{{Jest, c(27, 0, 3, 0), UnitTests, 6, 7}}},
		{"jest_fail.log", []wantPart{{Jest, c(5, 1, 0, 0), UnitTests, 18, 19}}},
		{"jest_suite_error.log", []wantPart{{Jest, c(0, 0, 0, 1), UnitTests, 9, 10}}},
		{"vitest_pass.log", []wantPart{{Vitest, c(9, 0, 1, 0), UnitTests, 7, 8}}},
		{"vitest_fail.log", []wantPart{{Vitest, c(10, 2, 0, 0), UnitTests, 16, 17}}},
		{"vitest_errors.log", []wantPart{{Vitest, c(6, 0, 0, 1), UnitTests, 15, 17}}},
		// JUnit
		{"maven_pass.log", []wantPart{{JUnit, c(11, 0, 1, 0), UnitTests, 14, 20}}},
		{"maven_fail.log", []wantPart{{JUnit, c(10, 1, 0, 1), UnitTests, 5, 24}}},
		{"maven_multimodule.log", []wantPart{{JUnit, c(13, 0, 2, 0), UnitTests, 8, 20}}},
		{"ant_junit.log", []wantPart{{JUnit, c(19, 1, 0, 0), UnitTests, 3, 5}}},
		{"junit4_text.log", []wantPart{{JUnit, c(8, 1, 0, 0), UnitTests, 10, 10}}},
		{"junit4_ok.log", []wantPart{{JUnit, c(9, 0, 0, 0), UnitTests, 5, 5}}},
		{"junit5_console.log", []wantPart{{JUnit, c(2, 1, 0, 0), UnitTests, 17, 25}}},
		// plain
		{"plain.log", []wantPart{{Plain, c(1, 0, 0, 0), UnitTests, 2, 2}}},
		{"plain_labelled.log", []wantPart{{Plain, c(3, 1, 1, 0), UnitTests, 7, 7}}},
		// several runners: each is a part; the plain TOTAL line is not
		// counted a second time.
		{"mixed_go_jest.log", []wantPart{
			{GoTest, c(2, 0, 0, 0), UnitTests, 3, 7},
			{Jest, c(11, 1, 0, 0), UnitTests, 15, 16},
		}},
		// nothing to recognise
		{"no_summary.log", nil},
		{"prose.log", nil},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			got := Parse(readLog(t, tt.file))
			var want []Part
			var total Counts
			for _, w := range tt.parts {
				lines := 0
				if w.first > 0 {
					lines = -1 // checked below, not compared
				}
				want = append(want, Part{Runner: w.runner, Counts: w.counts, Unit: w.unit, Lines: lines, FirstLine: w.first, LastLine: w.last})
				total = total.Add(w.counts)
			}
			gotParts := make([]Part, len(got.Parts))
			for i, p := range got.Parts {
				if p.Lines < 1 || p.Lines > p.LastLine-p.FirstLine+1 {
					t.Errorf("part %d: %d lines between lines %d and %d", i, p.Lines, p.FirstLine, p.LastLine)
				}
				p.Lines = -1
				gotParts[i] = p
			}
			if len(want) == 0 {
				want = []Part{}
			}
			if !reflect.DeepEqual(gotParts, want) {
				t.Errorf("parts:\n got %+v\nwant %+v", gotParts, want)
			}
			if got.Counts != total {
				t.Errorf("counts = %v, want %v", got.Counts, total)
			}
			if got.Found() != (len(tt.parts) > 0) {
				t.Errorf("Found() = %v", got.Found())
			}
		})
	}
	// Every sample log is in the table.
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !seen[e.Name()] {
			t.Errorf("%s has no row in TestParseLogs", e.Name())
		}
	}
}

// TestParseTransparentToLineEndingsAndColour checks that every sample log
// parses the same with CRLF line endings, with each line wrapped in colour
// codes, and behind a CI timestamp.
func TestParseTransparentToLineEndingsAndColour(t *testing.T) {
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data := readLog(t, e.Name())
		want := Parse(data)
		lf := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
		lines := strings.Split(string(lf), "\n")
		variants := map[string]func(string) string{
			"crlf":      func(l string) string { return l + "\r" },
			"colour":    func(l string) string { return "\x1b[1;31m" + l + "\x1b[0m\x1b]8;;https://ci.example/\x07" },
			"timestamp": func(l string) string { return "2026-01-05T10:00:00.5Z " + l },
		}
		for name, f := range variants {
			out := make([]string, len(lines))
			for i, l := range lines {
				out[i] = l
				if i < len(lines)-1 || l != "" {
					out[i] = f(l)
				}
			}
			if got := Parse([]byte(strings.Join(out, "\n"))); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: got %+v, want %+v", e.Name(), name, got, want)
			}
		}
	}
}

// TestParseLines checks single lines: near misses must not count.
func TestParseLines(t *testing.T) {
	tests := []struct {
		log    string
		runner string
		counts Counts
	}{
		{"=== 2 passed, 1 warning in 0.50s ===", "pytest", c(2, 0, 0, 0)},
		{"===== 3 failed, 2 errors in 1.00s =====", "pytest", c(0, 3, 0, 2)},
		{"=== 5 deselected in 0.02s ===", "pytest", c(0, 0, 0, 0)},
		{"=== 2 passed, 1 exploded in 0.50s ===", "", Counts{}}, // unknown word
		{"=== short test summary info ===", "", Counts{}},       // no counts
		{"=== 2 passed ===", "plain", c(2, 0, 0, 0)},            // not pytest (it always times its run), but a plain summary
		{"test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s", "cargo test", c(0, 0, 0, 0)},
		{"test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out", "cargo test", c(1, 2, 0, 0)},
		{"test result: maybe. 1 passed", "", Counts{}},
		{"Tests:       2 failed, 1 total", "jest", c(0, 2, 0, 0)},
		{"Tests:       2 failed", "plain", c(0, 2, 0, 0)}, // not jest (it always ends with the total), but a plain summary
		{"Tests  1 failed | 3 passed | 1 todo (5)", "vitest", c(3, 1, 1, 0)},
		{"Errors  1 error", "", Counts{}}, // vitest's Errors line only after its totals
		{"# pass 3\n# fail 0", "node --test", c(3, 0, 0, 0)},
		{"# pass three", "", Counts{}},
		{"Tests run: 3, Failures: 4, Errors: 0, Skipped: 0", "junit", c(0, 4, 0, 0)}, // passed clamps at 0
		{"ok  \tgithub.com/a/b\t0.1s\nok  \tgithub.com/a/c\t(cached)", "go test", c(2, 0, 0, 0)},
		{"ok  \tgithub.com/a/b\tsoon", "", Counts{}},
		{"ok github.com/a/b", "", Counts{}},
		{"FAIL\tgithub.com/a/b [setup failed]", "go test", c(0, 0, 0, 1)},
		{"    --- FAIL: TestX/sub (0.00s)", "", Counts{}}, // a subtest alone is not a top-level result
		{"--- FAIL: TestX (0.00s)", "go test", c(0, 1, 0, 0)},
		{"--- BENCH: BenchmarkX", "", Counts{}},
		{`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"pass","Package":"p","Test":"TestA/sub"}`, "go test", c(1, 0, 0, 0)},
		{`{"Action":"fail","Package":"p"}`, "go test", c(0, 0, 0, 1)}, // package failed with no failing test
		{`{"Action": 7}`, "", Counts{}},
		{"12 passed; 0 failed", "plain", c(12, 0, 0, 0)},
		{"RESULT: 4 passed | 1 failed | 1 errors in 3s", "plain", c(4, 1, 0, 1)},
		{"3 skipped", "", Counts{}},                 // plain needs passed or failed
		{"3 passed, 2 apples", "", Counts{}},        // every item must be a count
		{"we had 3 passed, 1 failed", "", Counts{}}, // prose
		{"99999999999999999999999 passed, 1 failed", "plain", Counts{Passed: math.MaxInt64, Failed: 1}},
		{"9223372036854775807 passed\n9223372036854775807 passed", "plain", Counts{Passed: math.MaxInt64}},
		{"", "", Counts{}},
		{"\n\n\r\n", "", Counts{}},
	}
	for _, tt := range tests {
		got := Parse([]byte(tt.log))
		if got.Runner() != tt.runner || got.Counts != tt.counts {
			t.Errorf("Parse(%q) = %q %v, want %q %v", tt.log, got.Runner(), got.Counts, tt.runner, tt.counts)
		}
	}
}

// TestParseSkipsLongLines: a line longer than maxLine is never a summary.
func TestParseSkipsLongLines(t *testing.T) {
	long := "=== 1 failed in 0.10s ===" + strings.Repeat("=", maxLine)
	if got := Parse([]byte(long + "\n=== 2 passed in 0.10s ===\n")); got.Counts != c(2, 0, 0, 0) {
		t.Errorf("counts = %v, want 2 passed", got.Counts)
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[38;5;208morange\x1b[m", "orange"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"a\x1b(Bb", "ab"},
		{"cut\x1b", "cut"},
		{"cut\x1b[12", "cut"},
		{"\x1b]unterminated", ""},
	}
	for _, tt := range tests {
		if got := string(StripANSI([]byte(tt.in))); got != tt.want {
			t.Errorf("StripANSI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCountsString(t *testing.T) {
	if got, want := c(3, 1, 2, 0).String(), "3 passed, 1 failed, 2 skipped, 0 errors"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

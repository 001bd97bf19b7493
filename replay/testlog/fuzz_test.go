package testlog

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse checks that no input makes Parse panic and that its result is
// consistent: deterministic, non-negative counts that are the sum of the
// parts, parts in line order within the log, and the same result for the
// log with CRLF line endings. The seed corpus is testdata/fuzz/FuzzParse
// plus every sample log.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir(logDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(logDir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Parse(data)
		if again := Parse(data); !reflect.DeepEqual(s, again) {
			t.Fatalf("Parse is not deterministic: %+v then %+v", s, again)
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		var sum Counts
		prev := 0
		for i, p := range s.Parts {
			if p.Lines < 1 || p.FirstLine < 1 || p.FirstLine > p.LastLine || p.LastLine > lines {
				t.Fatalf("part %d: %d lines from %d to %d in a log of %d lines", i, p.Lines, p.FirstLine, p.LastLine, lines)
			}
			if p.FirstLine < prev {
				t.Fatalf("part %d starts at line %d, before part %d", i, p.FirstLine, i-1)
			}
			prev = p.FirstLine
			if p.Counts.Passed < 0 || p.Counts.Failed < 0 || p.Counts.Skipped < 0 || p.Counts.Errors < 0 {
				t.Fatalf("part %d: negative counts %+v", i, p.Counts)
			}
			sum = sum.Add(p.Counts)
		}
		if sum != s.Counts {
			t.Fatalf("counts %+v are not the sum of the parts %+v", s.Counts, sum)
		}
		if bytes.IndexByte(data, '\r') < 0 && longestLine(data) < maxLine {
			crlf := bytes.ReplaceAll(data, []byte{'\n'}, []byte("\r\n"))
			if got := Parse(crlf); !reflect.DeepEqual(got, s) {
				t.Fatalf("CRLF changes the result: %+v, LF gave %+v", got, s)
			}
		}
	})
}

func longestLine(data []byte) int {
	longest := 0
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		longest = max(longest, len(l))
	}
	return longest
}

package witness

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

// FuzzParseTrace checks, for any input: ParseTrace never panics; a
// rejection is one *InputError, on one line, naming the input and a line
// that exists; an accepted trace has at most 65535 calls on increasing
// lines, writes back line by line into a trace that parses to the same
// calls, and builds into a bundle that decodes to those calls. The seed
// corpus is testdata/fuzz/FuzzParseTrace plus the golden cases' traces.
func FuzzParseTrace(f *testing.F) {
	traces, err := filepath.Glob(filepath.Join("testdata", "traces", "*.jsonl"))
	if err != nil || len(traces) == 0 {
		f.Fatalf("no traces in testdata/traces (%v)", err)
	}
	for _, path := range traces {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	auto := governance.Autonomous()
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := ParseTrace("fuzz.jsonl", data)
		lines := strings.Count(string(data), "\n") + 1
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || calls != nil || !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("error %T %v with %d calls", err, err, len(calls))
			}
			if ie.Input != "fuzz.jsonl" || ie.Line < 1 || ie.Line > lines || ie.Reason == "" {
				t.Fatalf("error %+v for a %d-line input", *ie, lines)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error is not one line: %q", msg)
			}
			return
		}
		if len(calls) > rvww.MaxToolCalls {
			t.Fatalf("%d calls accepted", len(calls))
		}
		var out strings.Builder
		for i, c := range calls {
			if c.Line < 1 || c.Line > lines || (i > 0 && c.Line <= calls[i-1].Line) {
				t.Fatalf("call %d on line %d of %d (previous %+v)", i, c.Line, lines, calls[max(i-1, 0)])
			}
			out.WriteString(traceLine(c) + "\n")
		}
		again, err := ParseTrace("again.jsonl", []byte(out.String()))
		if err != nil {
			t.Fatalf("written trace does not parse: %v\n%s", err, out.String())
		}
		for i := range again {
			again[i].Line = calls[i].Line
		}
		if !reflect.DeepEqual(again, calls) {
			t.Fatalf("round trip changed the calls:\n%+v\n%+v", calls, again)
		}

		for i := range calls {
			calls[i].HasRecorded = false
		}
		res, err := Build(Parts{TaskID: testTaskID, Created: time.Unix(1, 0), Policy: &auto, Calls: calls}, Options{})
		if err != nil {
			t.Fatalf("accepted trace does not build: %v", err)
		}
		b, err := rvww.Decode(res.Bundle)
		if err != nil || len(b.Calls) != len(calls) {
			t.Fatalf("built bundle: %v", err)
		}
		for i, c := range calls {
			if r := b.Calls[i]; r.Action != c.Tool || r.ArgsHash != c.ArgsHash || r.ResultHash != c.ResultHash || r.CostMicrodollars != c.CostMicrodollars {
				t.Fatalf("record %d %+v from call %+v", i, r, c)
			}
		}
	})
}

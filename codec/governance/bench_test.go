package governance

import (
	"fmt"
	"testing"
)

// benchCalls makes n calls as a producer following p would record them
// (honest), or all recorded as the wrong decision (every call a finding).
func benchCalls(p Policy, n int, honest bool) []Call {
	tools := []string{"Read", "Grep", "Glob", "WebFetch", "Read", "Grep", "mcp__github__get_issue"}
	cs := make([]Call, n)
	for i := range cs {
		d := p.Check(tools[i%len(tools)])
		if !honest {
			d = (d + 1) % 3
		}
		cs[i] = Call{Index: i, Action: tools[i%len(tools)], Recorded: uint8(d), CostMicrodollars: 10}
	}
	return cs
}

// BenchmarkEvaluate replays traces of 50 and 500 calls against each default
// policy: honest traces, and traces where every record disagrees.
func BenchmarkEvaluate(b *testing.B) {
	for _, p := range Defaults() {
		for _, tt := range []struct {
			n      int
			honest bool
		}{{50, true}, {500, true}, {50, false}} {
			calls := benchCalls(p, tt.n, tt.honest)
			kind := "honest"
			if !tt.honest {
				kind = "all_mismatched"
			}
			b.Run(fmt.Sprintf("%s/%d_calls_%s", p.Name, tt.n, kind), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = Evaluate(p, uint8(p.Mode), calls)
				}
			})
		}
	}
}

func BenchmarkHash(b *testing.B) {
	p := Restricted()
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Hash()
	}
}

func BenchmarkParsePolicy(b *testing.B) {
	for _, file := range []string{"custom_read_grep.json", "custom_read_grep.yaml"} {
		var data []byte
		for _, s := range policySamples(b) {
			if s.file == file {
				data = s.data
			}
		}
		b.Run(file, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParsePolicy(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package rvww

import (
	"fmt"
	"strings"
	"testing"
)

// realistic builds a signed bundle of about 64 KiB with 50 tool calls: a
// long issue text, a plan, a large diff and a test log.
func realistic(tb testing.TB) (*Bundle, []byte) {
	tb.Helper()
	b := base("benchmark", 0, OutcomeSolved, ModeAutonomous, hash8(hashAutonomous), nil)
	var spec, plan, diff, log strings.Builder
	for i := range 40 {
		fmt.Fprintf(&spec, "Paragraph %d of the issue: the paginator returns a duplicate row when the page size divides the total.\n", i)
	}
	for i := range 30 {
		fmt.Fprintf(&plan, "%d. Inspect module %d and adjust its bound checks\n", i+1, i)
	}
	for i := 0; diff.Len() < 40_000; i++ {
		fmt.Fprintf(&diff, "@@ -%d,3 +%d,3 @@\n-    for i in start..=end { visit(i) }\n+    for i in start..end { visit(i) }\n     total += 1;\n", i*10, i*10)
	}
	for i := 0; log.Len() < 16_000; i++ {
		fmt.Fprintf(&log, "test pager::case_%04d ... ok\n", i)
	}
	b.Spec, b.Plan, b.Diff, b.TestLog = []byte(spec.String()), []byte(plan.String()), []byte(diff.String()), []byte(log.String())
	tools := []string{"Read", "Grep", "Glob", "Edit", "Bash", "WebFetch", "mcp__github__get_issue"}
	for i := range 50 {
		b.Calls = append(b.Calls, call(i, tools[i%len(tools)], CheckAllowed, uint32(20+i*7), uint32(100+i), uint32(500+i*11)))
	}
	data, err := Encode(b, readKey(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return b, data
}

func benchInputs(b *testing.B) map[string][]byte {
	_, big := realistic(b)
	return map[string][]byte{"vector": readVector(b, vectorFile), "64KiB_50calls": big}
}

func BenchmarkDecode(b *testing.B) {
	for _, name := range []string{"vector", "64KiB_50calls"} {
		data := benchInputs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeVerify(b *testing.B) {
	keys := []Key{{Name: "k", Secret: readKey(b)}}
	for _, name := range []string{"vector", "64KiB_50calls"} {
		data := benchInputs(b)[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				bundle, err := Decode(data)
				if err != nil {
					b.Fatal(err)
				}
				if fs := bundle.Verify(keys); len(fs) != 0 {
					b.Fatal(fs)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	key := readKey(b)
	vec, err := Decode(readVector(b, vectorFile))
	if err != nil {
		b.Fatal(err)
	}
	big, bigData := realistic(b)
	for _, tt := range []struct {
		name   string
		bundle *Bundle
		size   int
	}{{"vector", vec, len(vec.Bytes())}, {"64KiB_50calls", big, len(bigData)}} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(tt.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(tt.bundle, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package avirrun

import (
	"math"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
)

// FuzzParseReport feeds arbitrary driver reports to parseReport. It must
// not panic, and what it accepts must respect the plan: steps in order,
// no more than the plan has, a step open only when not done.
// Seeds: testdata/fuzz/FuzzParseReport.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte("B setup 0\nE setup 0 0 1 0 - -\nB run 0\nE run 0 0 5 3 34320a -\nB teardown 0\nE teardown 0 0 1 0 - -\nD\n"), uint8(0), uint8(1), uint8(1), uint8(1))
	f.Add([]byte("B run 0\nE run 0 1 1 0 - 6f6f7073\nD\n"), uint8(1), uint8(3), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, warm, runs, setup, teardown uint8) {
		p := plan{timeout: time.Second, command: "c", warmup: int(warm % 8), runs: int(runs % 8)}
		p.setup = make([]string, setup%4)
		p.teardown = make([]string, teardown%4)
		r, err := parseReport(data, p)
		if err != nil {
			return
		}
		if len(r.ended) > p.steps() {
			t.Fatalf("%d steps ended, the plan has %d", len(r.ended), p.steps())
		}
		if r.done && r.open != nil {
			t.Fatal("done with a step open")
		}
		for _, e := range r.ended {
			if len(e.stdout) > tailBytes || len(e.stderr) > stderrBytes || e.status < 0 || e.status > 255 {
				t.Fatalf("step %+v out of bounds", e)
			}
		}
	})
}

// FuzzMeasurement feeds arbitrary output tails through lastLine and
// parseMeasurement: no panic, and an accepted value is a finite JSON
// number, an int within ±2^53 when written as one.
// Seeds: testdata/fuzz/FuzzMeasurement.
func FuzzMeasurement(f *testing.F) {
	f.Add([]byte("warming up\n42\n"), int64(14))
	f.Add([]byte("3.5\r\n\n"), int64(6))
	f.Add([]byte("1e400"), int64(5))
	f.Fuzz(func(t *testing.T, tail []byte, size int64) {
		if len(tail) > tailBytes {
			tail = tail[len(tail)-tailBytes:]
		}
		line, err := lastLine(tail, size)
		if err != nil {
			return
		}
		v, err := parseMeasurement(line)
		if err != nil {
			return
		}
		if v.Type() != canonjson.Number {
			t.Fatalf("%q gave a %s", line, v.Type())
		}
		if v.IsInt() {
			i, ok := v.Int64()
			if !ok || i > maxInt || i < -maxInt {
				t.Fatalf("%q gave int %s", line, v.Literal())
			}
		} else if x, ok := v.Float64(); !ok || math.IsInf(x, 0) || math.IsNaN(x) {
			t.Fatalf("%q gave float %s", line, v.Literal())
		}
	})
}

// FuzzParseCPUList: no panic, and an accepted list counts at least one
// CPU and at most what its text can name.
// Seeds: testdata/fuzz/FuzzParseCPUList.
func FuzzParseCPUList(f *testing.F) {
	f.Add("0-3,5,7-8\n")
	f.Add("0")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCPUList(s)
		if err == nil && (n < 1 || n > 1<<21) {
			t.Fatalf("%q counts %d CPUs", s, n)
		}
	})
}

// FuzzParseMemTotal: no panic; an accepted size is below 2^43 kB.
// Seeds: testdata/fuzz/FuzzParseMemTotal.
func FuzzParseMemTotal(f *testing.F) {
	f.Add([]byte("MemTotal:       24684084 kB\nMemFree: 1 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kb, err := parseMemTotal(b)
		if err == nil && kb > 1<<43 {
			t.Fatalf("MemTotal %d kB", kb)
		}
	})
}

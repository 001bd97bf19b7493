package canonjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks, for any input: Parse never panics; a reused Parser
// (Parse and ParseString) agrees with it; whatever it accepts is valid JSON; and decode → Canonical → decode → Canonical is stable, as is
// decode → Indent → decode.
func FuzzParse(f *testing.F) {
	for _, tc := range canonicalCases {
		f.Add([]byte(tc.in))
	}
	for _, in := range rejectCases {
		f.Add([]byte(in))
	}
	var ps Parser // reused across inputs, as scans reuse one
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		pv, perr := ps.Parse(data)
		if (err == nil) != (perr == nil) || err == nil && !Equal(v, pv) {
			t.Fatalf("Parser.Parse(%q) = %v, %v; Parse gave %v, %v", data, pv, perr, v, err)
		}
		sv, serr := ps.ParseString(string(data))
		if (err == nil) != (serr == nil) || err == nil && !Equal(v, sv) {
			t.Fatalf("Parser.ParseString(%q) = %v, %v; Parse gave %v, %v", data, sv, serr, v, err)
		}
		if err != nil {
			return
		}
		body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		c1 := Canonical(v)
		if bytes.Contains(c1, []byte("Infinity")) {
			return // Python's spelling of an overflowed float; not JSON.
		}
		v2, err := Parse(c1)
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", c1, err)
		}
		if c2 := Canonical(v2); !bytes.Equal(c1, c2) {
			t.Fatalf("canonical not stable:\n%q\n%q", c1, c2)
		}
		v3, err := Parse(Indent(v))
		if err != nil {
			t.Fatalf("indented output does not parse: %v", err)
		}
		if c3 := Canonical(v3); !bytes.Equal(c1, c3) {
			t.Fatalf("indent round trip changed value:\n%q\n%q", c1, c3)
		}
	})
}

// FuzzReprFloat checks that copying a float literal unchanged (the
// isReprFloat shortcut) always agrees with parsing and re-formatting it.
func FuzzReprFloat(f *testing.F) {
	f.Add(53.2681110000226, uint8(13))
	f.Add(0.1, uint8(1))
	f.Add(1e15, uint8(1))
	f.Add(0.00012, uint8(5))
	f.Fuzz(func(t *testing.T, x float64, prec uint8) {
		lit := strconv.FormatFloat(x, 'f', int(prec%25), 64)
		if !strings.Contains(lit, ".") {
			lit += ".0"
		}
		v, ok := MakeNumber(lit)
		if !ok {
			return
		}
		g, _ := v.Float64()
		if got, want := string(Canonical(v)), FormatFloat(g); got != want {
			t.Fatalf("Canonical(%s) = %s, want %s", lit, got, want)
		}
	})
}

package rvww

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestEncodeReproducesVector decodes the reference vector and re-encodes its
// content with its key: the bytes must be identical.
func TestEncodeReproducesVector(t *testing.T) {
	data := readVector(t, vectorFile)
	b, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	// Only the content counts: clobber what Encode must derive itself.
	b.Header.Flags, b.Header.SectionCount, b.Header.ToolCallCount, b.Header.TotalSize = 0xffff, 99, 99, 1
	b.Header.TotalCostMicrodollars, b.Header.TotalLatencyMS, b.Header.TotalTokens, b.Header.Version = 1, 2, 3, 7
	out, err := Encode(b, readKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, data) {
		t.Fatalf("re-encoded vector differs:\n got %x\nwant %x", out, data)
	}
	unsigned, err := Encode(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantUnsigned := bytes.Clone(data[:len(data)-SignatureSize])
	put16(wantUnsigned, offFlags, get16(wantUnsigned, offFlags)&^FlagSigned)
	put32(wantUnsigned, offTotalSize, uint32(len(wantUnsigned)))
	if !bytes.Equal(unsigned, wantUnsigned) {
		t.Fatalf("unsigned encoding differs:\n got %x\nwant %x", unsigned, wantUnsigned)
	}
}

// TestEncodeReproducesSamples re-encodes every well-formed sample whose
// totals are consistent and checks the bytes are unchanged.
func TestEncodeReproducesSamples(t *testing.T) {
	key := readKey(t)
	n := 0
	for _, s := range samples(t) {
		b, err := Decode(s.data)
		if err != nil || len(b.Verify([]Key{{Secret: key}})) > 0 {
			continue
		}
		k := key
		if !b.Signed() {
			k = nil
		}
		out, err := Encode(b, k)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !bytes.Equal(out, s.data) {
			t.Errorf("%s: re-encoding changed the bytes", s.name)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d samples re-encoded", n)
	}
}

// sameContent reports how a and b differ in content (what Encode reads and
// Decode restores), ignoring offsets; "" when they do not.
func sameContent(a, b *Bundle) string {
	ha, hb := a.Header, b.Header
	if ha.TaskID != hb.TaskID || ha.PolicyHash != hb.PolicyHash || ha.CreatedNS != hb.CreatedNS ||
		ha.Outcome != hb.Outcome || ha.Mode != hb.Mode || ha.RetryCount != hb.RetryCount {
		return fmt.Sprintf("header %+v != %+v", ha, hb)
	}
	for _, s := range []struct {
		name         string
		hasA, hasB   bool
		valueA, valB []byte
	}{
		{"SPEC", a.HasSpec, b.HasSpec, a.Spec, b.Spec},
		{"PLAN", a.HasPlan, b.HasPlan, a.Plan, b.Plan},
		{"DIFF", a.HasDiff, b.HasDiff, a.Diff, b.Diff},
		{"TEST_LOG", a.HasTestLog, b.HasTestLog, a.TestLog, b.TestLog},
		{"POSTMORTEM", a.HasPostmortem, b.HasPostmortem, a.Postmortem, b.Postmortem},
	} {
		if s.hasA != s.hasB || !bytes.Equal(s.valueA, s.valB) {
			return fmt.Sprintf("%s: %v %q != %v %q", s.name, s.hasA, s.valueA, s.hasB, s.valB)
		}
	}
	if len(a.Calls) != len(b.Calls) {
		return fmt.Sprintf("%d calls != %d", len(a.Calls), len(b.Calls))
	}
	for i := range a.Calls {
		ca, cb := a.Calls[i], b.Calls[i]
		ca.Offset, cb.Offset, ca.Index, cb.Index = 0, 0, 0, 0
		if ca != cb {
			return fmt.Sprintf("call %d: %+v != %+v", i, ca, cb)
		}
	}
	if len(a.Unknown) != len(b.Unknown) {
		return fmt.Sprintf("%d unknown sections != %d", len(a.Unknown), len(b.Unknown))
	}
	for i := range a.Unknown {
		ua, ub := a.Unknown[i], b.Unknown[i]
		if ua.Tag != ub.Tag || !bytes.Equal(ua.Value, ub.Value) {
			return fmt.Sprintf("unknown section %d: %v != %v", i, ua, ub)
		}
	}
	return ""
}

// TestEncodeDecodeRoundTrip builds bundles, encodes them signed and
// unsigned, and checks Decode restores the content and derives the header
// as the reference builder does.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	key := []byte("round-trip key")
	for _, tt := range []struct {
		name  string
		b     *Bundle
		flags uint16 // unsigned
		count uint16 // section_count
	}{
		{"empty", &Bundle{}, 0, 0},
		{"every section", func() *Bundle {
			b := base("every", 1, OutcomeFailed, ModeApproved, hash8(hashApproved), writeCalls(CheckConfirmed))
			b.Postmortem, b.HasPostmortem = []byte("pm"), true
			return b
		}(), 0x7e, 6},
		{"empty present sections", &Bundle{HasSpec: true, HasPostmortem: true, Spec: []byte{}}, FlagHasSpec | FlagHasPostmortem, 2},
		{"trace only", &Bundle{Calls: calls(tc("Read", CheckAllowed, 1, 2, 3))}, FlagHasTrace, 1},
		{"unknown sections kept in order", &Bundle{HasDiff: true, Diff: []byte("d"), Unknown: []Section{
			{Tag: 0x0100, Value: []byte("x")}, {Tag: 0, Value: nil}, {Tag: 0x0100, Value: []byte("again")}}}, FlagHasDiff, 4},
		{"unicode action and max values", &Bundle{Header: Header{CreatedNS: math.MaxUint64, Outcome: 255, Mode: 255, RetryCount: math.MaxUint16},
			Calls: calls(tc("Grép/読む", CheckDenied, math.MaxUint32, math.MaxUint32, math.MaxUint32), tc("", CheckConfirmed, 1, 1, 1))}, FlagHasTrace, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range [][]byte{nil, key, {}} {
				data, err := Encode(tt.b, k)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Decode(data)
				if err != nil {
					t.Fatalf("Decode(Encode(b)): %v", err)
				}
				if diff := sameContent(tt.b, got); diff != "" {
					t.Fatalf("key %q: content changed: %s", k, diff)
				}
				wantFlags := tt.flags
				if k != nil {
					wantFlags |= FlagSigned
				}
				if got.Header.Flags != wantFlags || got.Header.SectionCount != tt.count || got.Header.TotalSize != uint32(len(data)) ||
					int(got.Header.ToolCallCount) != len(tt.b.Calls) || got.Signed() != (k != nil) {
					t.Errorf("key %q: header %+v, want flags 0x%x, %d sections", k, got.Header, wantFlags, tt.count)
				}
				keys := []Key{{Name: "k", Secret: k}}
				if fs := got.Verify(keys); len(fs) != 0 {
					t.Errorf("key %q: Verify = %v", k, fs)
				}
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	many := make([]ToolCall, MaxToolCalls+1)
	for _, tt := range []struct {
		name string
		b    *Bundle
		want string
	}{
		{"nil", nil, "nil bundle"},
		{"too many calls", &Bundle{Calls: many}, "65536 tool calls"},
		{"long action", &Bundle{Calls: []ToolCall{{Action: strings.Repeat("a", MaxActionLen+1)}}}, "65536 bytes"},
		{"action not UTF-8", &Bundle{Calls: []ToolCall{{Action: "Re\xffd"}}}, "not valid UTF-8"},
		{"policy check 3", &Bundle{Calls: []ToolCall{{Action: "Read", PolicyCheck: 3}}}, "policy check 3"},
		{"unknown section with a known tag", &Bundle{Unknown: []Section{{Tag: TagTrace}}}, "known tag TRACE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Encode(tt.b, nil)
			if out != nil || !errors.Is(err, ErrUnencodable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode = %d bytes, %v; want ErrUnencodable mentioning %q", len(out), err, tt.want)
			}
		})
	}
	// The limits themselves are accepted.
	max := &Bundle{Calls: slices.Repeat([]ToolCall{{Action: "x"}}, MaxToolCalls)}
	max.Calls[0].Action = strings.Repeat("a", MaxActionLen)
	data, err := Encode(max, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil || len(got.Calls) != MaxToolCalls || len(got.Calls[0].Action) != MaxActionLen {
		t.Fatalf("max bundle: %v", err)
	}
}

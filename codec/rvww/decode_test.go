package rvww

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
)

func readVector(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The reference vector's layout: SPEC at 64, PLAN at 111, TRACE at 160
// (records at 166, 202, 238), DIFF at 274, TEST_LOG at 374, signature at
// 424, 456 bytes in all.
const vectorFile = "01_solved_autonomous_signed.rvww"

// TestDecodeFindingOffsets edits the reference vector in one place and
// checks the exact findings: field, byte offset and a telling part of the
// reason.
func TestDecodeFindingOffsets(t *testing.T) {
	type finding struct {
		field  string
		offset int64
		reason string // substring
	}
	for _, tt := range []struct {
		name string
		edit func(d []byte) []byte
		want []finding
	}{
		{"one byte short of a header", func(d []byte) []byte { return d[:63] },
			[]finding{{"header", 63, "shorter than the 64-byte header"}}},
		{"empty input", func(d []byte) []byte { return nil },
			[]finding{{"header", 0, "input is 0 bytes"}}},
		{"big-endian magic", func(d []byte) []byte { copy(d, "RVWW"); return d },
			[]finding{{"header.magic", 0, "got 52 56 57 57"}}},
		{"version 0", func(d []byte) []byte { put16(d, offVersion, 0); return d },
			[]finding{{"header.version", 4, "want 1, got 0"}}},
		{"declared one byte more", func(d []byte) []byte { put32(d, offTotalSize, 457); return d },
			// The header then puts the signature at 425, so the byte at 424
			// reads as the start of a sixth section.
			[]finding{{"header.total_bundle_size", 60, "truncated: header says 457 bytes, have 456"},
				{"sections[5]", 424, "1 bytes left before the start of the signature at offset 425"}}},
		{"one trailing byte", func(d []byte) []byte { return append(d, 0) },
			[]finding{{"header.total_bundle_size", 60, "trailing 1 bytes"}}},
		{"declared smaller than a header", func(d []byte) []byte { put32(d, offTotalSize, 10); return d },
			[]finding{{"header.total_bundle_size", 60, "less than the 64-byte header"}}},
		{"unknown flag bit", func(d []byte) []byte { put16(d, offFlags, get16(d, offFlags)|0x0100); return d },
			[]finding{{"header.flags", 6, "unknown flag bits 0x0100"}}},
		{"TEST_LOG one byte into the signature", func(d []byte) []byte { put32(d, 376, 45); return d },
			[]finding{{"sections[4].length", 376, "TEST_LOG value of 45 bytes at offset 380 runs past the start of the signature at offset 424"}}},
		{"PLAN retagged SPEC", func(d []byte) []byte { put16(d, 111, TagSpec); return d },
			[]finding{{"sections[1].tag", 111, "duplicate SPEC section (the first is at offset 64)"},
				{"header.flags", 6, "HAS_PLAN (0x0004) is set but there is no PLAN section"}}},
		{"PLAN retagged unknown", func(d []byte) []byte { put16(d, 111, 0x0042); return d },
			[]finding{{"header.flags", 6, "HAS_PLAN (0x0004) is set but there is no PLAN section"}}},
		{"section_count 4", func(d []byte) []byte { put16(d, offSectionCount, 4); return d },
			[]finding{{"header.section_count", 58, "header says 4, found 5 sections"}}},
		{"tool_call_count 2", func(d []byte) []byte { put16(d, offToolCallCount, 2); return d },
			[]finding{{"header.tool_call_count", 42, "header says 2, TRACE holds 3"}}},
		{"policy_check 3", func(d []byte) []byte { d[204] = 3; return d },
			[]finding{{"trace[1].policy_check", 204, "got 3"}}},
		{"pad byte", func(d []byte) []byte { d[241] = 1; return d },
			[]finding{{"trace[2].pad", 241, "must be 0, got 0x01"}}},
		{"action not UTF-8", func(d []byte) []byte { d[166+32] = 0xc3; return d },
			[]finding{{"trace[0].action", 198, "not valid UTF-8 (byte 0xc3)"}}},
		{"action_len past the trace", func(d []byte) []byte { put16(d, 238, 5); return d },
			[]finding{{"trace[2].action_len", 238, "action of 5 bytes at offset 270 runs past the TRACE section end at offset 274"}}},
		{"SIGNED cleared: the signature reads as a section", func(d []byte) []byte {
			put16(d, offFlags, get16(d, offFlags)&^FlagSigned)
			return d
		}, []finding{{"sections[5].length", 426, "runs past the sections end at offset 456"}}},
		{"TRACE flag cleared and count zero: still a TRACE", func(d []byte) []byte {
			put16(d, offFlags, get16(d, offFlags)&^FlagHasTrace)
			return d
		}, []finding{{"header.flags", 6, "TRACE section at offset 160 but HAS_TRACE (0x0008) is not set"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.edit(readVector(t, vectorFile))
			b, err := Decode(data)
			if b != nil || !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("Decode = %v, %v; want a malformed error", b, err)
			}
			var me *codec.MalformedError
			if !errors.As(err, &me) {
				t.Fatalf("error %T is not a *codec.MalformedError", err)
			}
			if len(me.Findings) != len(tt.want) {
				t.Fatalf("findings = %v, want %d", me.Findings, len(tt.want))
			}
			for i, w := range tt.want {
				f := me.Findings[i]
				if f.Code != "malformed" || f.Field != w.field || f.Offset != w.offset || !strings.Contains(f.Reason, w.reason) {
					t.Errorf("finding %d = %+v, want field %s offset %d reason containing %q", i, f, w.field, w.offset, w.reason)
				}
			}
		})
	}
}

// TestDecodeVector checks every decoded field of the reference vector.
func TestDecodeVector(t *testing.T) {
	data := readVector(t, vectorFile)
	b, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Header
	if h.Version != 1 || h.Flags != 0x3f || string(h.TaskID[:]) != "seedref-task-001" ||
		DefaultPolicyName(h.PolicyHash) != "autonomous" || h.CreatedNS != 1795322099824745397 ||
		h.Outcome != OutcomeSolved || h.Mode != ModeAutonomous || h.ToolCallCount != 3 ||
		h.TotalCostMicrodollars != 370 || h.TotalLatencyMS != 2230 || h.TotalTokens != 1700 ||
		h.RetryCount != 1 || h.SectionCount != 5 || h.TotalSize != 456 {
		t.Errorf("header = %+v", h)
	}
	if string(b.Spec) != "Fix off-by-one in pagination (issue #101)" || !b.HasPlan || !strings.HasPrefix(string(b.Diff), "--- a/src/pager.rs") ||
		!strings.HasSuffix(string(b.TestLog), "1 passed, 0 failed") || b.HasPostmortem || b.Postmortem != nil || len(b.Unknown) != 0 {
		t.Errorf("sections: spec %q plan %v diff %q log %q postmortem %v unknown %v", b.Spec, b.HasPlan, b.Diff, b.TestLog, b.HasPostmortem, b.Unknown)
	}
	wantCalls := []ToolCall{
		{Index: 0, Action: "Read", LatencyMS: 40, CostMicrodollars: 120, Tokens: 600, Offset: 166},
		{Index: 1, Action: "Edit", LatencyMS: 90, CostMicrodollars: 250, Tokens: 1100, Offset: 202},
		{Index: 2, Action: "Bash", LatencyMS: 2100, Offset: 238},
	}
	if len(b.Calls) != len(wantCalls) {
		t.Fatalf("calls = %+v", b.Calls)
	}
	for i, w := range wantCalls {
		c := b.Calls[i]
		c.ArgsHash, c.ResultHash = [8]byte{}, [8]byte{}
		if c != w {
			t.Errorf("call %d = %+v, want %+v", i, c, w)
		}
	}
	if b.Calls[0].ArgsHash != [8]byte{0x3c, 0x92, 0x85, 0x7e, 0xa2, 0x73, 0x31, 0xe5} {
		t.Errorf("args hash = %x", b.Calls[0].ArgsHash)
	}
	if got := b.Signature(); string(got) != string(data[424:]) {
		t.Errorf("signature = %x", got)
	}
	// The bundle owns its bytes: editing the input afterwards changes nothing.
	data[70] = 'X'
	if b.Spec[0] != 'F' || b.Bytes()[70] != 'F' {
		t.Error("Decode aliases its input")
	}
}

// TestDecodeHugeLengthDoesNotAllocate decodes inputs whose length fields
// claim gigabytes and checks the bytes allocated stay proportional to the
// input (the input copy, the findings), not to the lengths.
func TestDecodeHugeLengthDoesNotAllocate(t *testing.T) {
	for _, name := range []string{"section_huge_length", "trace_action_overflow", "size_truncated"} {
		data, err := os.ReadFile(filepath.Join(sampleDir, name+".rvww"))
		if err != nil {
			t.Fatal(err)
		}
		const runs = 50
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if _, err := Decode(data); err == nil {
				t.Fatalf("%s decoded", name)
			}
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		if limit := uint64(8*len(data) + 4096); perRun > limit {
			t.Errorf("%s (%d bytes): Decode allocated %d bytes per run, want at most %d", name, len(data), perRun, limit)
		}
	}
}

// TestDecodeFindingsCap checks a trace of thousands of bad records yields a
// bounded list of findings that says how many it left out.
func TestDecodeFindingsCap(t *testing.T) {
	var trace []byte
	for range 500 {
		trace = append(trace, record("Read", 9, 9, 4)...) // two findings each
	}
	data := rawTrace(t, &Bundle{}, trace, 500, nil)
	_, err := Decode(data)
	fs := codec.FindingsOf(err)
	if len(fs) != maxFindings+1 {
		t.Fatalf("%d findings, want %d", len(fs), maxFindings+1)
	}
	if last := fs[len(fs)-1]; !strings.Contains(last.Reason, "900 more problems not listed") {
		t.Errorf("last finding = %+v", last)
	}
}

func TestDecodeCountWithoutTrace(t *testing.T) {
	data := mustEncode(t, &Bundle{HasSpec: true, Spec: []byte("s")}, nil)
	put16(data, offToolCallCount, 2)
	_, err := Decode(data)
	fs := codec.FindingsOf(err)
	if len(fs) != 1 || fs[0].Field != "header.tool_call_count" || fs[0].Offset != 42 || fs[0].Reason != "header says 2, but there is no TRACE section" {
		t.Fatalf("findings = %v", fs)
	}
}

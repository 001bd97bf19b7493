package rvww

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
)

func TestVerifyKeys(t *testing.T) {
	key := readKey(t)
	signed := readVector(t, vectorFile)
	b0, err := Decode(signed)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := Encode(b0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		data     []byte
		keys     []Key
		want     []want
		verified string
	}{
		{"first key verifies", signed, []Key{{Name: "a", Secret: key}, {Name: "b", Secret: []byte("x")}}, nil, "a"},
		{"second key verifies", signed, []Key{{Name: "a", Secret: []byte("x")}, {Name: "b", Secret: key}}, nil, "b"},
		{"unnamed key is numbered", signed, []Key{{Secret: []byte("x")}, {Secret: key}}, nil, "key #2"},
		{"key with a trailing newline is another key", signed, []Key{{Name: "nl", Secret: append(slices.Clone(key), '\n')}},
			[]want{{CodeHMACMismatch, "signature"}}, ""},
		{"no keys", signed, nil, []want{{CodeSignatureNotChecked, "signature"}}, ""},
		{"empty key list", signed, []Key{}, []want{{CodeSignatureNotChecked, "signature"}}, ""},
		{"unsigned with keys", unsigned, []Key{{Name: "a", Secret: key}}, nil, ""},
		{"unsigned without keys", unsigned, nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Decode(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			fs := b.Verify(tt.keys)
			if got := wants(fs); !slices.Equal(got, tt.want) {
				t.Fatalf("Verify = %v, want %v", fs, tt.want)
			}
			if b.VerifiedKey() != tt.verified {
				t.Errorf("VerifiedKey = %q, want %q", b.VerifiedKey(), tt.verified)
			}
			s := b.Summary()
			if s.Signed != b.Signed() || s.SignatureChecked != (tt.verified != "") || s.Signer != tt.verified {
				t.Errorf("Summary: signed %v checked %v signer %q", s.Signed, s.SignatureChecked, s.Signer)
			}
		})
	}
}

func TestVerifyForgetsEarlierResult(t *testing.T) {
	b, err := Decode(readVector(t, vectorFile))
	if err != nil {
		t.Fatal(err)
	}
	if fs := b.Verify([]Key{{Name: "k", Secret: readKey(t)}}); len(fs) != 0 || b.VerifiedKey() != "k" {
		t.Fatalf("first Verify = %v, key %q", fs, b.VerifiedKey())
	}
	if fs := b.Verify(nil); len(fs) != 1 || b.VerifiedKey() != "" || b.Summary().SignatureChecked {
		t.Fatalf("second Verify = %v, key %q", fs, b.VerifiedKey())
	}
}

func TestVerifyBuiltBundle(t *testing.T) {
	b := &Bundle{Header: Header{Flags: FlagSigned}}
	fs := b.Verify([]Key{{Name: "k", Secret: []byte("k")}})
	if len(fs) != 1 || fs[0].Code != CodeSignatureNotChecked || !strings.Contains(fs[0].Reason, "not produced by Decode") {
		t.Fatalf("Verify = %v", fs)
	}
}

func TestVerifyHeaderTotals(t *testing.T) {
	max := uint32(math.MaxUint32)
	for _, tt := range []struct {
		name                  string
		calls                 []ToolCall
		cost, latency, tokens uint32
		want                  []string
	}{
		{"no calls, zero totals", nil, 0, 0, 0, nil},
		{"no calls, nonzero cost", nil, 5, 0, 0, []string{"header.total_cost_microdollars"}},
		{"sums match", writeCalls(CheckAllowed), 350, 2270, 1700, nil},
		{"latency off by one", writeCalls(CheckAllowed), 350, 2271, 1700, []string{"header.total_latency_ms"}},
		{"saturated sums", calls(tc("a", 0, max, max-1, 1), tc("b", 0, 1, 2, max)), max, max, max, nil},
		{"wrapped sums are wrong", calls(tc("a", 0, max, max-1, 1), tc("b", 0, 1, 2, max)), 0, 0, 0,
			[]string{"header.total_cost_microdollars", "header.total_latency_ms", "header.total_tokens"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &Bundle{Calls: tt.calls, Header: Header{TotalCostMicrodollars: tt.cost, TotalLatencyMS: tt.latency, TotalTokens: tt.tokens}}
			var got []string
			for _, f := range b.Verify(nil) {
				if f.Code != CodeHeaderTotalMismatch {
					t.Errorf("unexpected finding %v", f)
				}
				got = append(got, f.Field)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("mismatched fields = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	b := &Bundle{Header: Header{
		TaskID:     [16]byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 0x42, 2, 0x83, 3, 0xca, 0xfe, 0xba, 0xbe, 0x10, 0x0f},
		PolicyHash: hash8(hashRestricted), CreatedNS: math.MaxUint64, Outcome: 4, Mode: 3,
		ToolCallCount: 1, TotalCostMicrodollars: 1_234_567,
	}, HasSpec: true, HasTestLog: true, Unknown: []Section{{Tag: 0x0abc}}}
	s := b.Summary()
	if s.Kind != codec.KindRVWW || s.Form != "" || s.ID != "deadbeef-0001-4202-8303-cafebabe100f@18446744073709551615" ||
		s.Subject != "deadbeef-0001-4202-8303-cafebabe100f" || s.Signed || s.SignatureChecked {
		t.Errorf("summary = %+v", s)
	}
	if want := time.Date(2554, 7, 21, 23, 34, 33, 709551615, time.UTC); !s.Time.Equal(want) {
		t.Errorf("time = %v, want %v", s.Time, want)
	}
	facts := map[string]string{}
	for _, f := range s.Facts {
		facts[f.Label] = f.Value
	}
	for label, want := range map[string]string{
		"outcome":           "unknown(4)",
		"governance mode":   "unknown(3)",
		"policy hash":       "66fb836fa37e48ef (default restricted policy)",
		"total cost":        "1234567 microdollars ($1.234567)",
		"sections":          "SPEC, TEST_LOG, tag 0x0abc",
		"evidence complete": "no (missing DIFF)",
		"signature":         "none (unsigned bundle)",
	} {
		if facts[label] != want {
			t.Errorf("fact %q = %q, want %q", label, facts[label], want)
		}
	}
	if _, ok := facts["task id (text)"]; ok {
		t.Error("binary task id reported as text")
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{OutcomeSolved.String(), "solved"}, {OutcomeErrored.String(), "errored"}, {Outcome(7).String(), "unknown(7)"},
		{ModeRestricted.String(), "restricted"}, {ModeAutonomous.String(), "autonomous"}, {Mode(200).String(), "unknown(200)"},
		{CheckConfirmed.String(), "confirmed"}, {PolicyCheck(3).String(), "unknown(3)"},
		{TagName(TagTestLog), "TEST_LOG"}, {TagName(0x1234), "tag 0x1234"},
		{DefaultPolicyName(hash8(hashApproved)), "approved"}, {DefaultPolicyName(customHash()), ""},
		{dollars(0), "$0.000000"}, {dollars(math.MaxUint32), "$4294.967295"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

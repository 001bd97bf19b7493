package vrf

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
)

func TestCheckUUIDv4(t *testing.T) {
	tests := []struct {
		in     string
		upper  bool
		reason string // substring; "" means valid
	}{
		{in: "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867"},
		{in: "4317E99D-6DDF-45F5-8D9E-F7D2EC99D867", upper: true},
		{in: "4317e99d-6ddf-45f5-ad9e-f7d2ec99d867"},
		{in: "4317e99d-6ddf-45f5-Bd9e-f7d2ec99d867", upper: true},
		{in: "4317e99d-6ddf-15f5-8d9e-f7d2ec99d867", reason: "version 4 UUID, got version 1"},
		{in: "4317e99d-6ddf-45f5-cd9e-f7d2ec99d867", reason: "variant"},
		{in: "4317e99d-6ddf-45f5-7d9e-f7d2ec99d867", reason: "variant"},
		{in: "4317e99d6ddf45f58d9ef7d2ec99d867", reason: "8-4-4-4-12"},
		{in: "{4317e99d-6ddf-45f5-8d9e-f7d2ec99d86}", reason: "8-4-4-4-12"},
		{in: "4317e99d-6ddf-45f5-8d9e-f7d2ec99d86g", reason: "8-4-4-4-12"},
		{in: "4317e99d_6ddf-45f5-8d9e-f7d2ec99d867", reason: "8-4-4-4-12"},
		{in: "", reason: "8-4-4-4-12"},
		{in: "a1b2c3d4-e5f6-7890-abcd-ef1234567890", reason: "version 4 UUID, got version 7"}, // the spec's own example
	}
	for _, tc := range tests {
		upper, reason := checkUUIDv4(tc.in)
		if tc.reason == "" && reason != "" || tc.reason != "" && !strings.Contains(reason, tc.reason) {
			t.Errorf("checkUUIDv4(%q) reason %q, want %q", tc.in, reason, tc.reason)
		}
		if tc.reason == "" && upper != tc.upper {
			t.Errorf("checkUUIDv4(%q) upper %v, want %v", tc.in, upper, tc.upper)
		}
	}
}

func TestParseVerifiedAt(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Time
		reason string // substring; "" means valid
	}{
		{in: "2026-02-19T00:46:00Z", want: time.Date(2026, 2, 19, 0, 46, 0, 0, time.UTC)},
		{in: "2026-02-19T00:46:00+00:00", want: time.Date(2026, 2, 19, 0, 46, 0, 0, time.UTC)},
		{in: "2026-02-19T00:46:00.123456+00:00", want: time.Date(2026, 2, 19, 0, 46, 0, 123456000, time.UTC)},
		{in: "2026-02-19T00:46:00.1Z", want: time.Date(2026, 2, 19, 0, 46, 0, 100000000, time.UTC)},
		{in: "2026-02-19T00:46:00.123456789Z", want: time.Date(2026, 2, 19, 0, 46, 0, 123456789, time.UTC)},
		{in: "2024-02-29T23:59:59Z", want: time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)},
		{in: "0001-01-01T00:00:00Z", want: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2026-02-19T00:46:00.1234567890Z", reason: "1 to 9 fraction digits, got 10"},
		{in: "2026-02-19T00:46:00.Z", reason: "1 to 9 fraction digits, got 0"},
		{in: "2026-02-19T01:46:00+01:00", reason: "got offset +01:00"},
		{in: "2026-02-19T00:46:00-00:00", reason: "got offset -00:00"},
		{in: "2026-02-19T00:46:00", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19T00:46:00.5", reason: "got none"},
		{in: "2026-02-19T00:46:00z", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19 00:46:00Z", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19t00:46:00Z", reason: "want ISO-8601 UTC"},
		{in: "2026-2-19T00:46:00Z", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19T00:46Z", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19T00:46:00+0000", reason: "want ISO-8601 UTC"},
		{in: "2026-02-19T00:46:00ZZ", reason: "want ISO-8601 UTC"},
		{in: "2025-02-29T00:00:00Z", reason: "not a real calendar time"},
		{in: "2026-04-31T00:00:00Z", reason: "not a real calendar time"},
		{in: "2026-13-01T00:00:00Z", reason: "not a real calendar time"},
		{in: "2026-00-01T00:00:00Z", reason: "not a real calendar time"},
		{in: "2026-01-00T00:00:00Z", reason: "not a real calendar time"},
		{in: "2026-01-01T24:00:00Z", reason: "not a real calendar time"},
		{in: "2026-01-01T00:60:00Z", reason: "not a real calendar time"},
		{in: "2016-12-31T23:59:60Z", reason: "not a real calendar time"},
		{in: "0000-01-01T00:00:00Z", reason: "not a real calendar time"},
		{in: "", reason: "want ISO-8601 UTC"},
	}
	for _, tc := range tests {
		got, reason := parseVerifiedAt(tc.in)
		if tc.reason == "" {
			if reason != "" || !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Errorf("parseVerifiedAt(%q) = %v, %q; want %v", tc.in, got, reason, tc.want)
			}
			continue
		}
		if !strings.Contains(reason, tc.reason) {
			t.Errorf("parseVerifiedAt(%q) reason %q, want %q", tc.in, reason, tc.reason)
		}
	}
}

func TestFormatVerifiedAt(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 2, 19, 0, 46, 0, 123456000, time.UTC), "2026-02-19T00:46:00.123456+00:00"},
		{time.Date(2026, 2, 19, 0, 46, 0, 123456789, time.UTC), "2026-02-19T00:46:00.123456+00:00"}, // truncated like Python
		{time.Date(2026, 2, 19, 0, 46, 0, 0, time.UTC), "2026-02-19T00:46:00+00:00"},
		{time.Date(2026, 2, 19, 0, 46, 0, 999, time.UTC), "2026-02-19T00:46:00+00:00"}, // below a microsecond
		{time.Date(2026, 2, 19, 0, 46, 0, 1000, time.UTC), "2026-02-19T00:46:00.000001+00:00"},
		{time.Date(2026, 2, 19, 1, 46, 0, 500000000, time.FixedZone("CET", 3600)), "2026-02-19T00:46:00.500000+00:00"},
	}
	for _, tc := range tests {
		got := formatVerifiedAt(tc.in)
		if got != tc.want {
			t.Errorf("formatVerifiedAt(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if _, reason := parseVerifiedAt(got); reason != "" {
			t.Errorf("formatVerifiedAt(%v) = %q does not parse: %s", tc.in, got, reason)
		}
	}
}

func TestCheckHashValue(t *testing.T) {
	tests := []struct {
		in    string
		valid bool
	}{
		{"sha256:99037697cf294aaf", true},
		{"sha256:99037697CF294AAF", true},
		{"sha256:" + strings.Repeat("ab", 32), true},
		{"sha256:" + strings.Repeat("ab", 32) + "a", false},
		{"sha256:99037697cf294aa", false},
		{"sha256:99037697cf294aag", false},
		{"99037697cf294aaf", false},
		{"SHA256:99037697cf294aaf", false},
		{"sha-256:99037697cf294aaf", false},
		{"sha256:", false},
		{"", false},
	}
	for _, tc := range tests {
		if reason := checkHashValue(tc.in); (reason == "") != tc.valid {
			t.Errorf("checkHashValue(%q) = %q, want valid=%v", tc.in, reason, tc.valid)
		}
	}
}

func TestDecodeSignerID(t *testing.T) {
	raw := keyA(t)[32:]
	tests := []struct {
		in   string
		form signerForm
	}{
		{"ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8", signerHex},
		{"ed25519:03A107BFF3CE10BE1D70DD18E74BC09967E4D6309BA50D5F1DDC8664125531B8", signerHex},
		{"A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", signerRawBase64},
		{"MCowBQYDK2VwAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", signerSPKIBase64},
		{"ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b", signerUnknown}, // 63 digits
		{"ed25519:A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", signerUnknown},                    // base64 after the prefix
		{"03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8", signerUnknown},        // bare hex decodes as 48 bytes of base64
		{"A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg", signerUnknown},                             // unpadded
		{"A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", signerUnknown},                            // URL alphabet
		{"MCowBQYDK2VxAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", signerUnknown},            // Ed448 OID
		{"MCowBQYDK2VwAyEA...", signerUnknown},
		{"", signerUnknown},
		{strings.Repeat("A", 1<<16), signerUnknown},
	}
	for _, tc := range tests {
		var buf [32]byte
		k, form, reason := decodeSignerID(tc.in, &buf)
		if form != tc.form {
			t.Errorf("decodeSignerID(%.70q) form %v (%s), want %v", tc.in, form, reason, tc.form)
			continue
		}
		if tc.form == signerUnknown {
			if k != nil || reason == "" {
				t.Errorf("decodeSignerID(%.70q) = %x, %q; want no key and a reason", tc.in, k, reason)
			}
			continue
		}
		if !bytes.Equal(k, raw) {
			t.Errorf("decodeSignerID(%q) = %x, want keyA", tc.in, k)
		}
	}
}

func TestExpectedVerdict(t *testing.T) {
	tests := []struct {
		c    Counts
		want string
	}{
		{Counts{Total: 3, Passed: 3}, VerdictPass},
		{Counts{}, VerdictPass},
		{Counts{Total: 2, Failed: 2}, VerdictFail},
		{Counts{Total: 3, Passed: 2, Failed: 1}, VerdictPartial},
		{Counts{Total: 3, Passed: 2, Errors: 1}, VerdictError},
		{Counts{Total: 3, Passed: 1, Failed: 1, Errors: 1}, VerdictError},
		{Counts{Total: 1, Errors: 1}, VerdictError},
	}
	for _, tc := range tests {
		if got := tc.c.ExpectedVerdict(); got != tc.want {
			t.Errorf("%+v.ExpectedVerdict() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// minimal is the smallest valid reference receipt, as text to edit.
const minimal = `{"vrf_version":"1.0","receipt_id":"4317e99d-6ddf-45f5-8d9e-f7d2ec99d867",` +
	`"verified_at":"2026-02-19T00:46:00Z","tier":0,"verdict":"pass",` +
	`"results":{"total":0,"passed":0,"failed":0,"errors":0,"details":[]},` +
	`"hashes":{"input_hash":"sha256:99037697cf294aaf","output_hash":"sha256:63a5f4ec128c5176","suite_hash":"sha256:39def6393ef4064c"}}`

func edited(old, new string) string {
	if !strings.Contains(minimal, old) {
		panic("edited: " + old)
	}
	return strings.Replace(minimal, old, new, 1)
}

type parseCase struct {
	name   string
	in     string
	fields []string // malformed finding fields, in order; nil means it parses
	check  func(t *testing.T, r *Receipt)
}

// parseCases cover rules the samples do not, each by a one-line edit of a
// minimal receipt. FuzzParse seeds from them too.
func parseCases() []parseCase {
	return []parseCase{
		{name: "minimal", in: minimal, check: func(t *testing.T, r *Receipt) {
			if r.Signed() || r.Signer() != "" || r.SignerKey() != nil || r.AgentID() != "" || r.TaskID() != "" {
				t.Errorf("unexpected accessors: signed %v signer %q agent %q task %q", r.Signed(), r.Signer(), r.AgentID(), r.TaskID())
			}
			if _, ok := r.ChainPosition(); ok {
				t.Error("chain position reported")
			}
		}},
		{name: "null signature is unsigned", in: edited(`"tier":0`, `"signature":null,"tier":0`), check: func(t *testing.T, r *Receipt) {
			if r.Signed() {
				t.Error("signed")
			}
		}},
		{name: "tier 3", in: edited(`"tier":0`, `"tier":3`), check: func(t *testing.T, r *Receipt) {
			if r.Tier() != 3 {
				t.Errorf("tier %d", r.Tier())
			}
		}},
		{name: "tier -1", in: edited(`"tier":0`, `"tier":-1`), fields: []string{"tier"}},
		{name: "tier huge", in: edited(`"tier":0`, `"tier":18446744073709551617`), fields: []string{"tier"}},
		{name: "tier exponent", in: edited(`"tier":0`, `"tier":0e0`), fields: []string{"tier"}},
		{name: "tier string", in: edited(`"tier":0`, `"tier":"0"`), fields: []string{"tier"}},
		{name: "count beyond int64", in: edited(`"total":0`, `"total":9223372036854775808`), fields: []string{"results.total"}},
		{name: "count float", in: edited(`"passed":0`, `"passed":0.0`), fields: []string{"results.passed"}},
		{name: "vrf_version number", in: edited(`"vrf_version":"1.0"`, `"vrf_version":1.0`), fields: []string{"vrf_version"}},
		{name: "verdict null", in: edited(`"verdict":"pass"`, `"verdict":null`), fields: []string{"verdict"}},
		{name: "every field missing", in: `{}`, fields: []string{
			"vrf_version", "receipt_id", "verified_at", "tier", "verdict", "results", "hashes",
		}},
		{name: "results missing counts", in: edited(`"total":0,"passed":0,"failed":0,"errors":0,`, ``), fields: []string{
			"results.total", "results.passed", "results.failed", "results.errors",
		}},
		{name: "hashes null", in: edited(`"hashes":{`, `"hashes":null,"x":{`), fields: []string{"hashes"}},
		{name: "unnamed hash may be null", in: edited(`"suite_hash"`, `"environment_hash":null,"extra_hash":null,"suite_hash"`)},
		{name: "required reference hash null", in: edited(`"suite_hash":"sha256:39def6393ef4064c"`, `"suite_hash":null`), fields: []string{"hashes.suite_hash"}},
		{name: "unknown hash must still be sha256", in: edited(`"suite_hash"`, `"extra_hash":"md5:abcd","suite_hash"`), fields: []string{"hashes.extra_hash"}},
		{name: "hash not a string", in: edited(`"suite_hash"`, `"extra_hash":7,"suite_hash"`), fields: []string{"hashes.extra_hash"}},
		{name: "algorithm null is absent", in: edited(`"suite_hash"`, `"algorithm":null,"suite_hash"`)},
		{name: "both hash families: reference wins", in: edited(`"suite_hash"`, `"specification":"sha256:99037697cf294aaf","suite_hash"`), check: func(t *testing.T, r *Receipt) {
			if r.Form() != codec.FormReference {
				t.Errorf("form %q", r.Form())
			}
		}},
		{name: "no hash keys: spec form by default", in: edited(`"input_hash":"sha256:99037697cf294aaf","output_hash":"sha256:63a5f4ec128c5176","suite_hash":"sha256:39def6393ef4064c"`, ``),
			fields: []string{"hashes.specification", "hashes.output"}},
		{name: "no hash keys, reference signer", in: edited(`"hashes":{"input_hash":"sha256:99037697cf294aaf","output_hash":"sha256:63a5f4ec128c5176","suite_hash":"sha256:39def6393ef4064c"}`,
			`"hashes":{},"signature":{"algorithm":"ed25519","signer_id":"ed25519:00","content_hash":"","signature":""}`),
			fields: []string{"hashes.input_hash", "hashes.output_hash", "hashes.suite_hash"}},
		{name: "unknown keys accepted", in: edited(`"tier":0`, `"tier":0,"future":{"x":[1,2]},"metadata":{"anything":null,"nested":{"a":1}}`)},
		{name: "metadata agent", in: edited(`"tier":0`, `"tier":0,"metadata":{"agent_id":"agent-1"}`), check: func(t *testing.T, r *Receipt) {
			if r.AgentID() != "agent-1" {
				t.Errorf("agent %q", r.AgentID())
			}
		}},
		{name: "top-level agent wins when equal", in: edited(`"tier":0`, `"tier":0,"agent_id":"a","metadata":{"agent_id":"a"}`), check: func(t *testing.T, r *Receipt) {
			if r.AgentID() != "a" {
				t.Errorf("agent %q", r.AgentID())
			}
		}},
		{name: "null agent is absent", in: edited(`"tier":0`, `"tier":0,"agent_id":null,"metadata":{"agent_id":"b"}`), check: func(t *testing.T, r *Receipt) {
			if r.AgentID() != "b" {
				t.Errorf("agent %q", r.AgentID())
			}
		}},
		{name: "spec task", in: edited(`"tier":0`, `"tier":0,"task":{"task_id":"t1","task_type":"translation","description":"d"}`), check: func(t *testing.T, r *Receipt) {
			if r.TaskID() != "t1" || r.TaskType() != "translation" {
				t.Errorf("task %q %q", r.TaskID(), r.TaskType())
			}
		}},
		{name: "task description type", in: edited(`"tier":0`, `"tier":0,"task":{"description":5}`), fields: []string{"task.description"}},
		{name: "top-level task_id type", in: edited(`"tier":0`, `"tier":0,"task_id":["x"]`), fields: []string{"task_id"}},
		{name: "chain position alone", in: edited(`"tier":0`, `"tier":0,"metadata":{"chain_position":0}`), check: func(t *testing.T, r *Receipt) {
			if pos, ok := r.ChainPosition(); !ok || pos != 0 || r.PreviousReceipt() != "" {
				t.Errorf("chain %d %v %q", pos, ok, r.PreviousReceipt())
			}
		}},
		{name: "previous receipt lower-cased", in: edited(`"tier":0`, `"tier":0,"metadata":{"previous_receipt":"4317E99D-6DDF-45F5-8D9E-F7D2EC99D867","chain_position":4}`), check: func(t *testing.T, r *Receipt) {
			if pos, _ := r.ChainPosition(); r.PreviousReceipt() != "4317e99d-6ddf-45f5-8d9e-f7d2ec99d867" || pos != 4 {
				t.Errorf("chain %q %d", r.PreviousReceipt(), pos)
			}
		}},
		{name: "chain position null with previous", in: edited(`"tier":0`, `"tier":0,"metadata":{"previous_receipt":"4317e99d-6ddf-45f5-8d9e-f7d2ec99d867","chain_position":null}`),
			fields: []string{"metadata.chain_position"}},
		{name: "chain position float", in: edited(`"tier":0`, `"tier":0,"metadata":{"chain_position":1.5}`), fields: []string{"metadata.chain_position"}},
		{name: "signature fields wrong types", in: edited(`"tier":0`, `"tier":0,"signature":{"algorithm":1,"signer_id":2,"content_hash":3,"signature":4}`),
			fields: []string{"signature.algorithm", "signature.signer_id", "signature.content_hash", "signature.signature"}},
		{name: "signature empty object", in: edited(`"tier":0`, `"tier":0,"signature":{}`),
			fields: []string{"signature.algorithm", "signature.signer_id", "signature.content_hash", "signature.signature"}},
		{name: "detail name type", in: edited(`"details":[]`, `"details":[{"name":1,"status":"pass"}]`), fields: []string{"results.details[0].name"}},
		{name: "detail status missing", in: edited(`"details":[]`, `"details":[{"name":"a"}]`), fields: []string{"results.details[0].status"}},
	}
}

func TestParseCases(t *testing.T) {
	for _, tc := range parseCases() {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.in))
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if tc.check != nil {
					tc.check(t, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted it; want findings at %v", tc.fields)
			}
			if !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			fs := codec.FindingsOf(err)
			var got []string
			for _, f := range fs {
				got = append(got, f.Field)
				if f.Code != "malformed" || f.Reason == "" {
					t.Errorf("finding %+v", f)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.fields, " ") {
				t.Errorf("finding fields %q, want %q (%v)", got, tc.fields, err)
			}
		})
	}
}

// TestFindingOffsets checks that schema findings point at the offending
// value in the input, or at the object that lacks a required member.
func TestFindingOffsets(t *testing.T) {
	tests := []struct {
		in, at string // at: the text the offset must point to
	}{
		{edited(`"tier":0`, `"tier":7`), `7,"verdict"`},
		{edited(`"verdict":"pass"`, `"verdict" : "passed"`), `"passed"`},
		{edited(`"details":[]`, `"details":[{"name":"a","status":"pass"},{"name":"b","status":"skip"}]`), `"skip"`},
		{edited(`"details":[]`, `"details":[{"name":"a","status":"pass"},{"status":"pass"}]`), `{"status":"pass"}]`},
		{edited(`"suite_hash":"sha256:39def6393ef4064c"`, `"suite_hash":"sha256:39"`), `"sha256:39"`},
		{edited(`"tier":0`, `"we\"ird":{"tier":7},"tier":"0"`), `"0","verdict"`},
		{edited(`"tier":0`, `"tier":0,"x\u0074ra":1,"metadata":{"chain_position":"1"}`), `"1"}`},
		{"\ufeff" + edited(`"tier":0`, `"tier":9`), `9,`},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.in))
		fs := codec.FindingsOf(err)
		if len(fs) != 1 {
			t.Errorf("%s: findings %v, want one", tc.in, fs)
			continue
		}
		want := strings.Index(tc.in, tc.at)
		if fs[0].Offset != int64(want) {
			t.Errorf("%s: offset %d, want %d (%q)", tc.in, fs[0].Offset, want, tc.at)
		}
	}
	// A missing top-level field points at the root object.
	_, err := Parse([]byte("  " + edited(`"verdict":"pass",`, ``)))
	if fs := codec.FindingsOf(err); len(fs) != 1 || fs[0].Offset != 2 {
		t.Errorf("missing verdict: %v, want offset 2", fs)
	}
	// FromValue has no text, so no offsets.
	v, err := canonjson.Parse([]byte(edited(`"tier":0`, `"tier":7`)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromValue(v)
	if fs := codec.FindingsOf(err); len(fs) != 1 || fs[0].Offset != codec.NoOffset || fs[0].Field != "tier" {
		t.Errorf("FromValue findings %v, want tier without offset", fs)
	}
}

func TestSyntaxErrorFinding(t *testing.T) {
	_, err := Parse([]byte(`{"vrf_version":"1.0",}`))
	var me *codec.MalformedError
	if !errors.As(err, &me) || len(me.Findings) != 1 || me.Findings[0].Code != "json_syntax" || me.Findings[0].Offset != 21 {
		t.Fatalf("got %#v", err)
	}
}

func TestFindingsCapped(t *testing.T) {
	items := strings.Repeat(`{"name":"a","status":"nope"},`, 3*MaxFindings)
	in := edited(`"details":[]`, `"details":[`+strings.TrimSuffix(items, ",")+`]`)
	_, err := Parse([]byte(in))
	fs := codec.FindingsOf(err)
	if len(fs) != MaxFindings+1 {
		t.Fatalf("%d findings, want %d", len(fs), MaxFindings+1)
	}
	if last := fs[len(fs)-1]; last.Reason != "200 more problems not listed" {
		t.Errorf("last finding %+v", last)
	}
}

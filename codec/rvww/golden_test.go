package rvww

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
)

// goldenView is the stable rendering of what the package makes of one file.
type goldenView struct {
	File string `json:"file"`
	Size int    `json:"size"`
	// Malformed holds Decode's findings; when set, nothing else is.
	Malformed []codec.Finding `json:"malformed,omitempty"`
	// WithKeys verifies with a wrong key then the sample key; WithoutKeys
	// verifies with none.
	WithKeys    *runView `json:"with_keys,omitempty"`
	WithoutKeys *runView `json:"without_keys,omitempty"`
}

type runView struct {
	Keys     []string        `json:"keys"`
	Valid    bool            `json:"valid"`
	Findings []codec.Finding `json:"findings"`
	Summary  summaryView     `json:"summary"`
}

type summaryView struct {
	Kind             codec.Kind   `json:"kind"`
	Form             codec.Form   `json:"form"`
	ID               string       `json:"id"`
	Signed           bool         `json:"signed"`
	SignatureChecked bool         `json:"signature_checked"`
	Signer           string       `json:"signer"`
	Subject          string       `json:"subject"`
	Time             string       `json:"time"`
	Facts            []codec.Fact `json:"facts"`
	Calls            []string     `json:"calls"`
	Unknown          []string     `json:"unknown_sections,omitempty"`
}

func render(t *testing.T, name string, data []byte, key []byte) []byte {
	t.Helper()
	v := goldenView{File: name, Size: len(data)}
	if _, err := Decode(data); err != nil {
		v.Malformed = codec.FindingsOf(err)
	} else {
		run := func(keys []Key) *runView {
			b, _ := Decode(data)
			fs := b.Verify(keys)
			r := &runView{Keys: []string{}, Valid: len(fs) == 0, Findings: fs}
			if fs == nil {
				r.Findings = []codec.Finding{}
			}
			for _, k := range keys {
				r.Keys = append(r.Keys, k.Name)
			}
			s := b.Summary()
			r.Summary = summaryView{
				Kind: s.Kind, Form: s.Form, ID: s.ID, Signed: s.Signed, SignatureChecked: s.SignatureChecked,
				Signer: s.Signer, Subject: s.Subject, Time: s.Time.Format(time.RFC3339Nano), Facts: s.Facts,
				Calls: []string{},
			}
			for _, c := range b.Calls {
				r.Summary.Calls = append(r.Summary.Calls, fmt.Sprintf("#%d @%d %s %s latency=%dms cost=%d tokens=%d args=%x result=%x",
					c.Index, c.Offset, c.Action, c.PolicyCheck, c.LatencyMS, c.CostMicrodollars, c.Tokens, c.ArgsHash, c.ResultHash))
			}
			for _, u := range b.Unknown {
				r.Summary.Unknown = append(r.Summary.Unknown, fmt.Sprintf("%s @%d length=%d", TagName(u.Tag), u.Offset, u.Length))
			}
			return r
		}
		v.WithKeys = run([]Key{{Name: "other", Secret: []byte("not the key")}, {Name: "hmac_key.txt", Secret: key}})
		v.WithoutKeys = run(nil)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// goldenInputs lists every generated sample and every reference vector.
func goldenInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	for _, dir := range []struct{ path, prefix string }{{sampleDir, ""}, {vectorDir, "vector_"}} {
		entries, err := os.ReadDir(dir.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".rvww"); ok {
				in[dir.prefix+name] = filepath.Join(dir.path, e.Name())
			}
		}
	}
	return in
}

// TestGolden runs Decode, Verify (with and without keys) and Summary over
// every sample and reference vector and compares the rendering with
// testdata/golden/<name>.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	key := readKey(t)
	inputs := goldenInputs(t)
	if len(inputs) < 40 {
		t.Fatalf("only %d inputs; run go test ./codec/rvww -update to generate the samples", len(inputs))
	}
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(inputs[name])
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, filepath.Base(inputs[name]), data, key)
			path := filepath.Join(goldenDir, name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantBytes, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./codec/rvww -update)", err)
			}
			if !bytes.Equal(got, wantBytes) {
				t.Errorf("%s differs from the golden file; got:\n%s", path, got)
			}
		})
	}
	if !*update {
		entries, err := os.ReadDir(goldenDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".golden"); ok && inputs[name] == "" {
				t.Errorf("stale golden file %s", e.Name())
			}
		}
	}
}

// TestVectors pins what the reference vectors must give, independently of
// the golden files.
func TestVectors(t *testing.T) {
	key := readKey(t)
	for _, tt := range []struct {
		file     string
		keys     []Key
		want     []want
		verified string
	}{
		{"01_solved_autonomous_signed.rvww", []Key{{Name: "k", Secret: key}}, nil, "k"},
		{"01_solved_autonomous_signed.rvww", []Key{{Name: "wrong", Secret: []byte("x")}, {Name: "right", Secret: key}}, nil, "right"},
		{"01_solved_autonomous_signed.rvww", nil, []want{{CodeSignatureNotChecked, "signature"}}, ""},
		{"01_solved_autonomous_signed.rvww", []Key{{Name: "wrong", Secret: []byte("x")}}, []want{{CodeHMACMismatch, "signature"}}, ""},
		{"90_tampered_spec_byte.rvww", []Key{{Name: "k", Secret: key}}, []want{{CodeHMACMismatch, "signature"}}, ""},
		{"90_tampered_spec_byte.rvww", nil, []want{{CodeSignatureNotChecked, "signature"}}, ""},
	} {
		t.Run(fmt.Sprintf("%s/%d_keys", tt.file, len(tt.keys)), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(vectorDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Decode(data)
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
			if s.SignatureChecked != (tt.verified != "") || s.Signer != tt.verified || !s.Signed {
				t.Errorf("Summary signed=%v checked=%v signer=%q", s.Signed, s.SignatureChecked, s.Signer)
			}
			if s.ID != "73656564-7265-662d-7461-736b2d303031@1795322099824745397" || s.Subject != b.TaskUUID() {
				t.Errorf("ID = %q, Subject = %q", s.ID, s.Subject)
			}
			if b.TaskText() != "seedref-task-001" || b.OutcomeName() != "solved" || b.ModeName() != "autonomous" {
				t.Errorf("task %q outcome %q mode %q", b.TaskText(), b.OutcomeName(), b.ModeName())
			}
			if len(b.Calls) != 3 || b.Calls[2].Action != "Bash" || b.Calls[2].Offset != 238 {
				t.Errorf("calls = %+v", b.Calls)
			}
			if !b.EvidenceComplete() || b.Header.RetryCount != 1 {
				t.Errorf("evidence %v retries %d", b.EvidenceComplete(), b.Header.RetryCount)
			}
		})
	}
}

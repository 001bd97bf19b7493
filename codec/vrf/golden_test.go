package vrf

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
)

const goldenDir = "testdata/golden"

// goldenResult is the stable rendering of what the package makes of one
// document.
type goldenResult struct {
	File             string          `json:"file"`
	Malformed        bool            `json:"malformed"`
	Kind             codec.Kind      `json:"kind,omitempty"`
	Form             codec.Form      `json:"form,omitempty"`
	ID               string          `json:"id,omitempty"`
	Signed           bool            `json:"signed"`
	SignatureChecked bool            `json:"signature_checked"`
	Signer           string          `json:"signer,omitempty"`
	Subject          string          `json:"subject,omitempty"`
	Time             string          `json:"time,omitempty"`
	Valid            bool            `json:"valid"`
	Findings         []codec.Finding `json:"findings"`
	Facts            []codec.Fact    `json:"facts,omitempty"`
	Accessors        *accessors      `json:"accessors,omitempty"`
}

type accessors struct {
	Verdict         string `json:"verdict"`
	Tier            int    `json:"tier"`
	Counts          Counts `json:"counts"`
	TaskID          string `json:"task_id"`
	TaskType        string `json:"task_type"`
	AgentID         string `json:"agent_id"`
	PreviousReceipt string `json:"previous_receipt"`
	ChainPosition   *int64 `json:"chain_position"`
	ContentHash     string `json:"content_hash"`
}

func render(file string, data []byte) goldenResult {
	g := goldenResult{File: file, Findings: []codec.Finding{}}
	r, err := Parse(data)
	if err != nil {
		g.Malformed = errors.Is(err, codec.ErrMalformed)
		g.Findings = codec.FindingsOf(err)
		return g
	}
	s := r.Summary()
	g.Kind, g.Form, g.ID = s.Kind, s.Form, s.ID
	g.Signed, g.SignatureChecked, g.Signer, g.Subject = s.Signed, s.SignatureChecked, s.Signer, s.Subject
	if !s.Time.IsZero() {
		g.Time = s.Time.Format(time.RFC3339Nano)
	}
	g.Facts = s.Facts
	if fs := r.Verify(); len(fs) > 0 {
		g.Findings = fs
	} else {
		g.Valid = true
	}
	a := &accessors{
		Verdict: r.Verdict(), Tier: r.Tier(), Counts: r.Counts(),
		TaskID: r.TaskID(), TaskType: r.TaskType(), AgentID: r.AgentID(),
		PreviousReceipt: r.PreviousReceipt(), ContentHash: r.ContentHash(),
	}
	if pos, ok := r.ChainPosition(); ok {
		a.ChainPosition = &pos
	}
	g.Accessors = a
	return g
}

// goldenInputs lists every sample and every VRF reference vector, keyed by
// golden file name.
func goldenInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	add := func(dir, prefix string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, "_key.json") {
				continue
			}
			in[prefix+strings.TrimSuffix(name, ".json")+".golden"] = filepath.Join(dir, name)
		}
	}
	add(samplesDir, "")
	add(vectorsDir, "vector_")
	return in
}

// TestGolden runs Parse, Summary and Verify over every sample and vector
// and compares the rendering with testdata/golden (-update rewrites the
// samples, then the golden files).
func TestGolden(t *testing.T) {
	if *update {
		// Samples first, so that one -update run leaves everything current.
		syncSamples(t, generatedFiles(t))
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inputs := goldenInputs(t)
	for golden, path := range inputs {
		t.Run(golden, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(render(filepath.ToSlash(path), data), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			gp := filepath.Join(goldenDir, golden)
			if *update {
				if err := os.WriteFile(gp, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gp)
			if err != nil {
				t.Fatalf("%v (run go test ./codec/vrf -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := inputs[e.Name()]; ok {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(goldenDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("stale golden file %s has no input (run go test ./codec/vrf -update)", e.Name())
	}
}

// TestReferenceVectors pins what matters about the reference code's own
// receipts, independently of the golden files.
func TestReferenceVectors(t *testing.T) {
	tests := []struct {
		file      string
		wantCodes []string // Verify finding codes, in order
		reasons   []string // substrings the reasons must contain, per finding
	}{
		{file: "01_tier0_pass.json"},
		{
			file:      "90_tampered_verdict.json",
			wantCodes: []string{CodeVerdictMismatch, CodeContentHashMismatch},
			reasons: []string{
				`verdict is "fail" but the counts (3 passed, 0 failed, 0 errors) give "pass"`,
				"the signature is valid for the stated content_hash, so the receipt was changed after it was signed",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(vectorsDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r.Form() != codec.FormReference {
				t.Errorf("form %q, want reference", r.Form())
			}
			if r.Signer() != "ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8" {
				t.Errorf("signer %q", r.Signer())
			}
			if tc.wantCodes == nil && r.ContentHash() != "39c09d98ef5f5642c07d2b738effceb2b3145f59d74ded2982b9a25676d5b6b1" {
				t.Errorf("content hash %s, want 39c09d98...", r.ContentHash())
			}
			fs := r.Verify()
			if len(fs) != len(tc.wantCodes) {
				t.Fatalf("findings %v, want codes %v", fs, tc.wantCodes)
			}
			for i, f := range fs {
				if f.Code != tc.wantCodes[i] {
					t.Errorf("finding %d code %q, want %q", i, f.Code, tc.wantCodes[i])
				}
				if !strings.Contains(f.Reason, tc.reasons[i]) {
					t.Errorf("finding %d reason %q lacks %q", i, f.Reason, tc.reasons[i])
				}
			}
		})
	}
}

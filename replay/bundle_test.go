package replay

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

func decodeFile(t *testing.T, path string) *rvww.Bundle {
	t.Helper()
	b, err := rvww.Decode(readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBundleRefusesContradictoryArguments(t *testing.T) {
	if _, err := Bundle(nil, BundleOptions{}); err == nil {
		t.Error("Bundle(nil) succeeded")
	}
	b := decodeFile(t, filepath.Join(rvwwSamples, "valid_unsigned.rvww"))
	_, err := Bundle(b, BundleOptions{SignatureVerified: true, KeyID: "k"})
	if err == nil || !strings.Contains(err.Error(), "unsigned") {
		t.Errorf("verified signature on an unsigned bundle: err = %v", err)
	}
}

// TestBundleSignatureStatus: the status follows what the caller says of a
// signed bundle, and an unsigned one is unsigned whatever the key.
func TestBundleSignatureStatus(t *testing.T) {
	signed := decodeFile(t, filepath.Join(rvwwSamples, "valid_solved_autonomous_signed.rvww"))
	unsigned := decodeFile(t, filepath.Join(rvwwSamples, "valid_unsigned.rvww"))
	tests := []struct {
		b    *rvww.Bundle
		opts BundleOptions
		want Signature
	}{
		{signed, BundleOptions{SignatureVerified: true, KeyID: "ops-2026"}, Signature{Status: SignatureVerified, KeyID: "ops-2026"}},
		{signed, BundleOptions{}, Signature{Status: SignatureNotVerified, Detail: "no supplied key verified it"}},
		{unsigned, BundleOptions{KeyID: "ops-2026"}, Signature{Status: SignatureNone}},
		{signed, BundleOptions{KeyID: "hmac:00112233", NotChecked: "key hmac:00112233 not registered"},
			Signature{Status: SignatureNotChecked, KeyID: "hmac:00112233", Detail: "key hmac:00112233 not registered"}},
		{unsigned, BundleOptions{NotChecked: "no key"}, Signature{Status: SignatureNone}},
	}
	for i, tt := range tests {
		r, err := Bundle(tt.b, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Signature != tt.want {
			t.Errorf("%d: signature %+v, want %+v", i, r.Signature, tt.want)
		}
		var text bytes.Buffer
		if err := r.WriteText(&text, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if tt.want.Status == SignatureNotChecked && !strings.Contains(text.String(), "signature not checked: "+tt.want.Detail+"\n") {
			t.Errorf("%d: the text does not say the signature was not checked:\n%s", i, text.String())
		}
	}
}

// TestBundlePolicy checks the per-call rows against a known, an unknown
// and a different policy.
func TestBundlePolicy(t *testing.T) {
	b := decodeFile(t, filepath.Join(rvwwSamples, "policy_denied_tool_restricted.rvww")) // Read, Bash (recorded denied), Grep
	restricted := governance.Restricted()
	r, err := Bundle(b, BundleOptions{Policy: &restricted})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Policy.MatchesHeader || len(r.Violations) != 1 || r.Violations[0].Code != governance.CodeDeniedTool || len(r.GovernanceFindings) != 0 {
		t.Errorf("restricted: policy %+v, violations %+v, findings %+v", r.Policy, r.Violations, r.GovernanceFindings)
	}
	for i, want := range []string{"allowed", "denied", "allowed"} {
		c := r.Calls[i]
		if c.Recomputed != want || c.Agrees == nil || !*c.Agrees || c.RunningCalls != i+1 {
			t.Errorf("restricted: call %d = %+v, want recomputed %s, agreeing", i, c, want)
		}
	}
	if got := r.Calls[2].RunningCostMicrodollars; got != 160 {
		t.Errorf("running cost after 3 calls = %d, want 160", got)
	}

	// Unknown: recorded decisions only, no budgets, no evaluation.
	r, err = Bundle(b, BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy != nil || len(r.Violations) != 0 || len(r.GovernanceFindings) != 0 {
		t.Errorf("unknown policy: %+v %+v %+v", r.Policy, r.Violations, r.GovernanceFindings)
	}
	for _, c := range r.Calls {
		if c.Recomputed != "" || c.Agrees != nil || c.OverCostBudget || c.OverCallBudget {
			t.Errorf("unknown policy: call %+v has a recomputation", c)
		}
	}

	// A policy other than the header's: judged by it, and said so.
	tight := governance.Policy{Name: "tight", Mode: governance.ModeRestricted, Allow: []string{"Read"}, MaxCostMicrodollars: 120, MaxToolCalls: 2}
	r, err = Bundle(b, BundleOptions{Policy: &tight})
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy.MatchesHeader {
		t.Error("MatchesHeader for a policy whose hash is not the header's")
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "the bundle's header names policy "+r.PolicyHash) {
		t.Errorf("text does not say the header names another policy:\n%s", text.String())
	}
	last := r.Calls[2] // Grep: denied by tight, recorded allowed; 160 > 120; 3 > 2
	if last.Recomputed != "denied" || *last.Agrees || !last.OverCostBudget || !last.OverCallBudget {
		t.Errorf("tight: last call %+v", last)
	}
	if first := r.Calls[0]; first.OverCostBudget || first.OverCallBudget {
		t.Errorf("tight: first call over budget: %+v", first)
	}
}

// TestBundleTotals: a header whose totals disagree with its trace is shown
// so.
func TestBundleTotals(t *testing.T) {
	for name, agree := range map[string]bool{"header_totals_mismatch.rvww": false, "valid_saturated_totals.rvww": true} {
		r, err := Bundle(decodeFile(t, filepath.Join(rvwwSamples, name)), BundleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Totals.Agree != agree {
			t.Errorf("%s: totals %+v, want agree=%v", name, r.Totals, agree)
		}
	}
}

// TestBundleSections: absent sections are null in JSON and said absent in
// text; present empty ones are "" and "(empty)".
func TestBundleSections(t *testing.T) {
	r := replayFile(t, filepath.Join(rvwwSamples, "valid_empty_spec_section.rvww"))
	if r.Spec == nil || *r.Spec != "" || r.Postmortem != nil {
		t.Errorf("spec %v, postmortem %v", r.Spec, r.Postmortem)
	}
	var js, text bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js.Bytes(), []byte(`"spec":"",`)) || !bytes.Contains(js.Bytes(), []byte(`"postmortem":null`)) {
		t.Errorf("JSON sections: %s", js.String())
	}
	if !strings.Contains(text.String(), "spec\n  (empty)\n") {
		t.Errorf("text does not show the empty spec:\n%s", text.String())
	}
	if bytes.Count(js.Bytes(), []byte("\n")) != 1 || !bytes.HasSuffix(js.Bytes(), []byte("}\n")) {
		t.Errorf("JSON is not one line: %q", js.String())
	}
	h := replayFile(t, filepath.Join(rvwwSamples, "valid_header_only_signed.rvww"))
	text.Reset()
	if err := h.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(text.String(), "(no section)") != 4 || h.OutcomeReason != "the bundle has no TEST_LOG section" {
		t.Errorf("header-only bundle:\n%s", text.String())
	}
}

// TestColorOnlyWhenAsked: the plain rendering has no escape sequence, the
// coloured one colours the diff's added and removed lines and the verdict.
func TestColorOnlyWhenAsked(t *testing.T) {
	r := replayFile(t, filepath.Join(fixtureDir, "solved_pytest_failures.rvww"))
	var plainText, colored bytes.Buffer
	if err := r.WriteText(&plainText, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&colored, TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(plainText.Bytes(), 0x1b) >= 0 {
		t.Error("plain text has an escape sequence")
	}
	for _, want := range []string{
		sgrRed + "-    return round(line.amount * rate, 2)" + sgrReset,
		sgrGreen + "+    return line.amount * rate" + sgrReset,
		sgrCyan + "@@ -12,9 +12,9 @@ def line_vat(line, rate):" + sgrReset,
		sgrRed + "contradicts" + sgrReset,
	} {
		if !strings.Contains(colored.String(), want) {
			t.Errorf("coloured text lacks %q", want)
		}
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return w.n, errShortWrite
	}
	w.n -= len(p)
	return len(p), nil
}

var errShortWrite = errors.New("short write")

// TestWriteErrors: a failing writer's error is returned, not dropped.
func TestWriteErrors(t *testing.T) {
	r := replayFile(t, filepath.Join(fixtureDir, "solved_pytest_failures.rvww"))
	if err := r.WriteText(&failingWriter{n: 100}, TextOptions{}); !errors.Is(err, errShortWrite) {
		t.Errorf("WriteText error = %v", err)
	}
	if err := r.WriteJSON(&failingWriter{n: 100}); !errors.Is(err, errShortWrite) {
		t.Error("WriteJSON error = nil")
	}
}

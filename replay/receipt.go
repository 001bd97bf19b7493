package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/vrf"
)

// Claim is one thing a document claims, beside what replay recomputes
// from the document itself.
type Claim struct {
	// Field is the claim's path in the document ("results.passed").
	Field string `json:"field"`
	// Item names the benchmark an AVIR item claim is about.
	Item string `json:"item,omitempty"`
	// Claim is the value as the document states it; Recomputed the value
	// recomputed from the level beneath it ("" when it could not be).
	Claim      string `json:"claim"`
	Recomputed string `json:"recomputed"`
	// Agrees is absent when the value could not be recomputed.
	Agrees *bool `json:"agrees,omitempty"`
	// Basis says what the recomputed value was derived from, or why they
	// disagree.
	Basis string `json:"basis"`
}

// ReceiptReport is the replay of one VRF receipt: what the receipt alone
// says, recomputed. The chain link it states is reported, not checked:
// that needs the ledger.
type ReceiptReport struct {
	Kind       string `json:"kind"` // always "vrf"
	ID         string `json:"id"`
	Form       string `json:"form"`
	Agent      string `json:"agent"`
	TaskID     string `json:"task_id"`
	TaskType   string `json:"task_type"`
	Tier       int    `json:"tier"`
	VerifiedAt string `json:"verified_at"` // RFC 3339, UTC; "" when absent
	Verdict    string `json:"verdict"`

	Signature Signature `json:"signature"`
	// Valid reports that codec/vrf's verification found nothing.
	Valid bool `json:"valid"`
	// Claims lists the counts, the verdict and, for a signed receipt, the
	// content hash and the signature, each beside its recomputation.
	Claims []Claim `json:"claims"`
	// Findings are codec/vrf's verification findings, as it reports them.
	Findings []codec.Finding `json:"findings"`
	// Facts are codec/vrf's summary lines.
	Facts []codec.Fact `json:"facts"`
	// Chain is the chain link the receipt states.
	Chain ChainLink `json:"chain"`
}

// ChainLink is the chain link a receipt states. Receipt leaves Checked
// false: whether the previous receipt exists, and speaks for the same
// agent at the position before, is known only to the ledger, and a
// caller that asked the ledger sets it.
type ChainLink struct {
	PreviousReceipt string `json:"previous_receipt,omitempty"`
	Position        *int64 `json:"position,omitempty"`
	Checked         bool   `json:"checked"`
}

// Receipt re-verifies a parsed VRF receipt (codec/vrf's Verify, what
// codec/inspect runs) and lays out each claim beside its recomputation:
// results.total, passed, failed and errors from results.details; the
// verdict from those recomputed counts by the reference rule (so a count
// edited together with its verdict still shows); for a signed receipt the
// content hash and the Ed25519 signature.
func Receipt(r *vrf.Receipt) (*ReceiptReport, error) {
	if r == nil {
		return nil, fmt.Errorf("replay: nil receipt")
	}
	findings := r.Verify()
	rep := &ReceiptReport{
		Kind: string(codec.KindVRF), ID: r.ID(), Form: string(r.Form()),
		Agent: r.AgentID(), TaskID: r.TaskID(), TaskType: r.TaskType(), Tier: r.Tier(),
		Verdict:  r.Verdict(),
		Valid:    len(findings) == 0,
		Findings: nonNil(findings),
		Facts:    nonNil(r.Summary().Facts),
		Claims:   []Claim{},
	}
	if t := r.VerifiedAt(); !t.IsZero() {
		rep.VerifiedAt = t.UTC().Format(time.RFC3339Nano)
	}
	rep.Chain.PreviousReceipt = r.PreviousReceipt()
	if pos, ok := r.ChainPosition(); ok {
		rep.Chain.Position = &pos
	}

	claimed := r.Counts()
	details, ok := detailCounts(r)
	add := func(field string, claim, recomputed int64, basis string) {
		rep.Claims = append(rep.Claims, Claim{Field: field, Claim: strconv.FormatInt(claim, 10),
			Recomputed: strconv.FormatInt(recomputed, 10), Agrees: boolPtr(claim == recomputed), Basis: basis})
	}
	if ok {
		add("results.total", claimed.Total, details.Total, "the number of results.details items")
		add("results.passed", claimed.Passed, details.Passed, `results.details items with status "pass"`)
		add("results.failed", claimed.Failed, details.Failed, `results.details items with status "fail"`)
		add("results.errors", claimed.Errors, details.Errors, `results.details items with status "error" or "timeout"`)
		want := details.ExpectedVerdict()
		rep.Claims = append(rep.Claims, Claim{Field: "verdict", Claim: r.Verdict(), Recomputed: want,
			Agrees: boolPtr(r.Verdict() == want), Basis: "the reference rule over the recomputed counts"})
	}

	has := func(codes ...string) []string {
		var reasons []string
		for _, f := range findings {
			if slices.Contains(codes, f.Code) {
				reasons = append(reasons, f.Reason)
			}
		}
		return reasons
	}
	if !r.Signed() {
		rep.Signature = Signature{Status: SignatureNone}
		return rep, nil
	}
	stated := stringAt(r, "signature", "content_hash")
	hashBad := has(vrf.CodeContentHashMismatch)
	recomputed, basis := r.ContentHash(), "SHA-256 of the receipt's canonical JSON without its signature"
	if len(hashBad) > 0 {
		basis = hashBad[0]
	} else if strings.ToLower(strings.TrimPrefix(stated, "sha256:")) != recomputed {
		// codec/vrf also accepts the hash of the raw UTF-8 form.
		sum := sha256.Sum256(canonjson.CanonicalUTF8(r.Value().Without("signature")))
		recomputed, basis = hex.EncodeToString(sum[:]), basis+" (ensure_ascii=False, raw UTF-8)"
	}
	rep.Claims = append(rep.Claims, Claim{Field: "signature.content_hash", Claim: stated, Recomputed: recomputed,
		Agrees: boolPtr(len(hashBad) == 0), Basis: basis})
	sigBad := has(vrf.CodeSignatureInvalid, vrf.CodeSignerIDInvalid)
	sig := Claim{Field: "signature.signature", Claim: "Ed25519 signature by " + orText(r.Signer(), "an unreadable signer_id"),
		Recomputed: "verifies", Agrees: boolPtr(len(sigBad) == 0), Basis: "Ed25519 over the content_hash string"}
	if len(sigBad) > 0 {
		sig.Recomputed, sig.Basis = "does not verify", sigBad[0]
	}
	rep.Claims = append(rep.Claims, sig)

	switch bad := append(sigBad, hashBad...); {
	case len(bad) > 0:
		rep.Signature = Signature{Status: SignatureNotVerified, KeyID: r.Signer(), Detail: strings.Join(bad, "; ")}
	default:
		rep.Signature = Signature{Status: SignatureVerified, KeyID: r.Signer()}
	}
	return rep, nil
}

// detailCounts recounts results.details by status, as codec/vrf counts
// them (timeout is an error). It reports false when the receipt has no
// details array, which Parse does not let through.
func detailCounts(r *vrf.Receipt) (vrf.Counts, bool) {
	results, _ := r.Value().Get("results")
	details, ok := results.Get("details")
	if !ok {
		return vrf.Counts{}, false
	}
	var c vrf.Counts
	for _, d := range details.Elems() {
		c.Total++
		st, _ := d.Get("status")
		switch s, _ := st.Str(); s {
		case vrf.StatusPass:
			c.Passed++
		case vrf.StatusFail:
			c.Failed++
		case vrf.StatusError, vrf.StatusTimeout:
			c.Errors++
		}
	}
	return c, true
}

// stringAt returns the string at keys in the receipt, or "".
func stringAt(r *vrf.Receipt, keys ...string) string {
	v := r.Value()
	for _, k := range keys {
		v, _ = v.Get(k)
	}
	s, _ := v.Str()
	return s
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// WriteJSON writes the report as one line of JSON.
func (r *ReceiptReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText writes the report for people.
func (r *ReceiptReport) WriteText(w io.Writer, o TextOptions) error {
	t := newTextWriter(w, o)
	t.printf("%s %s\n", t.paint(sgrBold, "VRF receipt"), inert(r.ID, false))
	t.field("form", r.Form)
	t.field("agent", orText(r.Agent, "none"))
	task := orText(r.TaskID, "none")
	if r.TaskType != "" {
		task += " (" + r.TaskType + ")"
	}
	t.field("task", task)
	t.field("tier", strconv.Itoa(r.Tier))
	t.field("verified at", orText(r.VerifiedAt, "none"))
	t.field("verdict", r.Verdict)
	t.field("signature", documentSignatureLine(r.Signature, "Ed25519"))
	chain := "none stated"
	switch c := r.Chain; {
	case c.Position != nil && c.PreviousReceipt != "":
		chain = fmt.Sprintf("position %d after %s", *c.Position, c.PreviousReceipt)
	case c.Position != nil:
		chain = fmt.Sprintf("position %d, no previous receipt", *c.Position)
	case c.PreviousReceipt != "":
		chain = "after " + c.PreviousReceipt
	}
	switch {
	case chain != "none stated" && r.Chain.Checked:
		chain += " (checked in the ledger)"
	case chain != "none stated":
		chain += " (as stated; not checked: that needs the ledger)"
	}
	t.field("chain", chain)
	writeStatus(t, r.Valid, len(r.Findings))
	writeClaims(t, "claims, recomputed from the receipt itself", r.Claims)
	writeFindings(t, r.Findings)
	writeFacts(t, r.Facts)
	return t.err
}

// documentSignatureLine renders a receipt's or an attestation's signature.
func documentSignatureLine(s Signature, alg string) string {
	switch s.Status {
	case SignatureNone:
		return "none (unsigned)"
	case SignatureVerified:
		return fmt.Sprintf("%s, verified (%s)", alg, s.KeyID)
	}
	return fmt.Sprintf("%s, NOT verified: %s", alg, s.Detail)
}

func writeStatus(t *textWriter, valid bool, findings int) {
	status := cell{text: "valid", sgr: sgrGreen}
	if !valid {
		status = cell{text: fmt.Sprintf("INVALID (%d findings)", findings), sgr: sgrRed}
		if findings == 1 {
			status.text = "INVALID (1 finding)"
		}
	}
	t.printf("  %-17s %s\n", "status", t.paint(status.sgr, status.text))
}

func writeClaims(t *textWriter, title string, claims []Claim) {
	t.printf("\n%s\n", t.paint(sgrBold, title))
	if len(claims) == 0 {
		t.printf("  (none)\n")
		return
	}
	rows := make([][]cell, len(claims))
	for i, c := range claims {
		field := c.Field
		if c.Item != "" {
			field += " (" + c.Item + ")"
		}
		rows[i] = []cell{plain(field), plain(c.Claim), plain(orText(c.Recomputed, "-")), yesNo(c.Agrees), plain(c.Basis)}
	}
	t.table([]string{"field", "claim", "recomputed", "agrees", "basis"}, rows)
}

func writeFindings(t *textWriter, fs []codec.Finding) {
	t.printf("\n%s\n", t.paint(sgrBold, "findings"))
	if len(fs) == 0 {
		t.printf("  none\n")
	}
	for _, f := range fs {
		t.printf("  - %s: %s\n", t.paint(sgrRed, inert(f.Code, false)), inert(f.String(), false))
	}
}

func writeFacts(t *textWriter, facts []codec.Fact) {
	if len(facts) == 0 {
		return
	}
	t.printf("\n%s\n", t.paint(sgrBold, "facts"))
	for _, f := range facts {
		t.field(f.Label, f.Value)
	}
}

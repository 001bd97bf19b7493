package admit

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/proof"
)

// AuditVerifier returns the document check of a full audit
// (ledger.AuditOptions.Verify). For each event it decodes the document as
// its leaf's kind and verifies it as admission did: Ed25519 signatures of
// receipts, attestations and rollback records (their keys travel with
// them), the HMAC of a signed witness bundle with the registered key whose
// fingerprint the leaf records as its signer, content hashes and
// recomputed verdicts. A bundle whose key is not registered (it was
// appended with a key given on the command line) is counted "not
// verifiable: key hmac:… not registered", not as a divergence. It then
// compares the facts the leaf records with the document's: identity,
// signer, time, subject (where the document fixes it), a receipt's chain
// fields, and the attrs (a bundle's governance evaluation as it was made
// at append time: a policy registered since does not count against it).
// The keys and policies are those registered when AuditVerifier is
// called. The check is safe for concurrent use.
func (l *Ledger) AuditVerifier() (ledger.DocVerifier, error) {
	regKeys, err := l.reg.HMACKeys()
	if err != nil {
		return nil, err
	}
	pols, err := l.reg.Policies()
	if err != nil {
		return nil, err
	}
	dv := &docVerifier{ins: l.ins, byID: map[string]keys.HMACKey{}, pols: pols}
	for _, k := range regKeys {
		for _, c := range k.Candidates() {
			dv.byID[registry.KeyID(c.Secret)] = c
		}
	}
	return dv.check, nil
}

// docVerifier is AuditVerifier's state: read-only once made.
type docVerifier struct {
	ins  *inspect.Inspector
	byID map[string]keys.HMACKey // registered HMAC keys by fingerprint
	pols []governance.Policy
}

// maxReason bounds the findings quoted in one problem.
const maxReason = 300

func (dv *docVerifier) check(ev *ledger.Event) ledger.DocCheck {
	var c ledger.DocCheck
	opts := inspect.Options{Policies: dv.pols}
	bundleKey := ev.Kind == codec.KindRVWW && strings.HasPrefix(ev.Signer, "hmac:")
	if bundleKey {
		if k, ok := dv.byID[ev.Signer]; ok {
			opts.HMACKeys = []keys.HMACKey{k}
		}
	}
	res := dv.ins.InspectKind(ev.Kind, ev.Data, opts)
	c.Signed = res.Signed
	if res.Status == inspect.Malformed {
		c.Problems = append(c.Problems, "its document does not decode: "+boundedReason(res.Findings))
		return c
	}
	findings := res.Findings
	if res.Bundle != nil && res.Signed && len(opts.HMACKeys) == 0 {
		findings = withoutCode(findings, rvww.CodeSignatureNotChecked)
		if bundleKey {
			c.Unverifiable = fmt.Sprintf("key %s not registered", ev.Signer)
		} else {
			c.Problems = append(c.Problems, "its document is a signed bundle, but its leaf records no key that verified it")
		}
	}
	if len(findings) > 0 {
		c.Problems = append(c.Problems, "its document does not verify: "+boundedReason(findings))
	} else if res.Signed && res.SignatureChecked {
		c.Verified = true
	}
	dv.compareFacts(ev, res, &c)
	return c
}

// compareFacts compares what the leaf records with what the document
// says.
func (dv *docVerifier) compareFacts(ev *ledger.Event, res *inspect.Result, c *ledger.DocCheck) {
	differ := func(field, leaf, doc string) {
		c.Problems = append(c.Problems, fmt.Sprintf("its leaf records %s %.80q, its document says %.80q", field, leaf, doc))
	}
	if res.ID != ev.ID {
		differ("id", ev.ID, res.ID)
	}
	if !res.Time.Equal(ev.Time) {
		differ("time", leafTime(ev.Time), leafTime(res.Time))
	}
	switch {
	case res.Bundle != nil:
		if !res.Signed && ev.Signer != "" {
			differ("signer", ev.Signer, "")
		}
		if task := res.Bundle.TaskUUID(); task != ev.Subject {
			differ("subject", ev.Subject, task)
		}
	case res.Rollback != nil:
		if res.Signer != ev.Signer {
			differ("signer", ev.Signer, res.Signer)
		}
		if res.Rollback.TaskID != ev.Subject {
			differ("subject", ev.Subject, res.Rollback.TaskID)
		}
	case res.Receipt != nil:
		if res.Signer != ev.Signer {
			differ("signer", ev.Signer, res.Signer)
		}
		r := res.Receipt
		if agent := r.AgentID(); agent != "" && agent != ev.Subject {
			differ("subject", ev.Subject, agent)
		}
		prev := ""
		for _, lk := range ev.Links {
			if lk.Rel == proof.RelPreviousReceipt {
				prev = lk.ID
			}
		}
		if prev != r.PreviousReceipt() {
			differ("previous_receipt", prev, r.PreviousReceipt())
		}
		pos, has := r.ChainPosition()
		if !has {
			pos = 0
		}
		if pos != ev.Position {
			c.Problems = append(c.Problems, fmt.Sprintf("its leaf records position %d, its document's chain_position gives %d", ev.Position, pos))
		}
	default: // AVIR attestations and specifications
		if res.Signer != ev.Signer {
			differ("signer", ev.Signer, res.Signer)
		}
		if res.Subject != ev.Subject {
			differ("subject", ev.Subject, res.Subject)
		}
	}
	want := attrs.Of(res)
	if res.Bundle != nil {
		b := attrs.BundleOf(res)
		var recorded attrs.Bundle
		if recorded.Decode(ev.Attrs) == nil {
			switch {
			case !recorded.PolicyKnown:
				// The policy was unknown when it was appended: its trace
				// was not evaluated then, whatever is registered now.
				b.PolicyKnown, b.Violations = false, nil
			case !b.PolicyKnown:
				b.PolicyKnown, b.Violations = true, recorded.Violations
				if c.Unverifiable == "" && !c.Verified {
					c.Unverifiable = fmt.Sprintf("policy %x not registered", b.Policy)
				}
			}
		}
		want = b.Value()
	}
	got := canonjson.AppendCanonical(nil, ev.Attrs)
	exp := canonjson.AppendCanonical(nil, want)
	if ev.Attrs.Len() == 0 && want.Len() == 0 {
		return
	}
	if !bytes.Equal(got, exp) {
		c.Problems = append(c.Problems, fmt.Sprintf("its leaf records attrs %.200s, its document gives %.200s", got, exp))
	}
}

// leafTime renders a time as a leaf writes it ("" for none).
func leafTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// withoutCode returns fs without the findings of a code.
func withoutCode(fs []codec.Finding, code string) []codec.Finding {
	var out []codec.Finding
	for _, f := range fs {
		if f.Code != code {
			out = append(out, f)
		}
	}
	return out
}

// boundedReason joins findings on one line, at most maxReason bytes.
func boundedReason(fs []codec.Finding) string {
	s := findingsReason(fs)
	if len(s) > maxReason {
		s = s[:maxReason] + "…"
	}
	return s
}

package inspect

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/codec/vrf"
)

// Options are what a verification may need beyond the document itself.
type Options struct {
	// HMACKeys are tried, in order, on signed witness bundles.
	HMACKeys []keys.HMACKey
	// Spec, when set, is the AVIR specification attestations are checked
	// against (spec_hash, system, benchmarks).
	Spec *avir.Spec
	// Policies are governance policies known besides the three defaults.
	Policies []governance.Policy
}

// Status classifies a Result.
type Status int

// The statuses, from best to worst.
const (
	// Valid: decoded and every check passed.
	Valid Status = iota
	// Invalid: decoded, but a check failed (exit code 4).
	Invalid
	// Malformed: could not be decoded, or broke its schema (exit code 3).
	Malformed
)

// Result is what inspecting one document found.
type Result struct {
	Kind             codec.Kind
	Form             codec.Form
	ID               string
	Signed           bool
	SignatureChecked bool
	Signer           string
	Subject          string
	Time             time.Time
	Status           Status
	// Findings are the schema problems (Malformed) or verification
	// failures (Invalid); empty when Valid.
	Findings []codec.Finding
	// Violations are the governance violations a witness bundle records.
	// They describe the task, not a defect of the document, and do not
	// make it invalid.
	Violations []governance.Violation
	Facts      []codec.Fact

	// Exactly one of these is set when the document decoded.
	Receipt     *vrf.Receipt
	Attestation *avir.Attestation
	Spec        *avir.Spec
	Bundle      *rvww.Bundle
	Rollback    *rollback.Rollback
	// Policy is the governance policy a bundle's hash names, nil when
	// unknown.
	Policy *governance.Policy
}

// Valid reports whether the document decoded and verified.
func (r *Result) Valid() bool { return r.Status == Valid }

// Inspector decodes and verifies documents of every kind. It keeps what is
// costly to prepare (the AVIR JSON Schemas, compiled) and is safe for
// concurrent use; make one and keep it.
type Inspector struct {
	avir *avir.Parser
}

// New returns an Inspector.
func New() (*Inspector, error) {
	p, err := avir.NewParser()
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	return &Inspector{avir: p}, nil
}

// ParseSpec reads an AVIR specification with the Inspector's parser.
func (ins *Inspector) ParseSpec(data []byte) (*avir.Spec, error) { return ins.avir.ParseSpec(data) }

// Inspect detects data's kind, decodes and verifies it.
func (ins *Inspector) Inspect(data []byte, opts Options) *Result {
	return ins.InspectKind(Detect(data), data, opts)
}

// InspectKind decodes and verifies data as the given kind.
func (ins *Inspector) InspectKind(kind codec.Kind, data []byte, opts Options) *Result {
	res := &Result{Kind: kind}
	switch kind {
	case codec.KindVRF:
		r, err := vrf.Parse(data)
		if err != nil {
			return res.malformed(err)
		}
		res.Receipt = r
		res.apply(r.Summary(), r.Verify())
	case codec.KindAVIRAttestation:
		a, err := ins.avir.ParseAttestation(data)
		if err != nil {
			return res.malformed(err)
		}
		res.Attestation = a
		rep := a.VerifyReport(avir.VerifyOptions{Spec: opts.Spec})
		sum := a.Summary()
		sum.SignatureChecked = rep.SignatureChecked
		sum.Facts = append(sum.Facts, rep.Facts...)
		res.apply(sum, rep.Findings)
	case codec.KindAVIRSpec:
		s, err := ins.avir.ParseSpec(data)
		if err != nil {
			return res.malformed(err)
		}
		res.Spec = s
		res.apply(s.Summary(), nil)
	case rollback.Kind:
		rb, err := rollback.Parse(data)
		if err != nil {
			return res.malformed(err)
		}
		res.Rollback = rb
		res.apply(rb.Summary(), rb.Verify())
	case codec.KindRVWW:
		b, err := rvww.Decode(data)
		if err != nil {
			return res.malformed(err)
		}
		res.Bundle = b
		findings := b.Verify(bundleKeys(opts.HMACKeys))
		res.apply(b.Summary(), findings)
		res.governance(b, opts.Policies)
	default:
		res.Status = Malformed
		res.Findings = []codec.Finding{{Code: "unknown_kind", Offset: codec.NoOffset,
			Reason: "not a VRF receipt, AVIR specification or attestation, RVWW witness bundle or rollback record"}}
	}
	return res
}

func bundleKeys(ks []keys.HMACKey) []rvww.Key {
	var out []rvww.Key
	for _, k := range ks {
		for _, c := range k.Candidates() {
			out = append(out, rvww.Key{Name: c.Name, Secret: c.Secret})
		}
	}
	return out
}

func (res *Result) malformed(err error) *Result {
	res.Status = Malformed
	res.Findings = codec.FindingsOf(err)
	return res
}

func (res *Result) apply(s codec.Summary, findings []codec.Finding) {
	res.Form = s.Form
	res.ID = s.ID
	res.Signed = s.Signed
	res.SignatureChecked = s.SignatureChecked
	res.Signer = s.Signer
	res.Subject = s.Subject
	res.Time = s.Time
	res.Facts = s.Facts
	res.Findings = append(res.Findings, findings...)
	if len(res.Findings) > 0 {
		res.Status = Invalid
	}
}

// PolicyByHash finds the policy a bundle's header names among the defaults
// and the extra policies.
func PolicyByHash(hash [8]byte, extra []governance.Policy) (governance.Policy, bool) {
	for _, p := range append(governance.Defaults(), extra...) {
		if p.Hash() == hash {
			return p, true
		}
	}
	return governance.Policy{}, false
}

// governance evaluates a bundle's trace against the policy its header
// names. A bundle whose policy is unknown is reported so, never as clean.
func (res *Result) governance(b *rvww.Bundle, extra []governance.Policy) {
	p, ok := PolicyByHash(b.Header.PolicyHash, extra)
	if !ok {
		res.Facts = append(res.Facts, codec.Fact{Label: "governance",
			Value: fmt.Sprintf("policy unknown (hash %s): trace not evaluated", hex.EncodeToString(b.Header.PolicyHash[:]))})
		return
	}
	res.Policy = &p
	calls := make([]governance.Call, len(b.Calls))
	for i, c := range b.Calls {
		calls[i] = governance.Call{Index: c.Index, Action: c.Action, Recorded: uint8(c.PolicyCheck), CostMicrodollars: c.CostMicrodollars}
	}
	ev := governance.Evaluate(p, uint8(b.Header.Mode), calls)
	res.Violations = ev.Violations
	if len(ev.Findings) > 0 {
		res.Findings = append(res.Findings, ev.Findings...)
		if res.Status == Valid {
			res.Status = Invalid
		}
	}
	summary := "clean"
	if n := len(ev.Violations); n > 0 {
		summary = fmt.Sprintf("%d violation(s)", n)
	}
	res.Facts = append(res.Facts, codec.Fact{Label: "governance", Value: fmt.Sprintf("policy %s: %s", policyLabel(p), summary)})
}

func policyLabel(p governance.Policy) string {
	if p.Name != "" {
		return fmt.Sprintf("%s (%s)", p.Name, p.HashString())
	}
	return p.HashString()
}

package admit

import (
	"fmt"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/proof"
)

// Freshness rules refuse a document whose own time is too old at its
// arrival (Options.MaxAge, or the ledger's registry.Freshness) or too far
// ahead of it (MaxSkew): a replay of an old document the ledger has not
// seen, or one dated ahead to outlive a max-age. The arrival is the time
// admission stamps (Submission.Arrival, else Options.Clock, else now).
// A document's own time is, per kind (the specifications in
// ../shared/specs):
//
//	vrf               verified_at (VRF receipt format v1)
//	avir-attestation  attestation_chain.timestamp, the completion time its
//	                  chain_hash covers (AVIR protocol v1, section 7)
//	rvww              the header's created_ns (ADR-035, section 1.2)
//	rollback          at
//	avir-spec         none: a specification is not an event, carries no
//	                  time, and is admitted whatever the rules say
//
// A document of a timed kind without a time (none can be decoded today:
// each of those fields is required) is refused as stale: a rule that
// cannot be checked does not admit.
//
// The judgement is made in sequence order, after the identity check, so a
// copy of a document already in the ledger is a replay (or conflict), not
// stale; --replay-ok never excuses a stale document. An import never
// applies the rules (an archive holds what a ledger admitted when it was
// fresh, Options.AnyTime), and neither a rebuild nor the audit re-judges
// an event: the rules decide admission only and leave nothing in the log.

// timeField names the field a kind's own time comes from, "" for a kind
// without one.
func timeField(k codec.Kind) string {
	switch k {
	case codec.KindVRF:
		return "verified_at"
	case codec.KindAVIRAttestation:
		return "attestation_chain.timestamp"
	case codec.KindRVWW:
		return "created_ns"
	case proof.KindRollback:
		return "at"
	}
	return ""
}

// freshRule is one call's freshness limits, resolved: each with where it
// comes from, for the refusal's reason.
type freshRule struct {
	maxAge, maxSkew time.Duration
	ageSrc, skewSrc string
}

// freshnessOf resolves the call's limits: Options.MaxAge and MaxSkew
// where given, else the ledger's setting; none under AnyTime.
func (l *Ledger) freshnessOf(opts Options) (freshRule, error) {
	if opts.AnyTime {
		return freshRule{}, nil
	}
	set, err := l.reg.Freshness()
	if err != nil {
		return freshRule{}, err
	}
	r := freshRule{maxAge: set.MaxAge, maxSkew: set.MaxSkew, ageSrc: "the ledger's max-age", skewSrc: "the ledger's max-skew"}
	if opts.MaxAge != nil {
		r.maxAge, r.ageSrc = *opts.MaxAge, "max-age set for this call"
	}
	if opts.MaxSkew != nil {
		r.maxSkew, r.skewSrc = *opts.MaxSkew, "max-skew set for this call"
	}
	if r.maxAge < 0 || r.maxSkew < 0 {
		return freshRule{}, fmt.Errorf("freshness: max-age %v, max-skew %v: must not be negative", r.maxAge, r.maxSkew)
	}
	return r, nil
}

// judge returns the refusal of a document decoded as res arriving at
// arrival, or nil when it is fresh enough (or the rules are off). A
// document exactly max-age old, or exactly max-skew ahead, is admitted.
func (r freshRule) judge(res *inspect.Result, arrival time.Time) *ledger.Refusal {
	if r.maxAge == 0 && r.maxSkew == 0 {
		return nil
	}
	field := timeField(res.Kind)
	if field == "" {
		return nil
	}
	t := res.Time
	if t.IsZero() {
		return &ledger.Refusal{Status: ledger.StatusStale, Class: ledger.RejectStale,
			Reason: fmt.Sprintf("%s: the document carries no time, and the freshness rules need one", field)}
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	// Over a second, a distance is shown in whole seconds, rounded up: it
	// exceeds the limit, and so does what is shown.
	show := func(d time.Duration) string {
		if d >= time.Second {
			if r := d.Truncate(time.Second); r != d {
				d = r + time.Second
			}
		}
		return registry.FormatDuration(d)
	}
	if age := arrival.Sub(t); r.maxAge > 0 && age > r.maxAge {
		return &ledger.Refusal{Status: ledger.StatusStale, Class: ledger.RejectStale,
			Reason: fmt.Sprintf("document time %s (%s) is %s old at arrival %s, older than %s %s",
				stamp(t), field, show(age), stamp(arrival), r.ageSrc, registry.FormatDuration(r.maxAge))}
	}
	if ahead := t.Sub(arrival); r.maxSkew > 0 && ahead > r.maxSkew {
		return &ledger.Refusal{Status: ledger.StatusStale, Class: ledger.RejectFuture,
			Reason: fmt.Sprintf("document time %s (%s) is %s ahead of arrival %s, beyond %s %s",
				stamp(t), field, show(ahead), stamp(arrival), r.skewSrc, registry.FormatDuration(r.maxSkew))}
	}
	return nil
}

package index

import (
	"time"
)

// Queries under a Filter that the per-day aggregates cannot answer alone:
// the days a filter's bundles span (from the rollup keys, so the cost
// grows with days and policies), and the bundles themselves (one record
// each) for callers that must follow tasks bundle by bundle.

// BundleDaysMatching returns the first and last day with bundles that
// match f (ok false when there are none). It reads the per-day rollup
// keys, not the bundles.
func BundleDaysMatching(r Reader, f Filter) (first, last Day, ok bool, err error) {
	err = r.Range(pRollup, prefixEnd(pRollup), func(k, _ []byte) (bool, error) {
		rk, err := rollupFromKey(k)
		if err != nil {
			return false, err
		}
		if !f.match(rk.policy[:], rk.mode) {
			return true, nil
		}
		if !ok {
			first, ok = rk.day, true
		}
		last = rk.day
		return true, nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	return first, last, ok, nil
}

// BundleOutcome classes a bundle's outcome as a scorecard counts it.
type BundleOutcome uint8

// The outcome classes.
const (
	OutcomeSolved  BundleOutcome = outSolved
	OutcomeFailed  BundleOutcome = outFailed
	OutcomeSkipped BundleOutcome = outSkipped
	// OutcomeError counts errored bundles and unknown outcome bytes.
	OutcomeError BundleOutcome = outError
)

// BundleRecord is what the index keeps of one witness bundle.
type BundleRecord struct {
	// Created is the bundle's created_ns; Seq its event.
	Created time.Time
	Seq     int64
	// Task is the task uuid.
	Task    string
	Outcome BundleOutcome
	// Policy is the 8-byte policy hash, Mode the governance mode byte.
	Policy []byte
	Mode   int
}

// Bundles calls fn for every bundle created in [since, until) (zero times
// leave the window open) that matches f, in created_ns order (then seq).
// It reads one record per bundle in the window: callers that need only
// sums use Aggregate.
func Bundles(r Reader, since, until time.Time, f Filter, fn func(BundleRecord) error) error {
	lo, hi := pBundle, prefixEnd(pBundle)
	if !since.IsZero() {
		lo = join(pBundle, nsKey(since.UnixNano()))
	}
	if !until.IsZero() {
		hi = join(pBundle, nsKey(until.UnixNano()))
	}
	return r.Range(lo, hi, func(k, v []byte) (bool, error) {
		ns, seq, err := timeSeqFromKey(k, pBundle)
		if err != nil {
			return false, err
		}
		b, err := decodeBundle(k, v)
		if err != nil {
			return false, err
		}
		if !f.match(b.policy[:], b.mode) {
			return true, nil
		}
		p := b.policy
		rec := BundleRecord{Created: time.Unix(0, ns).UTC(), Seq: seq, Task: b.task, Outcome: BundleOutcome(b.outcome), Policy: p[:], Mode: int(b.mode)}
		if err := fn(rec); err != nil {
			return false, err
		}
		return true, nil
	})
}

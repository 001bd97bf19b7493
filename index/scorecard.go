package index

import (
	"bytes"
	"sort"
	"time"
)

// Filter selects witness bundles by policy hash and governance mode.
type Filter struct {
	// Policy is an 8-byte policy hash; nil selects every policy.
	Policy []byte
	// Mode is a governance mode (0 restricted, 1 approved, 2 autonomous);
	// -1 selects every mode.
	Mode int
}

// AnyBundle selects every bundle.
var AnyBundle = Filter{Mode: -1}

func (f Filter) match(policy []byte, mode uint8) bool {
	if f.Policy != nil && !bytes.Equal(f.Policy, policy) {
		return false
	}
	return f.Mode < 0 || int(mode) == f.Mode
}

// Totals aggregates the witness bundles (by their created_ns) and rollback
// records (by their time) of a window.
type Totals struct {
	Solved, Failed, Skipped, Errors int64 // Errors includes unknown outcome bytes
	CostMicrodollars                int64
	Tokens                          int64
	Retries                         int64
	Violations                      int64
	// PolicyUnknown counts bundles whose policy hash named no known policy
	// when they were appended: their traces were not evaluated.
	PolicyUnknown          int64
	EvidenceCompleteSolved int64
	Rollbacks              int64
	RollbacksClean         int64
	// DaysRead and BundlesRead say what the aggregation read: whole-day
	// rollups, and individual bundles on the window's partial edge days.
	DaysRead, BundlesRead int

	lists [][]LatencyCount // sorted latency histograms, merged lazily
}

// Tasks returns the number of bundles: ADR-035's total_tasks.
func (t *Totals) Tasks() int64 { return t.Solved + t.Failed + t.Skipped + t.Errors }

func (t *Totals) addRollup(r *rollup, lat []LatencyCount, known bool) {
	t.Solved += int64(r.outcomes[outSolved])
	t.Failed += int64(r.outcomes[outFailed])
	t.Skipped += int64(r.outcomes[outSkipped])
	t.Errors += int64(r.outcomes[outError])
	t.CostMicrodollars += int64(r.cost)
	t.Tokens += int64(r.tokens)
	t.Retries += int64(r.retries)
	t.Violations += int64(r.violations)
	t.EvidenceCompleteSolved += int64(r.evidenceSolved)
	if !known {
		t.PolicyUnknown += int64(r.outcomes[0] + r.outcomes[1] + r.outcomes[2] + r.outcomes[3])
	}
	if len(lat) > 0 {
		t.lists = append(t.lists, lat)
	}
}

// Percentile returns the latency at index floor(p*n/100) (clamped to n-1)
// of the window's n sorted latencies, as the reference scorecard computes
// it (so the "median" of an even count is the upper middle); 0 when empty.
// It selects across the per-day histograms without merging them.
func (t *Totals) Percentile(p int) uint32 {
	var n uint64
	for _, l := range t.lists {
		for _, c := range l {
			n += c.Count
		}
	}
	if n == 0 {
		return 0
	}
	idx := uint64(p) * n / 100
	if idx > n-1 {
		idx = n - 1
	}
	// Cumulative counts per list, for counting values <= x by binary search.
	cums := make([][]uint64, len(t.lists))
	var hi uint32
	for i, l := range t.lists {
		c := make([]uint64, len(l))
		var s uint64
		for j, lc := range l {
			s += lc.Count
			c[j] = s
		}
		cums[i] = c
		if m := l[len(l)-1].MS; m > hi {
			hi = m
		}
	}
	atMost := func(x uint32) uint64 {
		var s uint64
		for i, l := range t.lists {
			j := sort.Search(len(l), func(j int) bool { return l[j].MS > x })
			if j > 0 {
				s += cums[i][j-1]
			}
		}
		return s
	}
	// Smallest x with more than idx values <= x.
	lo := uint32(0)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if atMost(mid) > idx {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Aggregate totals the bundles created in [since, until) that match f, and
// the rollback records timed in that window (zero times leave the window
// open). Whole days come from per-day rollups; only the partial days at the
// window's edges read individual bundle records, so the cost grows with the
// number of days, not bundles.
func Aggregate(r Reader, since, until time.Time, f Filter) (*Totals, error) {
	t := &Totals{}
	fromDay, toDay := wholeDays(since, until)
	var lower, upper []byte = pRollup, prefixEnd(pRollup)
	if !since.IsZero() {
		lower = join(pRollup, fromDay.key())
	}
	if !until.IsZero() {
		upper = join(pRollup, toDay.key())
	}
	if since.IsZero() || until.IsZero() || fromDay < toDay {
		err := r.Range(lower, upper, func(k, v []byte) (bool, error) {
			rk, err := rollupFromKey(k)
			if err != nil {
				return false, err
			}
			if !f.match(rk.policy[:], rk.mode) {
				return true, nil
			}
			ro, lat, err := decodeRollupAt(k, v)
			if err != nil {
				return false, err
			}
			t.addRollup(ro, lat, rk.known)
			t.DaysRead++
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Partial edge days, bundle by bundle.
	var edges [][2]int64
	switch {
	case !since.IsZero() && !until.IsZero() && fromDay >= toDay:
		edges = append(edges, [2]int64{since.UnixNano(), until.UnixNano()})
	default:
		if !since.IsZero() && fromDay.Start().After(since) {
			edges = append(edges, [2]int64{since.UnixNano(), fromDay.Start().UnixNano()})
		}
		if !until.IsZero() && toDay.Start().Before(until) {
			edges = append(edges, [2]int64{toDay.Start().UnixNano(), until.UnixNano()})
		}
	}
	edge := &rollup{}
	edgeUnknown := &rollup{}
	for _, e := range edges {
		err := r.Range(join(pBundle, nsKey(e[0])), join(pBundle, nsKey(e[1])), func(k, v []byte) (bool, error) {
			if _, _, err := timeSeqFromKey(k, pBundle); err != nil {
				return false, err
			}
			b, err := decodeBundle(k, v)
			if err != nil {
				return false, err
			}
			if !f.match(b.policy[:], b.mode) {
				return true, nil
			}
			if b.policyKnown {
				edge.add(b)
			} else {
				edgeUnknown.add(b)
			}
			t.BundlesRead++
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, ro := range []struct {
		r     *rollup
		known bool
	}{{edge, true}, {edgeUnknown, false}} {
		if ro.r.latencies != nil {
			_, lat, err := decodeRollup(ro.r.encode())
			if err != nil {
				return nil, err
			}
			t.addRollup(ro.r, lat, ro.known)
		}
	}
	// Rollbacks, by their own time.
	lo, hi := pRollback, prefixEnd(pRollback)
	if !since.IsZero() {
		lo = join(pRollback, nsKey(since.UnixNano()))
	}
	if !until.IsZero() {
		hi = join(pRollback, nsKey(until.UnixNano()))
	}
	err := r.Range(lo, hi, func(k, v []byte) (bool, error) {
		if _, _, err := timeSeqFromKey(k, pRollback); err != nil {
			return false, err
		}
		rec, err := decodeRollback(k, v)
		if err != nil {
			return false, err
		}
		t.Rollbacks++
		if rec.clean {
			t.RollbacksClean++
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// RollbackRecord is a rollback record as the index keeps it.
type RollbackRecord struct {
	At            time.Time // the record's own time
	Seq           int64     // its event
	Task          string
	RestoredClean bool
	// Policy and Mode are those of the bundle the rollback follows (its
	// task's latest bundle appended before it); Policy is nil when the
	// task had none.
	Policy []byte
	Mode   int
}

// Matches reports whether the bundle the rollback follows passes f.
func (r RollbackRecord) Matches(f Filter) bool {
	if r.Policy == nil {
		return f.Policy == nil && f.Mode < 0
	}
	if f.Policy != nil && !bytes.Equal(f.Policy, r.Policy) {
		return false
	}
	return f.Mode < 0 || r.Mode == f.Mode
}

// Rollbacks returns the rollback records timed in [since, until) (zero
// times leave the window open), in time order: what Aggregate counts, for
// callers that attribute each record to the bundle it follows.
func Rollbacks(r Reader, since, until time.Time) ([]RollbackRecord, error) {
	lo, hi := pRollback, prefixEnd(pRollback)
	if !since.IsZero() {
		lo = join(pRollback, nsKey(since.UnixNano()))
	}
	if !until.IsZero() {
		hi = join(pRollback, nsKey(until.UnixNano()))
	}
	var out []RollbackRecord
	err := r.Range(lo, hi, func(k, v []byte) (bool, error) {
		ns, seq, err := timeSeqFromKey(k, pRollback)
		if err != nil {
			return false, err
		}
		rec, err := decodeRollback(k, v)
		if err != nil {
			return false, err
		}
		rr := RollbackRecord{At: time.Unix(0, ns).UTC(), Seq: seq, Task: rec.task, RestoredClean: rec.clean, Mode: -1}
		if rec.bundle {
			rr.Policy, rr.Mode = bytes.Clone(rec.policy[:]), int(rec.mode)
		}
		out = append(out, rr)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wholeDays returns the whole UTC days inside [since, until) as the
// half-open day range [from, to).
func wholeDays(since, until time.Time) (from, to Day) {
	from = DayOf(since)
	if !since.IsZero() && from.Start().Before(since) {
		from++
	}
	to = DayOf(until)
	return from, to
}

// Regression is a task that failed or errored on Day after it had been
// solved (first at FirstSolved).
type Regression struct {
	Day         Day
	Task        string
	FirstSolved time.Time
}

// Regressions returns the regression entries of the days in [from, to).
// A trend counts, per period, the distinct tasks with an entry in the
// period whose first solve lies in an earlier period.
func Regressions(r Reader, from, to Day) ([]Regression, error) {
	var out []Regression
	err := r.Range(join(pRegression, from.key()), join(pRegression, to.key()), func(k, v []byte) (bool, error) {
		day, task, err := regressionFromKey(k)
		if err != nil {
			return false, err
		}
		first, err := decodeRegression(k, v)
		if err != nil {
			return false, err
		}
		out = append(out, Regression{Day: day, Task: task, FirstSolved: time.Unix(0, int64(*first)).UTC()})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BundleDays returns the first and last day with bundles (ok false when
// there are none).
func BundleDays(r Reader) (first, last Day, ok bool, err error) {
	err = r.Range(pBundle, prefixEnd(pBundle), func(k, _ []byte) (bool, error) {
		ns, _, err := timeSeqFromKey(k, pBundle)
		if err != nil {
			return false, err
		}
		first = dayOfNS(ns)
		ok = true
		return false, nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	if !ok {
		return first, last, ok, nil
	}
	// The last bundle: scan the final day's rollups is cheaper than a
	// reverse iterator here; walk rollup keys from the first day.
	err = r.Range(join(pRollup, first.key()), prefixEnd(pRollup), func(k, _ []byte) (bool, error) {
		rk, err := rollupFromKey(k)
		if err != nil {
			return false, err
		}
		last = rk.day
		return true, nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	return first, last, ok, nil
}

package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
)

// Errors of queries, which callers report as usage errors.
var (
	// ErrBadTime: a time that does not parse or that the ledger cannot
	// represent.
	ErrBadTime = errors.New("bad time")
	// ErrEmptyWindow: a window whose end is not after its start.
	ErrEmptyWindow = errors.New("the window is empty")
	// ErrBadKind: not a kind of document the ledger keeps.
	ErrBadKind = errors.New("unknown kind")
)

// MinTime and MaxTime bound the times the ledger can represent (int64
// nanoseconds since 1970).
var (
	MinTime = time.Unix(0, math.MinInt64).UTC()
	MaxTime = time.Unix(0, math.MaxInt64).UTC()
)

// ParseTime reads a time as users give it: a date (2026-11-01, UTC
// midnight), an RFC 3339 time, or a duration back from now (90m, 24h, 7d,
// 2w). A time outside what the ledger can represent is an error wrapping
// ErrBadTime, never a silent wrap-around.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := parseTimeValue(s, now)
	if err != nil {
		return time.Time{}, err
	}
	if t.Before(MinTime) || t.After(MaxTime) {
		return time.Time{}, fmt.Errorf("%w %.40q: outside what the ledger can represent (%s to %s)", ErrBadTime, s,
			MinTime.Format("2006-01-02"), MaxTime.Format("2006-01-02"))
	}
	return t.UTC(), nil
}

func parseTimeValue(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("%w %.40q: want a date (2026-11-01), an RFC 3339 time, or a duration back from now (24h, 7d, 2w)", ErrBadTime, s)
	if len(s) >= 2 {
		unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
		num := s[:len(s)-1]
		if unit != 0 && (num[0] >= '0' && num[0] <= '9' || num[0] == '.') {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
				return time.Time{}, bad
			}
			if n*float64(unit) > float64(now.Sub(MinTime)) {
				return time.Time{}, fmt.Errorf("%w %.40q: reaches back before what the ledger can represent", ErrBadTime, s)
			}
			return now.Add(-time.Duration(n * float64(unit))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, bad
}

// ValidateWindow checks a window [since, until) of which either end may be
// zero (open): a closed window must not be empty.
func ValidateWindow(since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return fmt.Errorf("%w: %s is not after %s", ErrEmptyWindow, until.Format(time.RFC3339Nano), since.Format(time.RFC3339Nano))
	}
	return nil
}

// ParseKind reads a document kind: vrf, avir-attestation, avir-spec, rvww
// or rollback.
func ParseKind(s string) (codec.Kind, error) {
	k := codec.Kind(s)
	if !proof.KnownKind(k) {
		return "", fmt.Errorf("%w %.40q: want vrf, avir-attestation, avir-spec, rvww or rollback", ErrBadKind, s)
	}
	return k, nil
}

// Query selects events of the log: appended in [Since, Until) (zero ends
// are open), of one Kind (empty: every kind), among those Select yields
// (nil: every event), at most Limit of them (0: all).
type Query struct {
	Since, Until time.Time
	Kind         codec.Kind
	Limit        int
	// Select, when set, narrows the query to the events an index selects
	// (package index: the events of an agent, of a subject, of a task), so
	// that the log is not scanned: Log reads only the events it yields.
	Select Selector
}

// Selector yields, in increasing order, the sequence numbers in [from,
// to) of the events it selects, reading them from r (a projection's
// keyspace), until fn returns false or an error.
type Selector func(r *Snapshot, from, to int64, fn func(seq int64) (bool, error)) error

// Validate checks the query as Log would.
func (q Query) Validate() error {
	if err := ValidateWindow(q.Since, q.Until); err != nil {
		return err
	}
	if q.Kind != "" && !proof.KnownKind(q.Kind) {
		return fmt.Errorf("%w %q", ErrBadKind, q.Kind)
	}
	if q.Limit < 0 {
		return fmt.Errorf("limit %d: must not be negative", q.Limit)
	}
	return nil
}

// Log calls fn for each event q selects, in log order, until fn returns
// false or an error. It starts at the first event appended at Since (the
// time index) and stops at the first appended at Until. With Select it
// reads only the events the selector yields between those two, through
// one snapshot; the selector reads derived entries, so it fails with
// ErrStale while they are incomplete.
func (l *Ledger) Log(ctx context.Context, q Query, fn func(*Event) (bool, error)) error {
	if err := q.Validate(); err != nil {
		return err
	}
	if q.Select != nil {
		return l.logSelected(ctx, q, fn)
	}
	var from int64
	if !q.Since.IsZero() {
		var err error
		if from, err = l.FirstAt(q.Since); err != nil {
			return err
		}
	}
	n := 0
	return l.ScanContext(ctx, from, false, func(ev *Event) (bool, error) {
		if !q.Until.IsZero() && !ev.AppendedAt.Before(q.Until) {
			return false, nil
		}
		if q.Kind != "" && ev.Kind != q.Kind {
			return true, nil
		}
		more, err := fn(ev)
		if err != nil || !more {
			return false, err
		}
		n++
		return q.Limit == 0 || n < q.Limit, nil
	})
}

// logSelected is Log with a selector.
func (l *Ledger) logSelected(ctx context.Context, q Query, fn func(*Event) (bool, error)) error {
	s := l.Snapshot()
	defer s.Close()
	if s.v == nil {
		return s.closedErr()
	}
	if l.Stale() {
		return ErrStale
	}
	from, to := int64(0), s.v.size
	var err error
	if !q.Since.IsZero() {
		if from, err = firstAt(s.v, q.Since); err != nil {
			return err
		}
	}
	if !q.Until.IsZero() {
		if to, err = firstAt(s.v, q.Until); err != nil {
			return err
		}
	}
	if from >= to {
		return nil
	}
	n := 0
	last := from - 1
	return q.Select(s, from, to, func(seq int64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if seq <= last || seq >= to {
			return false, fmt.Errorf("selector yielded event %d after %d, outside [%d, %d) or out of order", seq, last, from, to)
		}
		last = seq
		ev, _, err := l.eventAt(s.v, seq, false)
		if err != nil {
			return false, err
		}
		if q.Kind != "" && ev.Kind != q.Kind {
			return true, nil
		}
		more, err := fn(ev)
		if err != nil || !more {
			return false, err
		}
		n++
		return q.Limit == 0 || n < q.Limit, nil
	})
}

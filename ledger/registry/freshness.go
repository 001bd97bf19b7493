package registry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proofledger/ledger/ledger"
)

// Freshness rules are settings: how old a document's own time may be at
// its arrival, and how far ahead of its arrival, for appends (package
// admit applies them; an import, a rebuild and the audit never do). Each
// is one setting holding a Go duration in time.Duration.String's form
// ("720h0m0s"); an absent setting is no limit:
//
//	freshness/max-age    the oldest a document's time may be at arrival
//	freshness/max-skew   the furthest ahead of its arrival a document's time may be
const (
	freshMaxAge  = "freshness/max-age"
	freshMaxSkew = "freshness/max-skew"
)

// MaxFreshness bounds a freshness limit: 100 years.
const MaxFreshness = 100 * 365 * 24 * time.Hour

// ErrBadDuration: not a duration a freshness limit can be.
var ErrBadDuration = errors.New("bad duration")

// Freshness is how old, and how far ahead of its arrival, a document's
// own time may be when it is appended. Zero is no limit.
type Freshness struct {
	MaxAge, MaxSkew time.Duration
}

// Off reports whether neither limit is set.
func (f Freshness) Off() bool { return f.MaxAge == 0 && f.MaxSkew == 0 }

// ParseDuration reads a freshness limit as the command line gives it: a
// Go duration (720h, 5m, 90s, 1h30m) or a whole number of days or weeks
// (30d, 2w); 0 is no limit. A negative duration, or one beyond
// MaxFreshness, is an error wrapping ErrBadDuration.
func ParseDuration(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%w %.40q: %s", ErrBadDuration, s, why)
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && !strings.ContainsAny(n, "+-") {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v > int64(MaxFreshness/(24*time.Hour)) {
			return bad("want a whole number of days (30d)")
		}
		d = time.Duration(v) * 24 * time.Hour
	} else if n, ok := strings.CutSuffix(s, "w"); ok && n != "" && !strings.ContainsAny(n, "+-") {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v > int64(MaxFreshness/(7*24*time.Hour)) {
			return bad("want a whole number of weeks (2w)")
		}
		d = time.Duration(v) * 7 * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return bad("want a duration such as 720h, 30d, 2w, 5m or 0")
		}
	}
	if d < 0 {
		return bad("must not be negative")
	}
	if d > MaxFreshness {
		return bad("beyond 100 years")
	}
	return d, nil
}

// FormatDuration writes a duration for messages: whole days as 30d, else
// days, hours, minutes and seconds with the zero ones left out (41d3h,
// 2h, 5m, 1m30s); under a second, Go's form (250ms).
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	if d < time.Second {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if d >= u.unit {
			fmt.Fprintf(&b, "%d%s", d/u.unit, u.name)
			d %= u.unit
		}
	}
	if d > 0 {
		fmt.Fprintf(&b, "%s", strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+"s")
	}
	return b.String()
}

// Freshness returns the ledger's freshness setting (zero limits when it
// has none).
func (r *Registry) Freshness() (Freshness, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(); err != nil {
		return Freshness{}, err
	}
	return r.fresh, nil
}

// SetFreshness stores the ledger's freshness setting: each limit that is
// not zero is stored, each zero one removed (no limit).
func (r *Registry) SetFreshness(f Freshness) error {
	for _, d := range []time.Duration{f.MaxAge, f.MaxSkew} {
		if d < 0 || d > MaxFreshness {
			return fmt.Errorf("%w: %v: want 0 to 100 years", ErrBadDuration, d)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.valid = false
	for _, s := range []struct {
		name string
		d    time.Duration
	}{{freshMaxAge, f.MaxAge}, {freshMaxSkew, f.MaxSkew}} {
		var err error
		if s.d == 0 {
			err = r.s.DeleteSetting(s.name)
		} else {
			err = r.s.SetSetting(s.name, []byte(goDuration(s.d)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// goDuration writes d as time.Duration.String does, without its zero
// minutes and seconds: 72h, 1h30m, 5m, 1.5s.
func goDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// loadFreshness reads the freshness setting. A value that is not a Go
// duration from 1ns to MaxFreshness is corrupt.
func (r *Registry) loadFreshness() (Freshness, error) {
	var f Freshness
	err := r.s.Settings("freshness/", func(name string, v []byte) error {
		var dst *time.Duration
		switch name {
		case freshMaxAge:
			dst = &f.MaxAge
		case freshMaxSkew:
			dst = &f.MaxSkew
		default:
			return fmt.Errorf("%w: unknown freshness setting %q", ledger.ErrCorrupt, name)
		}
		d, err := time.ParseDuration(string(v))
		if err != nil || d <= 0 || d > MaxFreshness {
			return fmt.Errorf("%w: freshness setting %q holds %.80q, not a duration", ledger.ErrCorrupt, name, v)
		}
		*dst = d
		return nil
	})
	return f, err
}

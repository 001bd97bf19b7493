package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
)

// defaultDir is where commands look for a ledger without --dir or LEDGER_DIR.
const defaultDir = "./ledger-data"

func dirFlag() cli.Flag {
	return &cli.StringFlag{Name: "dir", Usage: "ledger directory", EnvVars: []string{"LEDGER_DIR"}, Value: defaultDir}
}

// openLedger opens the ledger named by --dir for the command. A damaged
// ledger is refused (exit 7) with what is wrong; `ledger audit` opens it
// for diagnosis instead (openForAudit).
func openLedger(c *cli.Context, e *env, readOnly bool) (*ledger.Ledger, error) {
	return openWith(c, e, ledger.Options{ReadOnly: readOnly})
}

func openWith(c *cli.Context, e *env, opts ledger.Options) (*ledger.Ledger, error) {
	dir := c.String("dir")
	opts.Logger = e.log
	opts.Projectors = ledgerProjectors()
	opts.OnFatal = e.fatal
	l, err := ledger.Open(dir, opts)
	if err != nil {
		switch {
		case errors.Is(err, ledger.ErrNotLedger):
			return nil, usageErrorf("%v (create one with: ledger init --dir %s)", err, dir)
		case errors.Is(err, ledger.ErrDamaged):
			return nil, exitf(exitDamaged, "%w; run `ledger audit --dir %s` for the details", err, dir)
		case errors.Is(err, ledger.ErrNewerFormat):
			return nil, exitf(exitInternal, "%w", err)
		}
		return nil, exitf(exitInternal, "%w", err)
	}
	return l, nil
}

// minTime and maxTime bound the times the ledger can represent (int64
// nanoseconds since 1970).
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// parseTimeArg reads a time argument: a date (2026-11-01, UTC midnight),
// an RFC 3339 time, or a duration back from now (90m, 24h, 7d, 2w). A time
// the ledger cannot represent is an error, never a silent wrap-around.
func parseTimeArg(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := parseTimeValue(s, now)
	if err != nil {
		return time.Time{}, err
	}
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("time %q: outside what the ledger can represent (%s to %s)", s,
			minTime.Format("2006-01-02"), maxTime.Format("2006-01-02"))
	}
	return t, nil
}

func parseTimeValue(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	bad := fmt.Errorf("time %q: want a date (2026-11-01), RFC 3339 time, or duration back from now (24h, 7d, 2w)", s)
	if len(s) >= 2 {
		unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
		num := s[:len(s)-1]
		if unit != 0 && num != "" && (num[0] >= '0' && num[0] <= '9' || num[0] == '.') {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n < 0 {
				return time.Time{}, bad
			}
			if n*float64(unit) > float64(now.Sub(minTime)) {
				return time.Time{}, fmt.Errorf("time %q: reaches back before what the ledger can represent", s)
			}
			return now.Add(-time.Duration(n * float64(unit))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, bad
}

// parseWindow reads --since and --until; an empty window (until not after
// since) is a usage error.
func parseWindow(c *cli.Context, now time.Time) (since, until time.Time, err error) {
	if s := c.String("since"); s != "" {
		if since, err = parseTimeArg(s, now); err != nil {
			return since, until, usageErrorf("--since: %v", err)
		}
	}
	if s := c.String("until"); s != "" {
		if until, err = parseTimeArg(s, now); err != nil {
			return since, until, usageErrorf("--until: %v", err)
		}
	}
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return since, until, usageErrorf("--until %s is not after --since %s: the window is empty", until.Format(time.RFC3339), since.Format(time.RFC3339))
	}
	return since, until, nil
}

// resolveEvent finds an event by sequence number or document identity.
func resolveEvent(l *ledger.Ledger, ref string) (*ledger.Event, error) {
	if n, err := strconv.ParseInt(ref, 10, 64); err == nil && n >= 0 && len(ref) < 19 {
		ev, err := l.Event(n, false)
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, ledger.ErrNotFound) {
			return nil, err
		}
	}
	return l.Lookup(ref)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ledgerProjectors are the projections every command keeps up to date.
func ledgerProjectors() []ledger.Projector { return []ledger.Projector{index.New()} }

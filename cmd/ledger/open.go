package main

import (
	"errors"
	"fmt"
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

// openLedger opens the ledger named by --dir for the command.
func openLedger(c *cli.Context, e *env, readOnly bool) (*ledger.Ledger, error) {
	dir := c.String("dir")
	l, err := ledger.Open(dir, ledger.Options{Logger: e.log, ReadOnly: readOnly, Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		switch {
		case errors.Is(err, ledger.ErrNotLedger):
			return nil, usageErrorf("%v", err)
		case errors.Is(err, ledger.ErrNewerFormat):
			return nil, exitf(exitInternal, "%v", err)
		}
		return nil, exitf(exitInternal, "open ledger %s: %v", dir, err)
	}
	return l, nil
}

// parseTimeArg reads a time argument: a date (2026-11-01, UTC midnight),
// an RFC 3339 time, or a duration back from now (90m, 24h, 7d, 2w).
func parseTimeArg(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if len(s) >= 2 {
		unit := s[len(s)-1]
		if n, err := strconv.ParseFloat(s[:len(s)-1], 64); err == nil && n >= 0 {
			switch unit {
			case 'd':
				return now.Add(-time.Duration(n * float64(24*time.Hour))), nil
			case 'w':
				return now.Add(-time.Duration(n * float64(7*24*time.Hour))), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("time %q: want a date (2026-11-01), RFC 3339 time, or duration back from now (24h, 7d, 2w)", s)
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

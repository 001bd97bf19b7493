package main

import (
	"errors"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// defaultDir is where commands look for a ledger without --dir or LEDGER_DIR.
const defaultDir = "./ledger-data"

func dirFlag() cli.Flag {
	return &cli.StringFlag{Name: "dir", Usage: "ledger directory", EnvVars: []string{"LEDGER_DIR"}, Value: defaultDir}
}

// openLedger opens the ledger named by --dir for the command, with the
// admission layer and the index projections. A damaged ledger is refused
// (exit 7) with what is wrong; `ledger audit` opens it for diagnosis
// instead.
func openLedger(c *cli.Context, e *env, readOnly bool) (*admit.Ledger, error) {
	return openWith(c, e, ledger.Options{ReadOnly: readOnly})
}

// closeLedger closes the command's ledger as the command ends, without
// making Close's error the command's: every write a command makes is
// synced before it is reported, and what Close adds on a writable ledger
// (a flush that spares the next open a replay of the log) loses nothing
// when it fails. A failed flush is logged as a warning all the same.
func closeLedger(l *admit.Ledger) { _ = l.Close() }

func openWith(c *cli.Context, e *env, opts ledger.Options) (*admit.Ledger, error) {
	dir := c.String("dir")
	opts.Logger = e.log
	opts.Projectors = ledgerProjectors()
	opts.OnFatal = e.fatal
	wait, err := waitOf(c)
	if err != nil {
		return nil, err
	}
	opts.Wait = wait
	l, err := admit.OpenContext(c.Context, dir, opts)
	if err != nil {
		switch {
		case errors.Is(err, ledger.ErrBusy):
			return nil, exitf(exitBusy, "%w", err)
		case errors.Is(err, ledger.ErrNotLedger):
			return nil, usageErrorf("%v (create one with: ledger init --dir %s)", err, dir)
		case errors.Is(err, ledger.ErrDamaged):
			return nil, exitf(exitDamaged, "%w; run `ledger audit --dir %s` for the details", err, dir)
		case errors.Is(err, ledger.ErrNewerFormat):
			return nil, exitf(exitInternal, "%w", err)
		}
		return nil, exitf(exitInternal, "%w", err)
	}
	if !opts.AllowDamaged {
		// audit (the only command opening a damaged ledger) lists the
		// corruptions it meets in its own report.
		e.opened = append(e.opened, l)
	}
	noteReadCopy(e, l.Ledger)
	return l, nil
}

// parseWindow reads --since and --until (either may be absent); an empty
// window is a usage error.
func parseWindow(c *cli.Context, now time.Time) (since, until time.Time, err error) {
	if s := c.String("since"); s != "" {
		if since, err = ledger.ParseTime(s, now); err != nil {
			return since, until, usageErrorf("--since: %v", err)
		}
	}
	if s := c.String("until"); s != "" {
		if until, err = ledger.ParseTime(s, now); err != nil {
			return since, until, usageErrorf("--until: %v", err)
		}
	}
	if err := ledger.ValidateWindow(since, until); err != nil {
		return since, until, usageErrorf("--since/--until: %v", err)
	}
	return since, until, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ledgerProjectors are the projections every command keeps up to date.
func ledgerProjectors() []ledger.Projector { return []ledger.Projector{index.New()} }

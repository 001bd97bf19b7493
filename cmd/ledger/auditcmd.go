package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/ledger"
)

// auditJSON is audit's report. Problems lists each divergence with its
// event's sequence number (-1 when it belongs to no event).
type auditJSON struct {
	Dir         string           `json:"dir"`
	OK          bool             `json:"ok"`
	Events      int64            `json:"events"`
	Checkpoints int64            `json:"checkpoints"`
	Root        string           `json:"root"`
	Damaged     bool             `json:"damaged"`
	Problems    []ledger.Problem `json:"problems"`
	Omitted     int64            `json:"omitted"`
	Seconds     float64          `json:"seconds"`
}

func auditCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "check the whole ledger: documents, leaves, tree, every signed checkpoint and the indexes",
		Description: "Re-reads every event and checks: events dense from 0; every document against the digest and\n" +
			"size its leaf commits to; arrival times never going backwards; links to earlier events; the Merkle\n" +
			"tree recomputed from the leaves against every stored hash; every signed checkpoint (in the store and\n" +
			"in the checkpoint log outside it) against its signature and the recomputed tree at its size (two\n" +
			"roots for one size is a fork); the identity, digest, time, task and chain indexes against the\n" +
			"entries the events imply. It also opens a damaged ledger, which every other command refuses, and\n" +
			"says what is wrong. Memory stays bounded whatever the ledger's size.\n\n" +
			"Exit codes: 0 sound, 4 some divergence found, 1 the audit could not run.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
			&cli.IntFlag{Name: "max-problems", Value: 200, Usage: "list at most N problems (the rest are counted)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("audit takes no arguments")
			}
			l, err := openWith(c, e, ledger.Options{ReadOnly: true, AllowDamaged: true})
			if err != nil {
				return err
			}
			defer closeLedger(l)
			start := time.Now()
			bar := e.newProgress("audit", "events", l.Size())
			rep, err := l.Audit(c.Context, ledger.AuditOptions{MaxProblems: c.Int("max-problems"), Progress: func(done, _ int64) { bar.set(done) }})
			bar.done()
			if err != nil {
				return exitf(exitInternal, "audit: %w", err)
			}
			elapsed := time.Since(start)
			if c.Bool("json") {
				problems := rep.Problems
				if problems == nil {
					problems = []ledger.Problem{}
				}
				if err := writeJSONLine(e.stdout, auditJSON{c.String("dir"), rep.OK(), rep.Events, rep.Checkpoints, b64(rep.Root[:]),
					l.Damage() != nil, problems, rep.Omitted, round4(elapsed.Seconds())}); err != nil {
					return err
				}
			} else {
				paint := e.painter(e.stdout)
				if rep.OK() {
					_, _ = fmt.Fprintf(e.stdout, "%s: %s: %s events, %s signed checkpoints agree with the tree (root %s); documents, leaves and indexes check out (%s)\n",
						c.String("dir"), paint.paint(toneGood, "sound"), thousands(rep.Events), thousands(rep.Checkpoints), b64(rep.Root[:]), elapsed.Round(time.Millisecond))
				} else {
					_, _ = fmt.Fprintf(e.stdout, "%s: %s in %s events:\n", c.String("dir"),
						paint.paint(toneBad, fmt.Sprintf("%d problem(s)", int64(len(rep.Problems))+rep.Omitted)), thousands(rep.Events))
					for _, p := range rep.Problems {
						_, _ = fmt.Fprintf(e.stdout, "  %s\n", p)
					}
					if rep.Omitted > 0 {
						_, _ = fmt.Fprintf(e.stdout, "  … and %d more\n", rep.Omitted)
					}
				}
			}
			if !rep.OK() {
				return &exitError{code: exitInvalid}
			}
			return nil
		},
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/audit"
	"github.com/proofledger/ledger/proof"
)

// maxCheckpointFile bounds a saved checkpoint read by --against.
const maxCheckpointFile = 64 << 10

func auditCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "check the whole ledger: documents, signatures, leaves, tree, every signed checkpoint, the indexes and the projections",
		ArgsUsage: " ",
		Description: "Re-reads every event and checks: events dense from 0; every document against the digest and\n" +
			"size its leaf commits to; every signature and HMAC it can (Ed25519 of receipts, attestations and\n" +
			"rollback records; the HMAC of witness bundles with the registered keys: a bundle whose key is not\n" +
			"registered is counted as not verifiable, not as a divergence) and the facts each leaf records\n" +
			"against its document; arrival times never going backwards; links to earlier events; the Merkle\n" +
			"tree recomputed from the leaves against every stored hash; every signed checkpoint (in the store\n" +
			"and in the checkpoint log outside it) against its signature and the recomputed tree at its size\n" +
			"(two roots for one size is a fork); the identity, digest, time, chain and task indexes and the\n" +
			"projections (reputation, systems, scorecard rollups, regressions), recomputed from the leaves into\n" +
			"a scratch store and compared key by key. Each divergence is listed with the event it comes from.\n" +
			"Signatures are verified on every core; memory stays bounded whatever the ledger's size (the\n" +
			"scratch store lives on disk, in --scratch, and is removed after).\n\n" +
			"--from SEQ checks the documents, signatures, leaves, tree hashes and links of events SEQ and later\n" +
			"only: the tree of the events before SEQ comes from its stored hashes, which must give the root the\n" +
			"ledger signed for that size (or be proven by the checkpoints signed after it); the indexes and\n" +
			"projections are still recomputed from every leaf (they are aggregates over the whole log).\n\n" +
			"--against FILE checks a checkpoint saved earlier (as `ledger checkpoint` prints it): it must\n" +
			"verify under the log's key (else the key mismatch is reported) and today's tree must have its root\n" +
			"at its size: a different root is a FORK (the log was rewritten after it was saved), a size beyond\n" +
			"today's a ROLLBACK (signed events are gone), which nothing inside the ledger directory can show\n" +
			"when its checkpoint log was rolled back too. Alone, --against is a quick check (an RFC 6962\n" +
			"consistency proof from the stored hashes, O(log n) reads); with --from it joins the audit.\n\n" +
			"It also opens a damaged ledger, which every other command refuses, and says what is wrong.\n" +
			"A progress bar goes to stderr when it is a terminal (--quiet or --no-progress: none).\n\n" +
			"JSON (--json, one object): dir, ok, events, from, checked, checkpoints, root, damaged,\n" +
			"signatures_verified, unsigned, not_verifiable, not_verifiable_reasons [{reason, count}],\n" +
			"entries_compared, projections_compared, against {size, root, verified, consistent, method} or null,\n" +
			"problems [{seq, what}] (seq -1 when no event can be named), omitted, seconds.\n\n" +
			"Exit codes: 0 sound, 2 usage error, 3 the --against file cannot be read or parsed, 4 some\n" +
			"divergence found, 1 the audit could not run.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
			&cli.Int64Flag{Name: "from", Usage: "check the documents, signatures, leaves and tree hashes of events `SEQ` and later only"},
			&cli.StringFlag{Name: "against", Usage: "check a checkpoint saved earlier (`FILE`, - for stdin): signed by the log's key, consistent with today's tree"},
			&cli.IntFlag{Name: "max-problems", Value: 200, Usage: "list at most N problems (the rest are counted)"},
			&cli.StringFlag{Name: "scratch", Usage: "make the scratch store under `DIR` (default: the ledger directory, else the OS temp directory)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress bar (as --no-progress)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("audit takes no arguments")
			}
			opts := ledger.AuditOptions{MaxProblems: c.Int("max-problems"), ScratchDir: c.String("scratch")}
			if opts.MaxProblems < 0 {
				return usageErrorf("--max-problems %d: must not be negative", opts.MaxProblems)
			}
			if c.IsSet("from") {
				opts.From = c.Int64("from")
				if opts.From < 0 {
					return usageErrorf("--from %d: must not be negative", opts.From)
				}
			}
			// The ledger is opened before --against is read, so that a
			// usage error (a bad --wait, no ledger) is reported as one
			// (exit 2) whatever the file holds.
			l, err := openWith(c, e, ledger.Options{ReadOnly: true, AllowDamaged: true})
			if err != nil {
				return err
			}
			defer closeLedger(l)
			if name := c.String("against"); name != "" {
				note, err := readCheckpointFile(name, e.stdin)
				if err != nil {
					return exitf(exitMalformed, "--against %s: %v", name, err)
				}
				opts.Against, opts.AgainstOnly = note, !c.IsSet("from")
			}
			start := time.Now()
			var bar *progress
			if !c.Bool("quiet") && !opts.AgainstOnly {
				bar = e.newProgress("audit", "events", l.Size())
				opts.Progress = func(done, _ int64) { bar.set(done) }
			}
			var rep *ledger.AuditReport
			err = withRebuildGC(func() (err error) {
				rep, err = audit.Run(c.Context, l, opts)
				return err
			})
			bar.done()
			switch {
			case errors.Is(err, ledger.ErrAuditFrom):
				return usageErrorf("--from %d: the ledger holds %d events", opts.From, l.Size())
			case errors.Is(err, context.Canceled):
				return exitf(exitInternal, "audit interrupted")
			case err != nil:
				return exitf(exitInternal, "audit: %w", err)
			}
			elapsed := time.Since(start)
			if c.Bool("json") {
				if err := writeJSONLine(e.stdout, auditReport(c.String("dir"), rep, l.Damage() != nil, opts.AgainstOnly, elapsed)); err != nil {
					return err
				}
			} else {
				printAudit(e.stdout, e.painter(e.stdout), c.String("dir"), rep, opts.AgainstOnly, elapsed)
			}
			if !rep.OK() {
				return &exitError{code: exitInvalid}
			}
			return nil
		},
	}
}

// readCheckpointFile reads a saved signed checkpoint and checks that it
// parses (its signature is the audit's to check).
func readCheckpointFile(name string, stdin io.Reader) ([]byte, error) {
	note, err := loadBounded(name, stdin, maxCheckpointFile)
	if err != nil {
		return nil, err
	}
	text, _, ok := bytes.Cut(note, []byte("\n\n"))
	if !ok {
		return nil, errors.New("not a signed checkpoint: no blank line before its signatures")
	}
	if _, err := proof.ParseCheckpoint(string(text) + "\n"); err != nil {
		return nil, err
	}
	return note, nil
}

type auditAgainstJSON struct {
	Size       int64  `json:"size"`
	Root       string `json:"root"`
	Verified   bool   `json:"verified"`
	Consistent bool   `json:"consistent"`
	Method     string `json:"method"`
}

type auditReportJSON struct {
	Dir          string               `json:"dir"`
	OK           bool                 `json:"ok"`
	Events       int64                `json:"events"`
	From         int64                `json:"from"`
	Checked      int64                `json:"checked"`
	Checkpoints  int64                `json:"checkpoints"`
	Root         string               `json:"root"`
	Damaged      bool                 `json:"damaged"`
	Verified     int64                `json:"signatures_verified"`
	Unsigned     int64                `json:"unsigned"`
	Unverifiable int64                `json:"not_verifiable"`
	Reasons      []ledger.ReasonCount `json:"not_verifiable_reasons"`
	Entries      int64                `json:"entries_compared"`
	Projections  int64                `json:"projections_compared"`
	Against      *auditAgainstJSON    `json:"against"`
	Problems     []ledger.Problem     `json:"problems"`
	Omitted      int64                `json:"omitted"`
	Seconds      float64              `json:"seconds"`
}

func auditReport(dir string, rep *ledger.AuditReport, damaged, againstOnly bool, elapsed time.Duration) auditReportJSON {
	j := auditReportJSON{Dir: dir, OK: rep.OK(), Events: rep.Events, From: rep.From, Checked: rep.Checked,
		Checkpoints: rep.Checkpoints, Damaged: damaged, Verified: rep.Verified, Unsigned: rep.Unsigned,
		Unverifiable: rep.Unverifiable, Reasons: rep.UnverifiableReasons, Entries: rep.Entries,
		Projections: rep.Projections, Problems: rep.Problems, Omitted: rep.Omitted, Seconds: round4(elapsed.Seconds())}
	if !againstOnly {
		j.Root = b64(rep.Root[:])
	}
	if j.Reasons == nil {
		j.Reasons = []ledger.ReasonCount{}
	}
	if j.Problems == nil {
		j.Problems = []ledger.Problem{}
	}
	if a := rep.Against; a != nil {
		j.Against = &auditAgainstJSON{Size: a.Size, Root: b64(a.Root[:]), Verified: a.Verified, Consistent: a.Consistent, Method: a.Method}
	}
	return j
}

// printAudit writes the report for people: a verdict line, the problems,
// and what was checked.
func printAudit(w io.Writer, paint painter, dir string, rep *ledger.AuditReport, againstOnly bool, elapsed time.Duration) {
	took := elapsed.Round(time.Millisecond)
	if againstOnly {
		a := rep.Against
		if rep.OK() {
			_, _ = fmt.Fprintf(w, "%s: the saved checkpoint (size %s, root %s) is signed by the log's key and today's tree of %s events extends it (%s) (%s)\n",
				dir, thousands(a.Size), b64(a.Root[:]), thousands(rep.Events), a.Method, took)
			return
		}
		printProblems(w, paint, dir, rep)
		return
	}
	if rep.OK() {
		events := thousands(rep.Events) + " events"
		if rep.From > 0 {
			events = fmt.Sprintf("%s events (from event %s: %s checked)", thousands(rep.Events), thousands(rep.From), thousands(rep.Checked))
		}
		_, _ = fmt.Fprintf(w, "%s: %s: %s, %s signed checkpoints agree with the tree (root %s); documents, leaves and indexes check out (%s)\n",
			dir, paint.paint(toneGood, "sound"), events, thousands(rep.Checkpoints), b64(rep.Root[:]), took)
	} else {
		printProblems(w, paint, dir, rep)
	}
	sig := fmt.Sprintf("%s verified, %s not verifiable", thousands(rep.Verified), thousands(rep.Unverifiable))
	if len(rep.UnverifiableReasons) > 0 {
		var rs []string
		for _, r := range rep.UnverifiableReasons {
			rs = append(rs, fmt.Sprintf("%s: %s", r.Reason, thousands(r.Count)))
		}
		sig += " (" + strings.Join(rs, "; ") + ")"
	}
	_, _ = fmt.Fprintf(w, "  signatures  %s, %s unsigned\n", sig, thousands(rep.Unsigned))
	_, _ = fmt.Fprintf(w, "  compared    %s index entries, %s projection entries\n", thousands(rep.Entries), thousands(rep.Projections))
	if a := rep.Against; a != nil {
		state := "NOT consistent with today's tree"
		if a.Consistent {
			state = "consistent with today's tree (" + a.Method + ")"
		}
		signed := "signed by the log's key"
		if !a.Verified {
			signed = "NOT signed by the log's key"
		}
		_, _ = fmt.Fprintf(w, "  saved       checkpoint of size %s (root %s): %s, %s\n", thousands(a.Size), b64(a.Root[:]), signed, state)
	}
}

func printProblems(w io.Writer, paint painter, dir string, rep *ledger.AuditReport) {
	_, _ = fmt.Fprintf(w, "%s: %s in %s events:\n", dir, paint.paint(toneBad, fmt.Sprintf("%d problem(s)", int64(len(rep.Problems))+rep.Omitted)), thousands(rep.Events))
	for _, p := range rep.Problems {
		_, _ = fmt.Fprintf(w, "  %s\n", p)
	}
	if rep.Omitted > 0 {
		_, _ = fmt.Fprintf(w, "  … and %d more\n", rep.Omitted)
	}
}

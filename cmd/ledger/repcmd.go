package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
)

func reputationCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "reputation",
		Usage:     "reputation of agents (or, with --signers, of verifiers) from their VRF receipts",
		ArgsUsage: "[AGENT]",
		Description: "With AGENT, prints that agent's receipts (pass, fail, partial, error), first and last seen,\n" +
			"score and confidence, and its per-task-type breakdown; without, ranks every agent by score.\n" +
			"An agent is a receipt's agent_id, else its chain (named by the chain's first receipt), else\n" +
			"its signer. The score is Bayesian with exponential time decay: each receipt weighs 1 for\n" +
			"pass, passed/total for partial, 0 for fail (error receipts judge the verifier and are not\n" +
			"weighed), halving every 30 days, with a prior of 3 observations at 0.67. Confidence grows\n" +
			"with the decayed number of observations (0.5 at 10). --since counts receipts of T's UTC day\n" +
			"and later; the task-type breakdown is always all-time. Scores are evaluated at --at.\n" +
			"The page of one agent also shows its refused appends (replays, conflicts and other reasons), all\n" +
			"time, from the refusal journal's counters: they are not derived from the log (see ledger refusals);\n" +
			"--json has them as \"refusal_journal\": {\"replay\": N, \"conflict\": N, ...}, on ranking lines too.",
		Flags: []cli.Flag{
			dirFlag(),
			sinceFlag("receipts timed"),
			&cli.StringFlag{Name: "at", Usage: "evaluate decayed scores at T (default now)"},
			&cli.BoolFlag{Name: "signers", Usage: "rank (or show) signers, the verifiers that signed the receipts, instead of agents"},
			&cli.IntFlag{Name: "limit", Usage: "show at most N of the ranking (0: all)"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON: one object, or one per ranked subject per line"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErrorf("reputation takes at most one AGENT")
			}
			now := time.Now()
			at := now
			if s := c.String("at"); s != "" {
				t, err := ledger.ParseTime(s, now)
				if err != nil {
					return usageErrorf("--at: %v", err)
				}
				at = t.UTC()
			}
			since, _, err := parseWindow(c, now)
			if err != nil {
				return err
			}
			if c.Int("limit") < 0 {
				return usageErrorf("--limit must not be negative")
			}
			l, snap, err := openQuery(c, e)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			defer snap.Close()
			what := "agent"
			if c.Bool("signers") {
				what = "signer"
			}
			if c.NArg() == 1 {
				return showReputation(e, snap, what, c.Args().First(), since, at, c.Bool("json"))
			}
			var reps []index.Reputation
			if what == "signer" {
				reps, err = index.Signers(snap, since, at)
			} else {
				reps, err = index.Agents(snap, since, at)
			}
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			if n := c.Int("limit"); n > 0 && len(reps) > n {
				reps = reps[:n]
			}
			if c.Bool("json") {
				for i, r := range reps {
					j := toRepJSON(what, i+1, r, at)
					if j.RefusalJournal, err = journalCounts(snap, r.Subject); err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if err := writeJSONLine(e.stdout, j); err != nil {
						return err
					}
				}
				return nil
			}
			printRanking(e.stdout, what, reps, since, at)
			return nil
		},
	}
}

// repJSON is the --json shape of one reputation.
type repJSON struct {
	Rank       int     `json:"rank,omitempty"`
	Agent      string  `json:"agent,omitempty"`
	Signer     string  `json:"signer,omitempty"`
	TaskType   string  `json:"task_type,omitempty"`
	Score      float64 `json:"score"`
	Confidence float64 `json:"confidence"`
	// Effective is the decayed number of observations, prior included.
	Effective float64   `json:"effective_observations"`
	Receipts  int64     `json:"receipts"`
	Pass      int64     `json:"pass"`
	Fail      int64     `json:"fail"`
	Partial   int64     `json:"partial"`
	Error     int64     `json:"error"`
	FirstSeen string    `json:"first_seen,omitempty"`
	LastSeen  string    `json:"last_seen,omitempty"`
	At        string    `json:"at,omitempty"`
	TaskTypes []repJSON `json:"task_types,omitempty"`
	// RefusalJournal is what the refusal journal counted of the agent's
	// (or signer's) refused appends, by reason: not derived from the log.
	RefusalJournal refusalCounts `json:"refusal_journal,omitempty"`
}

func toRepJSON(what string, rank int, r index.Reputation, at time.Time) repJSON {
	j := repJSON{Rank: rank, Score: round4(r.Score(at)), Confidence: round4(r.Confidence(at)), Effective: round4(r.Effective(at)),
		Receipts: r.Receipts(), Pass: r.Pass, Fail: r.Fail, Partial: r.Partial, Error: r.Error,
		FirstSeen: formatTime(r.First), LastSeen: formatTime(r.Last)}
	switch what {
	case "agent":
		j.Agent = r.Subject
	case "signer":
		j.Signer = r.Subject
	default:
		j.TaskType = r.Subject
	}
	return j
}

// round4 rounds to 4 decimals, enough for a score and stable in output.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func showReputation(e *env, snap *ledger.Snapshot, what, subject string, since, at time.Time, asJSON bool) error {
	var (
		rep   index.Reputation
		types []index.Reputation
		err   error
	)
	if what == "signer" {
		rep, err = index.Signer(snap, subject, since)
	} else {
		var ar *index.AgentReport
		ar, err = index.Agent(snap, subject, since)
		if ar != nil {
			rep, types = ar.Reputation, ar.TaskTypes
		}
	}
	if errors.Is(err, ledger.ErrNotFound) {
		if since.IsZero() {
			return exitf(exitUsage, "%s %q: no receipts in the ledger (see ledger reputation for the ranking)", what, subject)
		}
		return exitf(exitUsage, "%s %q: no receipts since %s", what, subject, since.Format("2006-01-02"))
	}
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	refused, err := journalCounts(snap, subject)
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	if asJSON {
		j := toRepJSON(what, 0, rep, at)
		j.At = formatTime(at)
		j.RefusalJournal = refused
		for _, t := range types {
			j.TaskTypes = append(j.TaskTypes, toRepJSON("task_type", 0, t, at))
		}
		return writeJSONLine(e.stdout, j)
	}
	w := e.stdout
	rows := [][]string{
		{what, rep.Subject},
		{"receipts", fmt.Sprintf("%s: %s pass, %s fail, %s partial, %s error", thousands(rep.Receipts()),
			thousands(rep.Pass), thousands(rep.Fail), thousands(rep.Partial), thousands(rep.Error))},
		{"first seen", formatTime(rep.First)},
		{"last seen", formatTime(rep.Last)},
		{"score", fmt.Sprintf("%.4f at %s", rep.Score(at), formatTime(at))},
		{"confidence", fmt.Sprintf("%.4f (%.1f effective observations, the prior's 3 included)", rep.Confidence(at), rep.Effective(at))},
	}
	if !since.IsZero() {
		rows = append(rows, []string{"counted", "receipts of " + since.Format("2006-01-02") + " (UTC) and later"})
	}
	rows = append(rows, []string{"refused", refused.String() + " (all time, from the refusal journal, not derived from the log)"})
	printTable(w, "", nil, rows, nil)
	if len(types) > 0 {
		_, _ = fmt.Fprintln(w, "\ntask types (all time)")
		header := []string{"task type", "receipts", "pass", "fail", "partial", "error", "score", "confidence"}
		var out [][]string
		for _, t := range types {
			out = append(out, []string{t.Subject, thousands(t.Receipts()), thousands(t.Pass), thousands(t.Fail), thousands(t.Partial),
				thousands(t.Error), fmt.Sprintf("%.4f", t.Score(at)), fmt.Sprintf("%.4f", t.Confidence(at))})
		}
		printTable(w, "  ", header, out, []bool{false, true, true, true, true, true, true, true})
	}
	return nil
}

func printRanking(w io.Writer, what string, reps []index.Reputation, since, at time.Time) {
	plural := what + "s"
	if len(reps) == 0 {
		_, _ = fmt.Fprintf(w, "no %s with receipts\n", plural)
		return
	}
	scope := ""
	if !since.IsZero() {
		scope = ", receipts of " + since.Format("2006-01-02") + " and later"
	}
	_, _ = fmt.Fprintf(w, "%s ranked by reputation at %s (half-life 30 days, prior 3 observations at 0.67%s)\n",
		plural, formatTime(at), scope)
	header := []string{"rank", what, "score", "confidence", "receipts", "pass", "fail", "partial", "error", "last seen"}
	var out [][]string
	for i, r := range reps {
		out = append(out, []string{fmt.Sprint(i + 1), r.Subject, fmt.Sprintf("%.4f", r.Score(at)), fmt.Sprintf("%.4f", r.Confidence(at)),
			thousands(r.Receipts()), thousands(r.Pass), thousands(r.Fail), thousands(r.Partial), thousands(r.Error),
			r.Last.Format("2006-01-02")})
	}
	printTable(w, "", header, out, []bool{true, false, true, true, true, true, true, true, true, false})
}

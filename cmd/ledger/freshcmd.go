package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/registry"
)

// The freshness rules on the command line: append's --max-age and
// --max-skew, and `ledger freshness` for the ledger's setting. The rules
// themselves are admission's (package admit, freshness.go).

// freshnessMeaning says what the rules are, for the usage texts.
const freshnessMeaning = "A document whose own time (a receipt's verified_at, an attestation's attestation_chain.timestamp,\n" +
	"a bundle's created_ns, a rollback's at; a specification has none and is never judged) is more than\n" +
	"max-age before its arrival, or more than max-skew after it, is refused with status stale (reason\n" +
	"code stale or future; exit 5, journaled and counted for its agent, --replay-ok does not excuse it).\n" +
	"The judgement comes after the identity check (a copy of a document in the ledger is a replay), and\n" +
	"against the arrival time the append stamps. An import never applies the rules, and neither a\n" +
	"rebuild nor the audit re-judges an event."

// durationHelp is how a freshness limit is written.
const durationHelp = "a Go duration (720h, 5m, 1h30m) or whole days or weeks (30d, 2w); 0 is no limit"

// freshnessFlags are append's --max-age and --max-skew.
func freshnessFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-age", Usage: "refuse documents whose own time is more than D before their arrival, for this call in place of the ledger's setting (ledger freshness); D is " + durationHelp},
		&cli.StringFlag{Name: "max-skew", Usage: "refuse documents whose own time is more than D after their arrival, for this call in place of the ledger's setting; D as for --max-age"},
	}
}

// freshnessOptions reads --max-age and --max-skew into opts: each one
// given replaces the ledger's setting of that name for the call.
func freshnessOptions(c *cli.Context, opts *admit.Options) error {
	for _, f := range []struct {
		name string
		dst  **time.Duration
	}{{"max-age", &opts.MaxAge}, {"max-skew", &opts.MaxSkew}} {
		if !c.IsSet(f.name) {
			continue
		}
		d, err := registry.ParseDuration(c.String(f.name))
		if err != nil {
			return usageErrorf("--%s: %v", f.name, err)
		}
		*f.dst = &d
	}
	return nil
}

// freshnessJSON is the --json shape of the freshness setting: each limit
// as a Go duration and in seconds, null when there is none.
type freshnessJSON struct {
	MaxAge         *string  `json:"max_age"`
	MaxAgeSeconds  *float64 `json:"max_age_seconds"`
	MaxSkew        *string  `json:"max_skew"`
	MaxSkewSeconds *float64 `json:"max_skew_seconds"`
}

func toFreshnessJSON(f registry.Freshness) freshnessJSON {
	var j freshnessJSON
	set := func(d time.Duration, s **string, secs **float64) {
		if d == 0 {
			return
		}
		str, sec := registry.FormatDuration(d), d.Seconds()
		*s, *secs = &str, &sec
	}
	set(f.MaxAge, &j.MaxAge, &j.MaxAgeSeconds)
	set(f.MaxSkew, &j.MaxSkew, &j.MaxSkewSeconds)
	return j
}

// writeFreshness prints the setting: one JSON object, or two lines.
func writeFreshness(e *env, asJSON bool, f registry.Freshness) error {
	if asJSON {
		return writeJSONLine(e.stdout, toFreshnessJSON(f))
	}
	show := func(d time.Duration) string {
		if d == 0 {
			return "off"
		}
		return registry.FormatDuration(d)
	}
	_, _ = fmt.Fprintf(e.stdout, "max-age   %s\nmax-skew  %s\n", show(f.MaxAge), show(f.MaxSkew))
	return nil
}

func freshnessCommand(e *env) *cli.Command {
	jsonFlag := func() cli.Flag {
		return &cli.BoolFlag{Name: "json", Usage: "print the setting as one JSON object: max_age, max_age_seconds, max_skew, max_skew_seconds (null: no limit)"}
	}
	noArgs := func(c *cli.Context, what string) error {
		if c.NArg() != 0 {
			return usageErrorf("freshness %s takes no arguments", what)
		}
		return nil
	}
	return &cli.Command{
		Name:  "freshness",
		Usage: "manage the ledger's freshness rules: how old, or how far ahead of its arrival, an appended document's own time may be",
		Description: "The freshness rules are a ledger setting (freshness/max-age, freshness/max-skew); append's --max-age\n" +
			"and --max-skew replace either for one call. The setting travels in export archives and import\n" +
			"restores it.\n\n" + freshnessMeaning,
		Subcommands: []*cli.Command{
			{
				Name:  "set",
				Usage: "set max-age and/or max-skew (a limit not given is kept; 0 removes one)",
				Description: "Durations are " + durationHelp + ". Prints the setting as it now is\n" +
					"(as freshness show).",
				Flags: []cli.Flag{dirFlag(),
					&cli.StringFlag{Name: "max-age", Usage: "the oldest a document's own time may be at its arrival"},
					&cli.StringFlag{Name: "max-skew", Usage: "the furthest ahead of its arrival a document's own time may be"},
					jsonFlag()},
				Action: func(c *cli.Context) error {
					if err := noArgs(c, "set"); err != nil {
						return err
					}
					if !c.IsSet("max-age") && !c.IsSet("max-skew") {
						return usageErrorf("freshness set needs --max-age or --max-skew (or both)")
					}
					var opts admit.Options
					if err := freshnessOptions(c, &opts); err != nil {
						return err
					}
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					f, err := l.Registry().Freshness()
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if opts.MaxAge != nil {
						f.MaxAge = *opts.MaxAge
					}
					if opts.MaxSkew != nil {
						f.MaxSkew = *opts.MaxSkew
					}
					if err := l.Registry().SetFreshness(f); err != nil {
						return exitf(exitInternal, "%w", err)
					}
					return writeFreshness(e, c.Bool("json"), f)
				},
			},
			{
				Name:  "show",
				Usage: "print the ledger's freshness rules",
				Description: "Text: two lines, max-age and max-skew, each a duration or off. --json: one object\n" +
					"{\"max_age\", \"max_age_seconds\", \"max_skew\", \"max_skew_seconds\"}, null where there is no limit.",
				Flags: []cli.Flag{dirFlag(), jsonFlag()},
				Action: func(c *cli.Context) error {
					if err := noArgs(c, "show"); err != nil {
						return err
					}
					l, err := openLedger(c, e, true)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					f, err := l.Registry().Freshness()
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					return writeFreshness(e, c.Bool("json"), f)
				},
			},
			{
				Name:        "clear",
				Usage:       "remove both freshness rules: append admits documents whatever their time",
				Description: "Prints the setting as it now is (as freshness show).",
				Flags:       []cli.Flag{dirFlag(), jsonFlag()},
				Action: func(c *cli.Context) error {
					if err := noArgs(c, "clear"); err != nil {
						return err
					}
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					if err := l.Registry().SetFreshness(registry.Freshness{}); err != nil {
						return exitf(exitInternal, "%w", err)
					}
					return writeFreshness(e, c.Bool("json"), registry.Freshness{})
				},
			},
		},
	}
}

// logSummaryJSON is the --json shape of `log --summary`: the events the
// filters select in the window, by kind, and the refusal journal's
// records in the window (by reason code; stale counts the records of
// status stale, reasons stale and future). The journal is not evidence:
// its counts come from its records, which it keeps only for the newest
// refusals (ledger refusals --keep).
type logSummaryJSON struct {
	Since    *string          `json:"since"`
	Until    *string          `json:"until"`
	Events   int64            `json:"events"`
	ByKind   map[string]int64 `json:"by_kind"`
	Refused  int64            `json:"refused"`
	ByReason map[string]int64 `json:"refused_by_reason"`
	Stale    int64            `json:"stale"`
}

// logSummary prints `log --summary`: it counts the events q selects and
// the refusal journal's records in q's window (of q's kind, and for
// --agent of that agent as the journal names it).
func logSummary(c *cli.Context, e *env, l *admit.Ledger, q ledger.Query) error {
	if q.Limit != 0 {
		return usageErrorf("--summary counts every event in the window: it takes no --limit")
	}
	s := logSummaryJSON{ByKind: map[string]int64{}, ByReason: map[string]int64{}}
	if !q.Since.IsZero() {
		t := formatTime(q.Since)
		s.Since = &t
	}
	if !q.Until.IsZero() {
		t := formatTime(q.Until)
		s.Until = &t
	}
	err := l.Log(c.Context, q, func(ev *ledger.Event) (bool, error) {
		s.Events++
		s.ByKind[string(ev.Kind)]++
		return true, nil
	})
	if err != nil {
		return staleErr(err)
	}
	rq := ledger.RefusalQuery{Since: q.Since, Until: q.Until, Agent: c.String("agent")}
	err = l.Refusals(c.Context, rq, func(r *ledger.RefusalRecord) (bool, error) {
		if q.Kind != "" && r.Kind != q.Kind {
			return true, nil
		}
		s.Refused++
		s.ByReason[r.Reason]++
		if r.Status == ledger.StatusStale {
			s.Stale++
		}
		return true, nil
	})
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	if c.Bool("json") {
		return writeJSONLine(e.stdout, s)
	}
	window := "all time"
	switch {
	case s.Since != nil && s.Until != nil:
		window = *s.Since + " to " + *s.Until
	case s.Since != nil:
		window = "since " + *s.Since
	case s.Until != nil:
		window = "until " + *s.Until
	}
	_, _ = fmt.Fprintf(e.stdout, "window    %s\n", window)
	_, _ = fmt.Fprintf(e.stdout, "events    %s%s\n", thousands(s.Events), countsText(s.ByKind, nil))
	_, _ = fmt.Fprintf(e.stdout, "refused   %s in the refusal journal (not evidence)%s\n", thousands(s.Refused), countsText(s.ByReason, ledger.RefusalReasons))
	_, _ = fmt.Fprintf(e.stdout, "stale     %s (too old or too far ahead of arrival: ledger freshness)\n", thousands(s.Stale))
	return nil
}

// countsText writes non-zero counts as ": vrf 3, rvww 2", in order (or
// by name when order is nil).
func countsText(m map[string]int64, order []string) string {
	if order == nil {
		for k := range m {
			order = append(order, k)
		}
		sort.Strings(order)
	}
	out := ""
	for _, k := range order {
		if n := m[k]; n > 0 {
			if out != "" {
				out += ", "
			}
			out += k + " " + thousands(n)
		}
	}
	if out == "" {
		return ""
	}
	return ": " + out
}

package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/scorecard"
)

// exitNotAccepted is scorecard's exit code when an acceptance criterion of
// ADR-035 section 4.1 is not met.
const exitNotAccepted = 6

// openQuery opens the ledger read-only for a query of its projections and
// refuses projections that an interrupted rebuild left incomplete.
func openQuery(c *cli.Context, e *env) (*admit.Ledger, *ledger.Snapshot, error) {
	l, err := openLedger(c, e, true)
	if err != nil {
		return nil, nil, err
	}
	if l.Stale() {
		closeLedger(l)
		return nil, nil, exitf(exitInternal, "%v: run ledger rebuild", ledger.ErrStale)
	}
	return l, l.Snapshot(), nil
}

func policyFilterFlag() cli.Flag {
	return &cli.StringFlag{Name: "policy", Usage: "only bundles under this policy: 16-hex hash or name (restricted, approved, autonomous, or a registered policy's)"}
}

func modeFilterFlag() cli.Flag {
	return &cli.StringFlag{Name: "mode", Usage: "only bundles of this governance mode: restricted, approved, autonomous or 0..255"}
}

func sinceFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "since", Usage: "only " + what + " at or after T (date, RFC 3339, or 24h/7d/2w back)"}
}

func untilFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "until", Usage: "only " + what + " before T"}
}

// resolvePolicy reads --policy (registry.ResolvePolicy).
func resolvePolicy(l *admit.Ledger, arg string) ([]byte, string, error) {
	if arg == "" {
		return nil, "", nil
	}
	h, label, err := l.Registry().ResolvePolicy(arg)
	switch {
	case errors.Is(err, registry.ErrUnknownPolicy):
		return nil, "", usageErrorf("--policy: %v (see ledger policy list)", err)
	case errors.Is(err, registry.ErrAmbiguous):
		return nil, "", usageErrorf("--policy: %v", err)
	case err != nil:
		return nil, "", exitf(exitInternal, "%w", err)
	}
	return h, label, nil
}

// resolveMode reads --mode: restricted, approved, autonomous, or a mode
// byte 0..255; -1 when absent.
func resolveMode(arg string) (int, error) {
	if arg == "" {
		return -1, nil
	}
	if m, ok := governance.ParseMode(arg); ok {
		return int(m), nil
	}
	if n, err := strconv.Atoi(arg); err == nil && n >= 0 && n <= 255 {
		return n, nil
	}
	return 0, usageErrorf("--mode %q: want restricted, approved, autonomous or a number 0..255", arg)
}

func scorecardCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "scorecard",
		Usage: "ADR-035 scorecard of the witness bundles, and its acceptance criteria",
		Description: "Prints every metric of ADR-035 section 4 over the witness bundles created in the window\n" +
			"(by each bundle's created_ns), with the reference implementation's arithmetic, then the\n" +
			"acceptance criteria of section 4.1, each met or not. policy_violations == 0 is not met while\n" +
			"any bundle names a policy the ledger does not know (policy_unknown): its trace was never\n" +
			"checked. Rollbacks are counted by their own time; under --policy or --mode, those that follow\n" +
			"a bundle of that policy or mode (the task's latest bundle appended before the rollback).\n\n" +
			"The thresholds are ADR-035's unless --min-solve-rate, --max-violations, --min-evidence-coverage\n" +
			"or --min-rollback-correctness overrides them; the output names every overridden threshold\n" +
			"(JSON: each criterion's threshold, default and overridden, and the top-level overridden list).\n" +
			"--json adds status: accepted, not_accepted or empty.\n\n" +
			"Exit code 0 when every criterion is met, 6 when one is not, 9 when the window holds no\n" +
			"witness bundles (nothing to judge), so CI can gate on it; 2 on a usage error, 1 on an\n" +
			"internal error.",
		Flags: append([]cli.Flag{
			dirFlag(),
			sinceFlag("bundles created"),
			untilFlag("bundles created"),
			policyFilterFlag(),
			modeFilterFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the scorecard as one JSON object keyed by the metric names, with criteria, status and overridden"},
		}, thresholdFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("scorecard takes no arguments")
			}
			since, until, err := parseWindow(c, time.Now())
			if err != nil {
				return err
			}
			mode, err := resolveMode(c.String("mode"))
			if err != nil {
				return err
			}
			criteria, err := readCriteria(c)
			if err != nil {
				return err
			}
			l, snap, err := openQuery(c, e)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			defer snap.Close()
			policy, policyLabel, err := resolvePolicy(l, c.String("policy"))
			if err != nil {
				return err
			}
			w := scorecard.Window{Since: since, Until: until, Filter: index.Filter{Policy: policy, Mode: mode}}
			rep, err := scorecard.Build(snap, w, criteria)
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			if c.Bool("json") {
				err = writeJSONLine(e.stdout, toScorecardJSON(rep))
			} else {
				printScorecard(e.stdout, rep, policyLabel, c.String("mode"), e.painter(e.stdout))
			}
			if err != nil {
				return err
			}
			switch rep.Status {
			case scorecard.Empty:
				return &exitError{code: exitEmptyWindow}
			case scorecard.NotAccepted:
				return &exitError{code: exitNotAccepted}
			}
			return nil
		},
	}
}

// scorecardJSON is the --json shape of a scorecard: the window, the
// metrics under their ADR-035 names, the criteria and the verdict.
type scorecardJSON struct {
	Since  *string `json:"since"`
	Until  *string `json:"until"`
	Policy *string `json:"policy"`
	Mode   *int    `json:"mode"`
	scorecard.Metrics
	Criteria []scorecard.Criterion `json:"criteria"`
	Accepted bool                  `json:"accepted"`
	// Status is accepted, not_accepted or empty (no bundles: nothing
	// judged, exit code 9).
	Status scorecard.Status `json:"status"`
	// Overridden lists the metrics whose thresholds are not ADR-035's.
	Overridden []string `json:"overridden"`
}

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

func toScorecardJSON(rep *scorecard.Report) scorecardJSON {
	j := scorecardJSON{Since: optTime(rep.Window.Since), Until: optTime(rep.Window.Until), Metrics: rep.Metrics,
		Criteria: rep.Criteria, Accepted: rep.Accepted, Status: rep.Status, Overridden: rep.Thresholds.Overridden()}
	if p := rep.Window.Filter.Policy; p != nil {
		s := hex.EncodeToString(p)
		j.Policy = &s
	}
	if m := rep.Window.Filter.Mode; m >= 0 {
		j.Mode = &m
	}
	return j
}

// windowText describes a window of bundle creation times.
func windowText(since, until time.Time) string {
	switch {
	case since.IsZero() && until.IsZero():
		return "all time"
	case since.IsZero():
		return "before " + formatTime(until)
	case until.IsZero():
		return "from " + formatTime(since)
	}
	return formatTime(since) + " to " + formatTime(until)
}

// filterScope describes a --policy/--mode filter for a trend ("" for
// none).
func filterScope(policyLabel, modeArg string) string {
	var parts []string
	if policyLabel != "" {
		parts = append(parts, "policy "+policyLabel)
	}
	if modeArg != "" {
		parts = append(parts, "mode "+modeArg)
	}
	return strings.Join(parts, ", ")
}

func printScorecard(w io.Writer, rep *scorecard.Report, policyLabel, modeArg string, paint painter) {
	m := rep.Metrics
	scope := "every policy"
	if policyLabel != "" {
		scope = "policy " + policyLabel
	}
	if modeArg != "" {
		scope += ", mode " + modeArg
	} else {
		scope += ", every mode"
	}
	_, _ = fmt.Fprintf(w, "scorecard of the witness bundles created %s (%s)\n", windowText(rep.Window.Since, rep.Window.Until), scope)
	if rep.Status == scorecard.Empty {
		printEmptyScorecard(w, rep)
		return
	}
	rows := [][]string{
		{"total_tasks", thousands(m.TotalTasks), ""},
		{"solved", thousands(m.Solved), ""},
		{"failed", thousands(m.Failed), ""},
		{"skipped", thousands(m.Skipped), ""},
		{"errors", thousands(m.Errors), "errored or unknown outcome"},
		{"policy_violations", thousands(m.PolicyViolations), ""},
		{"policy_unknown", thousands(m.PolicyUnknown), "bundles under a policy the ledger does not know: traces not checked"},
		{"rollback_count", thousands(m.RollbackCount), fmt.Sprintf("%d restored a clean state", m.RollbacksRestoredClean)},
		{"total_cost_microdollars", thousands(m.TotalCostMicrodollars), scorecard.Dollars(m.TotalCostMicrodollars)},
		{"median_latency_ms", thousands(int64(m.MedianLatencyMS)), ""},
		{"p95_latency_ms", thousands(int64(m.P95LatencyMS)), ""},
		{"total_tokens", thousands(m.TotalTokens), ""},
		{"total_retries", thousands(m.TotalRetries), ""},
		{"evidence_coverage", fmt.Sprintf("%.4f", m.EvidenceCoverage), fmt.Sprintf("%d of %d solved have SPEC, DIFF and TEST_LOG", m.EvidenceCompleteSolved, m.Solved)},
		{"cost_per_solve", thousands(m.CostPerSolve), scorecard.Dollars(m.CostPerSolve) + " (all bundles' cost / solved)"},
		{"solve_rate", fmt.Sprintf("%.4f", m.SolveRate), ""},
	}
	printTable(w, "  ", nil, rows, []bool{false, true, false})
	over := rep.Thresholds.Overridden()
	_, _ = fmt.Fprintf(w, "\nacceptance criteria (ADR-035 section 4.1%s)\n", overriddenNote(over))
	var crit [][]string
	unmet := 0
	for _, cr := range rep.Criteria {
		verdict := paint.paint(toneGood, "met")
		if !cr.Met {
			verdict = paint.paint(toneBad, "NOT MET")
			unmet++
		}
		value := strconv.FormatFloat(cr.Value, 'f', 4, 64)
		switch cr.Metric {
		case scorecard.MetricPolicyViolations:
			value = strconv.FormatFloat(cr.Value, 'f', 0, 64)
		case scorecard.MetricRollbackCorrectness:
			value += fmt.Sprintf(" (%d/%d)", m.RollbacksRestoredClean, m.RollbackCount)
		}
		crit = append(crit, []string{cr.String(), value, verdict, criterionNote(cr)})
	}
	printTable(w, "  ", nil, crit, []bool{false, true, false, false})
	suffix := ""
	if len(over) > 0 {
		suffix = " (thresholds overridden: " + strings.Join(over, ", ") + ")"
	}
	if rep.Accepted {
		_, _ = fmt.Fprintf(w, "accepted: every criterion is met%s\n", suffix)
	} else {
		_, _ = fmt.Fprintf(w, "not accepted: %d of %d criteria not met%s (exit code %d)\n", unmet, len(rep.Criteria), suffix, exitNotAccepted)
	}
}

// overriddenNote says how many thresholds are not ADR-035's.
func overriddenNote(over []string) string {
	switch len(over) {
	case 0:
		return ""
	case 1:
		return "; 1 threshold overridden"
	}
	return fmt.Sprintf("; %d thresholds overridden", len(over))
}

// criterionNote is the last column of a criterion's line: the threshold
// overridden (and by which flag), then the reason.
func criterionNote(cr scorecard.Criterion) string {
	var parts []string
	if cr.Overridden {
		parts = append(parts, fmt.Sprintf("overridden by --%s (ADR-035: %s)", thresholdFlag[cr.Metric], cr.DefaultString()))
	}
	if cr.Reason != "" {
		parts = append(parts, cr.Reason)
	}
	return strings.Join(parts, "; ")
}

// printEmptyScorecard reports a window without witness bundles: there is
// nothing to judge.
func printEmptyScorecard(w io.Writer, rep *scorecard.Report) {
	_, _ = fmt.Fprintln(w, "  no witness bundles were created in this window")
	if n := rep.Metrics.RollbackCount; n == 1 {
		_, _ = fmt.Fprintln(w, "  (1 rollback record in the window, not judged without bundles)")
	} else if n > 1 {
		_, _ = fmt.Fprintf(w, "  (%d rollback records in the window, not judged without bundles)\n", n)
	}
	var crit []string
	for _, cr := range rep.Criteria {
		s := cr.String()
		if cr.Overridden {
			s += " (overridden)"
		}
		crit = append(crit, s)
	}
	_, _ = fmt.Fprintf(w, "\nacceptance criteria (ADR-035 section 4.1%s): not judged: %s\n", overriddenNote(rep.Thresholds.Overridden()), strings.Join(crit, ", "))
	_, _ = fmt.Fprintf(w, "empty: no witness bundles in the window, nothing to judge (exit code %d)\n", exitEmptyWindow)
}

func trendCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "trend",
		Usage: "ADR-035 cost-to-outcome trend per day, week or month, optionally plotted",
		Description: "Prints ADR-035 section 6's table over the witness bundles created in the window, one row per\n" +
			"UTC day, ISO week (Monday to Sunday) or calendar month: tasks, solved, solve rate, cost per\n" +
			"solve (cost of all the period's bundles / solved), tokens per solve, retries, and regressions\n" +
			"(distinct tasks that failed or errored in the period after a solve in an earlier period).\n" +
			"--since and --until clip the first and last periods (marked *). --policy and --mode keep only\n" +
			"the bundles of one policy or governance mode (as in scorecard); a regression then needs a\n" +
			"failure after a solve both under the filter. --plot writes a chart of cost per solve and\n" +
			"solve rate per period: SVG or PNG by the file name's extension; --plot - writes a PNG to standard output\n" +
			"instead of the table.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "by", Usage: "period: day, week or month", Value: "week"},
			sinceFlag("bundles created"),
			untilFlag("bundles created"),
			policyFilterFlag(),
			modeFilterFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per period per line"},
			&cli.StringFlag{Name: "plot", Usage: "write a chart of cost per solve and solve rate to `FILE` (.svg or .png; - writes a PNG to standard output instead of the table)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("trend takes no arguments")
			}
			g, err := scorecard.ParseGranularity(c.String("by"))
			if err != nil {
				return usageErrorf("--by: %v", err)
			}
			plotPath := c.String("plot")
			if plotPath == "-" && c.Bool("json") {
				return usageErrorf("trend: --json and --plot - would both write to standard output")
			}
			if plotPath != "" && plotPath != "-" {
				if _, err := scorecard.PlotFormat(plotPath); err != nil {
					return usageErrorf("--plot: %v", err)
				}
			}
			since, until, err := parseWindow(c, time.Now())
			if err != nil {
				return err
			}
			mode, err := resolveMode(c.String("mode"))
			if err != nil {
				return err
			}
			l, snap, err := openQuery(c, e)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			defer snap.Close()
			policy, policyLabel, err := resolvePolicy(l, c.String("policy"))
			if err != nil {
				return err
			}
			w := scorecard.Window{Since: since, Until: until, Filter: index.Filter{Policy: policy, Mode: mode}}
			rows, _, err := scorecard.Trend(snap, g, w)
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			switch {
			case c.Bool("json"):
				for _, r := range rows {
					if err := writeJSONLine(e.stdout, r); err != nil {
						return err
					}
				}
			case plotPath != "-":
				printTrend(e.stdout, rows, g, since, until, filterScope(policyLabel, c.String("mode")))
			}
			if plotPath == "" {
				return nil
			}
			if len(rows) == 0 {
				return usageErrorf("--plot: no witness bundles in the window, nothing to plot")
			}
			if plotPath == "-" {
				return scorecard.WritePlot(e.stdout, "png", rows, g, trendTitle(rows, g))
			}
			if err := scorecard.PlotFile(plotPath, rows, g, trendTitle(rows, g)); err != nil {
				return exitf(exitInternal, "%w", err)
			}
			if !c.Bool("json") {
				_, _ = fmt.Fprintf(e.stdout, "wrote the chart to %s\n", plotPath)
			}
			return nil
		},
	}
}

func trendTitle(rows []scorecard.Row, g scorecard.Granularity) string {
	var tasks int64
	for _, r := range rows {
		tasks += r.Tasks
	}
	span := rows[0].Period
	if len(rows) > 1 {
		span += " to " + rows[len(rows)-1].Period
	}
	return fmt.Sprintf("Cost to outcome by %s: %s, %s tasks", g, span, thousands(tasks))
}

// printTrend writes the trend's table; scope names the filter ("" for
// every bundle).
func printTrend(w io.Writer, rows []scorecard.Row, g scorecard.Granularity, since, until time.Time, scope string) {
	if scope != "" {
		scope = " (" + scope + ")"
	}
	if len(rows) == 0 {
		_, _ = fmt.Fprintf(w, "no witness bundles created %s%s\n", windowText(since, until), scope)
		return
	}
	_, _ = fmt.Fprintf(w, "cost to outcome by %s, witness bundles created %s (UTC)%s\n", g, windowText(rows[0].Start, rows[len(rows)-1].End), scope)
	header := []string{"period", "tasks", "solved", "solve rate", "cost/solve", "tokens/solve", "retries", "regressions"}
	var out [][]string
	partial := false
	for _, r := range rows {
		label := r.Period
		if r.Partial {
			label += "*"
			partial = true
		}
		rate, cost, tokens := "-", "-", "-"
		if r.Tasks > 0 {
			rate = fmt.Sprintf("%.1f%%", 100*r.SolveRate)
		}
		if r.Solved > 0 {
			cost, tokens = scorecard.Dollars(r.CostPerSolve), thousands(r.TokensPerSolve)
		}
		out = append(out, []string{label, thousands(r.Tasks), thousands(r.Solved), rate, cost, tokens, thousands(r.Retries), thousands(r.Regressions)})
	}
	printTable(w, "", header, out, []bool{false, true, true, true, true, true, true, true})
	if partial {
		_, _ = fmt.Fprintln(w, "* partial period: the window covers only part of it")
	}
}

// printTable writes rows in aligned columns (right-aligned where right
// says so), each line starting with indent; a nil header prints none.
// Trailing empty cells are dropped.
func printTable(w io.Writer, indent string, header []string, rows [][]string, right []bool) {
	all := rows
	if header != nil {
		all = append([][]string{header}, rows...)
	}
	var widths []int
	for _, r := range all {
		for i, cell := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(cell))
		}
	}
	for _, r := range all {
		last := len(r)
		for last > 0 && r[last-1] == "" {
			last--
		}
		var b strings.Builder
		b.WriteString(indent)
		for i, cell := range r[:last] {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-visibleWidth(cell))
			switch {
			case i < len(right) && right[i]:
				b.WriteString(pad + cell)
			case i == last-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
		}
		_, _ = fmt.Fprintln(w, b.String())
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

package scorecard

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/proofledger/ledger/index"
)

// Granularity is the length of a trend's periods. Periods are in UTC.
type Granularity int

// The granularities of a trend.
const (
	// Day periods are UTC calendar days, labelled 2026-01-05.
	Day Granularity = iota
	// Week periods are ISO 8601 weeks, Monday to Sunday, labelled with
	// their ISO year and week: 2026-W02.
	Week
	// Month periods are calendar months, labelled 2026-01.
	Month
)

// ParseGranularity reads "day", "week" or "month".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "day":
		return Day, nil
	case "week":
		return Week, nil
	case "month":
		return Month, nil
	}
	return 0, fmt.Errorf("period %q: want day, week or month", s)
}

// String returns "day", "week" or "month".
func (g Granularity) String() string {
	switch g {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return fmt.Sprintf("Granularity(%d)", int(g))
}

// Floor returns the start of the period that holds t.
func (g Granularity) Floor(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch g {
	case Week:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

// Next returns the start of the period after the one starting at start.
func (g Granularity) Next(start time.Time) time.Time {
	switch g {
	case Week:
		return start.AddDate(0, 0, 7)
	case Month:
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

// Label names the period starting at start.
func (g Granularity) Label(start time.Time) string {
	switch g {
	case Week:
		y, w := start.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	case Month:
		return start.Format("2006-01")
	}
	return start.Format("2006-01-02")
}

// Period is one period of a trend.
type Period struct {
	// Label names the period (Granularity.Label of Nominal).
	Label string
	// Nominal is the start of the whole period.
	Nominal time.Time
	// Start and End bound the part of the period inside the window:
	// [Start, End).
	Start, End time.Time
}

// Partial reports whether the window cuts the period short.
func (p Period) Partial(g Granularity) bool {
	return !p.Start.Equal(p.Nominal) || !p.End.Equal(g.Next(p.Nominal))
}

// Periods cuts [from, to) into periods, the first and last clipped to the
// window.
func (g Granularity) Periods(from, to time.Time) []Period {
	var out []Period
	for start := g.Floor(from); start.Before(to); start = g.Next(start) {
		p := Period{Label: g.Label(start), Nominal: start, Start: start, End: g.Next(start)}
		if p.Start.Before(from) {
			p.Start = from
		}
		if p.End.After(to) {
			p.End = to
		}
		out = append(out, p)
	}
	return out
}

// Row is one period of a cost-to-outcome trend (ADR-035 section 6).
type Row struct {
	Period  string    `json:"period"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Partial bool      `json:"partial"`
	Tasks   int64     `json:"tasks"`
	Solved  int64     `json:"solved"`
	// SolveRate is solved / tasks, as the scorecard computes it.
	SolveRate float32 `json:"solve_rate"`
	// CostMicrodollars is the cost of all the period's bundles;
	// CostPerSolve is that over solved (integer division, 0 when none).
	CostMicrodollars int64 `json:"cost_microdollars"`
	CostPerSolve     int64 `json:"cost_per_solve"`
	// Tokens is the period's tokens; TokensPerSolve is that over solved.
	Tokens         int64 `json:"tokens"`
	TokensPerSolve int64 `json:"tokens_per_solve"`
	Retries        int64 `json:"retries"`
	// Regressions counts the distinct tasks that failed or errored in the
	// period after a solve in an earlier period.
	Regressions int64 `json:"regressions"`
}

// Trend reports the bundles of w (created in [w.Since, w.Until), under
// w.Filter), cut into periods of g. Zero times leave the window open: it
// then starts with the period of the first bundle (of the filter) and ends
// with the period of the last, and periods are whole; a given Since or
// Until clips the first or last period (Partial). Periods without bundles
// inside the range are kept (with zeros), so that the rows are evenly
// spaced in time. It returns no rows when the window holds no bundle days.
//
// Regressions are counted per day: a task counts in a period when it
// failed or errored on one of the period's days after its first solve, and
// that first solve lies before the period's (nominal) start. Without a
// filter they come from the index's regression entries; under a policy or
// mode filter only the filter's bundles count (a task solved under another
// policy has not regressed under this one), so the bundles of the tasks
// that have regression entries in the window are read, from the first
// bundle to the window's end (see FilteredRegressions).
func Trend(r index.Reader, g Granularity, w Window) ([]Row, []Period, error) {
	first, last, ok, err := index.BundleDaysMatching(r, w.Filter)
	if err != nil {
		return nil, nil, fmt.Errorf("trend: %w", err)
	}
	if !ok {
		return nil, nil, nil
	}
	from, to := g.Floor(first.Start()), g.Next(g.Floor(last.Start()))
	if !w.Since.IsZero() && w.Since.After(from) {
		from = w.Since
	}
	if !w.Until.IsZero() && w.Until.Before(to) {
		to = w.Until
	}
	if !to.After(from) {
		return nil, nil, nil
	}
	periods := g.Periods(from, to)
	rows := make([]Row, len(periods))
	for i, p := range periods {
		t, err := index.Aggregate(r, p.Start, p.End, w.Filter)
		if err != nil {
			return nil, nil, fmt.Errorf("trend: period %s: %w", p.Label, err)
		}
		rows[i] = rowOf(p, g, t)
	}
	regs, err := index.Regressions(r, index.DayOf(from), lastDay(to)+1)
	if err != nil {
		return nil, nil, fmt.Errorf("trend: regressions: %w", err)
	}
	if w.filtered() {
		if regs, err = FilteredRegressions(r, w.Filter, regs, to); err != nil {
			return nil, nil, fmt.Errorf("trend: regressions: %w", err)
		}
	}
	for i, n := range CountRegressions(regs, periods) {
		rows[i].Regressions = n
	}
	return rows, periods, nil
}

// FilteredRegressions returns the regressions of the bundles that match f:
// for each task of entries (the index's regression entries of the days in
// question, which hold every task that can have one under f), the failed
// or errored bundles created before until that match f and follow a solve
// matching f, each with the task's first such solve. It reads the
// filter's bundles from the first to until, keeping only those tasks.
func FilteredRegressions(r index.Reader, f index.Filter, entries []index.Regression, until time.Time) ([]index.Regression, error) {
	type state struct {
		solved bool
		first  time.Time
	}
	tasks := map[string]*state{}
	days := map[index.Day]bool{}
	for _, e := range entries {
		tasks[e.Task] = &state{}
		days[e.Day] = true
	}
	if len(tasks) == 0 {
		return nil, nil
	}
	var out []index.Regression
	seen := map[index.Regression]bool{}
	err := index.Bundles(r, time.Time{}, until, f, func(b index.BundleRecord) error {
		st := tasks[b.Task]
		if st == nil {
			return nil
		}
		switch b.Outcome {
		case index.OutcomeSolved:
			if !st.solved {
				st.solved, st.first = true, b.Created
			}
		case index.OutcomeFailed, index.OutcomeError:
			day := index.DayOf(b.Created)
			if !st.solved || !st.first.Before(b.Created) || !days[day] {
				return nil
			}
			reg := index.Regression{Day: day, Task: b.Task, FirstSolved: st.first}
			if !seen[reg] {
				seen[reg] = true
				out = append(out, reg)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lastDay returns the day of the last instant before t.
func lastDay(t time.Time) index.Day { return index.DayOf(t.Add(-time.Nanosecond)) }

func rowOf(p Period, g Granularity, t *index.Totals) Row {
	row := Row{Period: p.Label, Start: p.Start, End: p.End, Partial: p.Partial(g),
		Tasks: t.Tasks(), Solved: t.Solved, CostMicrodollars: t.CostMicrodollars, Tokens: t.Tokens, Retries: t.Retries}
	if row.Tasks > 0 {
		row.SolveRate = float32(row.Solved) / float32(row.Tasks)
	}
	if row.Solved > 0 {
		row.CostPerSolve = row.CostMicrodollars / row.Solved
		row.TokensPerSolve = row.Tokens / row.Solved
	}
	return row
}

// CountRegressions counts, for each period, the distinct tasks with a
// regression entry on one of the period's days whose first solve is
// before the period's nominal start. Entries may come in any order.
func CountRegressions(entries []index.Regression, periods []Period) []int64 {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b index.Regression) int { return cmp.Compare(a.Day, b.Day) })
	out := make([]int64, len(periods))
	for i, p := range periods {
		from, to := index.DayOf(p.Start), lastDay(p.End)
		lo, _ := slices.BinarySearchFunc(sorted, from, func(e index.Regression, d index.Day) int { return cmp.Compare(e.Day, d) })
		tasks := map[string]bool{}
		for _, e := range sorted[lo:] {
			if e.Day > to {
				break
			}
			if e.FirstSolved.Before(p.Nominal) {
				tasks[e.Task] = true
			}
		}
		out[i] = int64(len(tasks))
	}
	return out
}

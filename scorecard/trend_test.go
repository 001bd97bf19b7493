package scorecard

import (
	"fmt"
	"testing"
	"time"

	"github.com/proofledger/ledger/index"
)

func date(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	panic("bad test time " + s)
}

func TestGranularity(t *testing.T) {
	for _, tc := range []struct {
		g           Granularity
		in          string
		floor, next string
		label       string
	}{
		{Day, "2026-01-07T13:14:15Z", "2026-01-07", "2026-01-08", "2026-01-07"},
		{Day, "2026-01-07T00:00:00Z", "2026-01-07", "2026-01-08", "2026-01-07"},
		// ISO weeks start on Monday; 2026-01-04 is a Sunday in week 2026-W01,
		// which starts on Monday 2025-12-29.
		{Week, "2026-01-04T23:59:59Z", "2025-12-29", "2026-01-05", "2026-W01"},
		{Week, "2026-01-05T00:00:00Z", "2026-01-05", "2026-01-12", "2026-W02"},
		{Week, "2026-01-07T10:00:00Z", "2026-01-05", "2026-01-12", "2026-W02"},
		// 2021-01-03 (Sunday) belongs to ISO week 2020-W53.
		{Week, "2021-01-03T12:00:00Z", "2020-12-28", "2021-01-04", "2020-W53"},
		{Week, "2026-12-31T12:00:00Z", "2026-12-28", "2027-01-04", "2026-W53"},
		{Month, "2026-01-31T23:00:00Z", "2026-01-01", "2026-02-01", "2026-01"},
		{Month, "2025-12-15T00:00:00Z", "2025-12-01", "2026-01-01", "2025-12"},
		{Month, "2024-02-29T12:00:00Z", "2024-02-01", "2024-03-01", "2024-02"},
		// A time in another zone is placed by its UTC instant.
		{Day, "2026-01-08T01:00:00+03:00", "2026-01-07", "2026-01-08", "2026-01-07"},
	} {
		name := fmt.Sprintf("%s/%s", tc.g, tc.in)
		in, err := time.Parse(time.RFC3339, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		f := tc.g.Floor(in)
		if !f.Equal(date(tc.floor)) {
			t.Errorf("%s: floor %v, want %s", name, f, tc.floor)
		}
		if n := tc.g.Next(f); !n.Equal(date(tc.next)) {
			t.Errorf("%s: next %v, want %s", name, n, tc.next)
		}
		if l := tc.g.Label(f); l != tc.label {
			t.Errorf("%s: label %s, want %s", name, l, tc.label)
		}
	}
	for _, s := range []string{"day", "week", "month"} {
		g, err := ParseGranularity(s)
		if err != nil || g.String() != s {
			t.Errorf("ParseGranularity(%q) = %v, %v", s, g, err)
		}
	}
	if _, err := ParseGranularity("year"); err == nil {
		t.Error("ParseGranularity(year) did not fail")
	}
}

func TestPeriods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		g        Granularity
		from, to string
		want     []string // label [start, end) partial
	}{
		{"whole weeks", Week, "2026-01-05", "2026-01-19", []string{
			"2026-W02 2026-01-05 2026-01-12 false", "2026-W03 2026-01-12 2026-01-19 false"}},
		{"clipped weeks", Week, "2026-01-07T12:00:00Z", "2026-01-14", []string{
			"2026-W02 2026-01-07T12:00:00Z 2026-01-12 true", "2026-W03 2026-01-12 2026-01-14 true"}},
		{"within a day", Day, "2026-01-07T01:00:00Z", "2026-01-07T02:00:00Z", []string{
			"2026-01-07 2026-01-07T01:00:00Z 2026-01-07T02:00:00Z true"}},
		{"months across a year", Month, "2025-12-01", "2026-02-01", []string{
			"2025-12 2025-12-01 2026-01-01 false", "2026-01 2026-01-01 2026-02-01 false"}},
		{"empty", Day, "2026-01-07", "2026-01-07", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.g.Periods(date(tc.from), date(tc.to))
			if len(ps) != len(tc.want) {
				t.Fatalf("%d periods, want %d: %+v", len(ps), len(tc.want), ps)
			}
			for i, p := range ps {
				var w struct{ label, start, end, partial string }
				if _, err := fmt.Sscan(tc.want[i], &w.label, &w.start, &w.end, &w.partial); err != nil {
					t.Fatalf("want[%d] %q: %v", i, tc.want[i], err)
				}
				if p.Label != w.label || !p.Start.Equal(date(w.start)) || !p.End.Equal(date(w.end)) || fmt.Sprint(p.Partial(tc.g)) != w.partial {
					t.Errorf("period %d = %s %v %v partial %v, want %s", i, p.Label, p.Start, p.End, p.Partial(tc.g), tc.want[i])
				}
			}
		})
	}
}

func TestCountRegressions(t *testing.T) {
	day := func(s string) index.Day { return index.DayOf(date(s)) }
	periods := Week.Periods(date("2026-01-05"), date("2026-01-26")) // W02, W03, W04
	entries := []index.Regression{
		// Solved in W02, failed twice in W03 and once in W04: one regression
		// in each of W03 and W04.
		{Day: day("2026-01-13"), Task: "a", FirstSolved: date("2026-01-06T10:00:00Z")},
		{Day: day("2026-01-15"), Task: "a", FirstSolved: date("2026-01-06T10:00:00Z")},
		{Day: day("2026-01-20"), Task: "a", FirstSolved: date("2026-01-06T10:00:00Z")},
		// Solved and failed within W02: not a regression of W02.
		{Day: day("2026-01-08"), Task: "b", FirstSolved: date("2026-01-07T10:00:00Z")},
		// Solved on the Monday of W03 and failed that Friday: not a
		// regression of W03 by week (it is one by day).
		{Day: day("2026-01-16"), Task: "c", FirstSolved: date("2026-01-12T00:00:00Z")},
		// Solved before the window (W01), failed in W02.
		{Day: day("2026-01-05"), Task: "d", FirstSolved: date("2026-01-04T23:59:59Z")},
	}
	got := CountRegressions(entries, periods)
	want := []int64{1, 1, 1} // W02: d; W03: a; W04: a
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("by week: %v, want %v", got, want)
	}
	// Reversed input order gives the same counts.
	rev := make([]index.Regression, len(entries))
	for i, e := range entries {
		rev[len(entries)-1-i] = e
	}
	if got := CountRegressions(rev, periods); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reversed entries: %v, want %v", got, want)
	}
	days := Day.Periods(date("2026-01-12"), date("2026-01-17"))
	if got := CountRegressions(entries, days); fmt.Sprint(got) != "[0 1 0 1 1]" {
		t.Errorf("by day 01-12..01-16: %v, want [0 1 0 1 1]", got)
	}
}

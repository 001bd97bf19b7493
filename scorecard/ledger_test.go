package scorecard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// openLedger makes an empty ledger with the index projections.
func openLedger(t testing.TB) *admit.Ledger {
	t.Helper()
	dir := t.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "scorecard.test"}); err != nil {
		t.Fatal(err)
	}
	l, err := admit.Open(dir, ledger.Options{Projectors: []ledger.Projector{index.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	return l
}

// spec is a witness bundle to craft: one tool call that carries its cost,
// latency and tokens.
type spec struct {
	task     string
	at       string
	outcome  rvww.Outcome
	policy   governance.Policy
	cost     uint32
	latency  uint32
	tokens   uint32
	retries  uint16
	complete bool
}

func (s spec) encode(t testing.TB) []byte {
	t.Helper()
	id := sha256.Sum256([]byte(s.task))
	tool := "Read"
	b := &rvww.Bundle{
		Header: rvww.Header{TaskID: [16]byte(id[:16]), PolicyHash: s.policy.Hash(), CreatedNS: uint64(date(s.at).UnixNano()),
			Outcome: s.outcome, Mode: rvww.Mode(s.policy.Mode), RetryCount: s.retries},
		Calls: []rvww.ToolCall{{Action: tool, PolicyCheck: rvww.PolicyCheck(s.policy.Check(tool)),
			CostMicrodollars: s.cost, LatencyMS: s.latency, Tokens: s.tokens}},
		HasSpec: true, Spec: []byte("task " + s.task),
	}
	if s.complete {
		b.HasDiff, b.Diff, b.HasTestLog, b.TestLog = true, []byte("diff"), true, []byte("ok")
	}
	data, err := rvww.Encode(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func appendAll(t testing.TB, l *admit.Ledger, specs []spec) {
	t.Helper()
	var subs []admit.Submission
	for _, s := range specs {
		subs = append(subs, admit.Submission{Name: s.task + "@" + s.at, Data: s.encode(t)})
	}
	out, err := l.Append(context.Background(), subs, admit.Options{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
		}
	}
}

// TestTrendOfCraftedBundles checks every column of a trend, by day and by
// week, on bundles whose figures are known, including a regression that
// appears only when an earlier solve is appended after the failure.
func TestTrendOfCraftedBundles(t *testing.T) {
	l := openLedger(t)
	auto, restr := governance.Autonomous(), governance.Restricted()
	appendAll(t, l, []spec{
		{task: "A", at: "2026-01-06T10:00:00Z", outcome: rvww.OutcomeSolved, policy: auto, cost: 3000, latency: 100, tokens: 900, complete: true},
		{task: "A", at: "2026-01-13T10:00:00Z", outcome: rvww.OutcomeFailed, policy: auto, cost: 1000, latency: 300, tokens: 100, retries: 1},
		// B fails in W03 before its W02 solve is known.
		{task: "B", at: "2026-01-14T10:00:00Z", outcome: rvww.OutcomeFailed, policy: restr, cost: 500, latency: 50, tokens: 10},
		{task: "C", at: "2026-01-07T08:00:00Z", outcome: rvww.OutcomeFailed, policy: restr, cost: 200, latency: 20, tokens: 20},
		{task: "C", at: "2026-01-08T08:00:00Z", outcome: rvww.OutcomeSolved, policy: restr, cost: 400, latency: 40, tokens: 40, retries: 1, complete: true},
		{task: "C", at: "2026-01-09T08:00:00Z", outcome: rvww.OutcomeErrored, policy: restr, cost: 100, latency: 10, tokens: 5, retries: 2},
		{task: "D", at: "2026-01-13T23:59:59Z", outcome: rvww.OutcomeSkipped, policy: auto},
	})
	appendAll(t, l, []spec{
		{task: "B", at: "2026-01-07T12:00:00Z", outcome: rvww.OutcomeSolved, policy: restr, cost: 800, latency: 80, tokens: 400, complete: false},
	})
	snap := l.Snapshot()
	defer snap.Close()

	rows, _, err := Trend(snap, Week, Window{Filter: index.AnyBundle})
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Period: "2026-W02", Start: date("2026-01-05"), End: date("2026-01-12"), Tasks: 5, Solved: 3, SolveRate: 0.6,
			CostMicrodollars: 4500, CostPerSolve: 1500, Tokens: 1365, TokensPerSolve: 455, Retries: 3},
		{Period: "2026-W03", Start: date("2026-01-12"), End: date("2026-01-19"), Tasks: 3, Solved: 0,
			CostMicrodollars: 1500, Tokens: 110, Retries: 1, Regressions: 2},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("week row %d\n got %+v\nwant %+v", i, rows[i], want[i])
		}
	}

	// By day, C's error on 01-09 follows its solve of 01-08; clipping the
	// window keeps only the days inside it.
	rows, _, err = Trend(snap, Day, Window{Since: date("2026-01-08T12:00:00Z"), Until: date("2026-01-14"), Filter: index.AnyBundle})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Period+" "+itoa(r.Tasks)+" "+itoa(r.Regressions))
	}
	if s := strings.Join(got, ", "); s != "2026-01-08 0 0, 2026-01-09 1 1, 2026-01-10 0 0, 2026-01-11 0 0, 2026-01-12 0 0, 2026-01-13 2 1" {
		t.Errorf("by day: %s", s)
	}
	if !rows[0].Partial || rows[1].Partial {
		t.Errorf("partial flags: %v %v", rows[0].Partial, rows[1].Partial)
	}

	// The scorecard of W02 under the restricted policy, and of every bundle.
	rep, err := Build(snap, Window{Since: date("2026-01-05"), Until: date("2026-01-12"), Filter: index.Filter{Policy: hashOf(restr), Mode: -1}}, DefaultCriteria())
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	if m.TotalTasks != 4 || m.Solved != 2 || m.Failed != 1 || m.Errors != 1 || m.TotalCostMicrodollars != 1500 ||
		m.CostPerSolve != 750 || m.EvidenceCompleteSolved != 1 || m.EvidenceCoverage != 0.5 || m.MedianLatencyMS != 40 || m.P95LatencyMS != 80 {
		t.Errorf("restricted W02: %+v", m)
	}
	if rep.Accepted {
		t.Error("restricted W02 accepted with half the evidence")
	}
	rep, err = Build(snap, Window{Filter: index.AnyBundle}, DefaultCriteria())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics.TotalTasks != 8 || rep.Metrics.Skipped != 1 || rep.DaysRead == 0 || rep.BundlesRead != 0 {
		t.Errorf("all: %+v (days %d, bundles %d)", rep.Metrics, rep.DaysRead, rep.BundlesRead)
	}

	// A rebuild gives the same trend.
	before, _, _ := Trend(snap, Day, Window{Filter: index.AnyBundle})
	if err := l.Rebuild(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	snap2 := l.Snapshot()
	defer snap2.Close()
	after, _, err := Trend(snap2, Day, Window{Filter: index.AnyBundle})
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != len(after) {
		t.Fatalf("rebuild: %d rows, before %d", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("rebuild changed row %d: %+v → %+v", i, before[i], after[i])
		}
	}
}

func hashOf(p governance.Policy) []byte {
	h := p.Hash()
	return h[:]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTrendEmpty(t *testing.T) {
	l := openLedger(t)
	snap := l.Snapshot()
	defer snap.Close()
	rows, periods, err := Trend(snap, Week, Window{Filter: index.AnyBundle})
	if err != nil || rows != nil || periods != nil {
		t.Errorf("empty ledger: %v %v %v", rows, periods, err)
	}
}

func TestWritePlot(t *testing.T) {
	rows := []Row{
		{Period: "2026-W02", Tasks: 10, Solved: 6, SolveRate: 0.6, CostPerSolve: 15_000},
		{Period: "2026-W03", Tasks: 0},
		{Period: "2026-W04", Tasks: 4, Solved: 0},
		{Period: "2026-W05", Tasks: 10, Solved: 7, SolveRate: 0.7, CostPerSolve: 13_000},
	}
	dir := t.TempDir()
	for _, name := range []string{"trend.png", "trend.svg", "TREND.PNG"} {
		path := filepath.Join(dir, name)
		if err := PlotFile(path, rows, Week, "test"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(strings.ToLower(name), ".png") {
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 780 {
				t.Errorf("%s: %v, want 1200x780", name, b)
			}
		} else if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("solve rate (%)")) {
			t.Errorf("%s: not an SVG with the axis labels", name)
		}
	}
	if err := PlotFile(filepath.Join(dir, "trend.pdf"), rows, Week, "test"); err == nil {
		t.Error("a .pdf plot did not fail")
	}
	if err := WritePlot(&bytes.Buffer{}, "png", nil, Week, "test"); err == nil {
		t.Error("plotting no rows did not fail")
	}
	// Many periods: every k-th labelled, slanted.
	var labels []string
	for i := range 60 {
		labels = append(labels, Day.Label(date("2026-01-01").AddDate(0, 0, i)))
	}
	ticks, rotate := periodTicks(labels)
	shown := 0
	for _, tk := range ticks {
		if tk.Label != "" {
			shown++
		}
	}
	if len(ticks) != 60 || shown > maxTickLabels || !rotate {
		t.Errorf("60 days: %d ticks, %d labelled, rotate %v", len(ticks), shown, rotate)
	}
}

// TestRollbacksUnderFilter checks that a filtered scorecard counts the
// rollbacks that follow a bundle of the filter, through chains of
// rollbacks of one task.
func TestRollbacksUnderFilter(t *testing.T) {
	l := openLedger(t)
	restr, auto := governance.Restricted(), governance.Autonomous()
	a := spec{task: "A", at: "2026-01-06T10:00:00Z", outcome: rvww.OutcomeFailed, policy: restr, cost: 10}
	b := spec{task: "B", at: "2026-01-06T11:00:00Z", outcome: rvww.OutcomeFailed, policy: auto, cost: 10}
	appendAll(t, l, []spec{a, b})
	taskOf := func(s spec) string {
		d, err := rvww.Decode(s.encode(t))
		if err != nil {
			t.Fatal(err)
		}
		return d.TaskUUID()
	}
	var subs []admit.Submission
	for i, rb := range []struct {
		s     spec
		clean bool
		at    string
	}{{a, true, "2026-01-06T12:00:00Z"}, {b, false, "2026-01-06T12:00:00Z"}, {b, true, "2026-01-06T13:00:00Z"}} {
		doc, err := rollback.Sign(taskOf(rb.s), rb.clean, date(rb.at), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, admit.Submission{Name: strconv.Itoa(i), Data: doc})
	}
	out, err := l.Append(context.Background(), subs, admit.Options{AllowUnsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
		}
	}
	snap := l.Snapshot()
	defer snap.Close()
	for _, tc := range []struct {
		name     string
		w        Window
		n, clean int64
	}{
		{"all", Window{Filter: index.AnyBundle}, 3, 2},
		{"restricted", Window{Filter: index.Filter{Policy: hashOf(restr), Mode: -1}}, 1, 1},
		{"autonomous, through a chain of rollbacks", Window{Filter: index.Filter{Policy: hashOf(auto), Mode: -1}}, 2, 1},
		{"mode 2", Window{Filter: index.Filter{Mode: 2}}, 2, 1},
		{"mode 1", Window{Filter: index.Filter{Mode: 1}}, 0, 0},
		{"window", Window{Since: date("2026-01-06T12:30:00Z"), Filter: index.Filter{Mode: 2}}, 1, 1},
	} {
		rep, err := Build(snap, tc.w, DefaultCriteria())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m := rep.Metrics; m.RollbackCount != tc.n || m.RollbacksRestoredClean != tc.clean {
			t.Errorf("%s: %d rollbacks, %d clean; want %d, %d", tc.name, m.RollbackCount, m.RollbacksRestoredClean, tc.n, tc.clean)
		}
	}
}

// TestTrendFiltered checks a trend under a policy or mode filter: the
// rows count the filter's bundles, the open window spans the filter's
// bundles only, and a regression needs a solve and a later failure both
// under the filter.
func TestTrendFiltered(t *testing.T) {
	l := openLedger(t)
	auto, restr, appr := governance.Autonomous(), governance.Restricted(), governance.Approved()
	appendAll(t, l, []spec{
		// A regresses under autonomous, B under restricted.
		{task: "A", at: "2026-01-06T10:00:00Z", outcome: rvww.OutcomeSolved, policy: auto, cost: 100, complete: true},
		{task: "A", at: "2026-01-13T10:00:00Z", outcome: rvww.OutcomeFailed, policy: auto, cost: 10},
		{task: "B", at: "2026-01-07T10:00:00Z", outcome: rvww.OutcomeSolved, policy: restr, cost: 5, complete: true},
		{task: "B", at: "2026-01-14T10:00:00Z", outcome: rvww.OutcomeErrored, policy: restr, cost: 5},
		// E is solved under autonomous and fails under restricted: a
		// regression of all bundles, of neither policy alone.
		{task: "E", at: "2026-01-06T12:00:00Z", outcome: rvww.OutcomeSolved, policy: auto, cost: 100, complete: true},
		{task: "E", at: "2026-01-15T12:00:00Z", outcome: rvww.OutcomeFailed, policy: restr, cost: 5},
		// G is solved under autonomous, then under restricted in the
		// week it fails under restricted: no regression of restricted.
		{task: "G", at: "2026-01-08T10:00:00Z", outcome: rvww.OutcomeSolved, policy: auto, cost: 1, complete: true},
		{task: "G", at: "2026-01-13T10:00:00Z", outcome: rvww.OutcomeSolved, policy: restr, cost: 1, complete: true},
		{task: "G", at: "2026-01-14T11:00:00Z", outcome: rvww.OutcomeFailed, policy: restr, cost: 1},
		// F only under approved, two weeks later.
		{task: "F", at: "2026-01-27T12:00:00Z", outcome: rvww.OutcomeSolved, policy: appr, cost: 50, complete: true},
	})
	snap := l.Snapshot()
	defer snap.Close()
	summary := func(rows []Row) string {
		var parts []string
		for _, r := range rows {
			parts = append(parts, r.Period+" "+itoa(r.Tasks)+"/"+itoa(r.Solved)+" r"+itoa(r.Regressions))
		}
		return strings.Join(parts, ", ")
	}
	for _, tc := range []struct {
		name string
		f    index.Filter
		want string
	}{
		{"all", index.AnyBundle, "2026-W02 4/4 r0, 2026-W03 5/1 r4, 2026-W04 0/0 r0, 2026-W05 1/1 r0"},
		{"autonomous", index.Filter{Policy: hashOf(auto), Mode: -1}, "2026-W02 3/3 r0, 2026-W03 1/0 r1"},
		{"restricted", index.Filter{Policy: hashOf(restr), Mode: -1}, "2026-W02 1/1 r0, 2026-W03 4/1 r1"},
		{"mode restricted", index.Filter{Mode: int(governance.ModeRestricted)}, "2026-W02 1/1 r0, 2026-W03 4/1 r1"},
		{"approved: its own weeks only", index.Filter{Policy: hashOf(appr), Mode: -1}, "2026-W05 1/1 r0"},
		{"restricted and autonomous mode: nothing", index.Filter{Policy: hashOf(restr), Mode: int(governance.ModeAutonomous)}, ""},
	} {
		rows, _, err := Trend(snap, Week, Window{Filter: tc.f})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := summary(rows); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	// A clipped window under a filter: the solve before it still counts.
	rows, _, err := Trend(snap, Day, Window{Since: date("2026-01-13"), Until: date("2026-01-14"), Filter: index.Filter{Policy: hashOf(auto), Mode: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(rows); got != "2026-01-13 1/0 r1" {
		t.Errorf("clipped: %s", got)
	}
}

// TestBuildStatus checks the scorecard's verdict: empty when the window
// holds no bundles (even with rollbacks in it), else accepted or not.
func TestBuildStatus(t *testing.T) {
	l := openLedger(t)
	auto := governance.Autonomous()
	a := spec{task: "A", at: "2026-01-06T10:00:00Z", outcome: rvww.OutcomeSolved, policy: auto, cost: 10, complete: true}
	appendAll(t, l, []spec{a, {task: "B", at: "2026-01-08T10:00:00Z", outcome: rvww.OutcomeFailed, policy: auto, cost: 10}})
	d, err := rvww.Decode(a.encode(t))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := rollback.Sign(d.TaskUUID(), true, date("2026-01-07T00:00:00Z"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := l.Append(context.Background(), []admit.Submission{{Name: "rb", Data: doc}}, admit.Options{AllowUnsigned: true}); err != nil || out[0].Status != ledger.StatusAppended {
		t.Fatalf("rollback: %v %+v", err, out)
	}
	snap := l.Snapshot()
	defer snap.Close()
	lenient := DefaultCriteria()
	lenient.MinSolveRate = 500_000
	for _, tc := range []struct {
		name     string
		w        Window
		criteria Criteria
		want     Status
	}{
		{"no bundles, a rollback", Window{Since: date("2026-01-07"), Until: date("2026-01-08"), Filter: index.AnyBundle}, DefaultCriteria(), Empty},
		{"no bundles of the mode", Window{Filter: index.Filter{Mode: 0}}, DefaultCriteria(), Empty},
		{"after the last bundle", Window{Since: date("2026-02-01"), Filter: index.AnyBundle}, lenient, Empty},
		{"one solved", Window{Until: date("2026-01-07"), Filter: index.AnyBundle}, DefaultCriteria(), Accepted},
		{"one of two solved", Window{Filter: index.AnyBundle}, DefaultCriteria(), NotAccepted},
		{"one of two solved, 0.50 asked", Window{Filter: index.AnyBundle}, lenient, Accepted},
	} {
		rep, err := Build(snap, tc.w, tc.criteria)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rep.Status != tc.want || rep.Accepted != (tc.want == Accepted) {
			t.Errorf("%s: status %s accepted %v, want %s", tc.name, rep.Status, rep.Accepted, tc.want)
		}
		if tc.want == Empty {
			for _, c := range rep.Criteria {
				if c.Met || c.Reason != NotJudged {
					t.Errorf("%s: %s judged in an empty window: %+v", tc.name, c, c)
				}
			}
		}
	}
	if _, err := Build(snap, Window{Filter: index.AnyBundle}, Criteria{MinSolveRate: 2 * One}); !errors.Is(err, ErrThreshold) {
		t.Errorf("bad criteria: %v", err)
	}
}

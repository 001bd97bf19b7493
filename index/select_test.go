package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// TestSelectMatchesScan fills a generated ledger (receipts in chains,
// bundles with retries and rollbacks, attestations and specifications),
// then runs ledger.Log with index selections of every shape, alone and
// with a window, a kind and a limit, and demands exactly the events a
// scan of the whole log finds with the documented meaning of agent,
// subject and task (AgentsOf, the leaf subject, a task's bundles and
// rollbacks).
func TestSelectMatchesScan(t *testing.T) {
	l := openTest(t)
	cfg := ledgertest.Config{Seed: 7, Receipts: 240, Bundles: 120, Attestations: 24, Agents: 6, Specs: true, Span: 10 * 24 * time.Hour}
	n := fill(t, l, cfg, 40, 7)
	ctx := context.Background()
	var all []*ledger.Event
	if err := l.Scan(0, false, func(ev *ledger.Event) (bool, error) { all = append(all, ev); return true, nil }); err != nil {
		t.Fatal(err)
	}
	if int64(len(all)) != n {
		t.Fatalf("%d events scanned, %d appended", len(all), n)
	}
	// The busiest of each: a receipt agent, a signer, a system, a task
	// with a rollback, and a bundle signer.
	busiest := func(key func(*ledger.Event) []string) string {
		count := map[string]int{}
		for _, ev := range all {
			for _, k := range key(ev) {
				count[k]++
			}
		}
		best, bn := "", 0
		for k, c := range count {
			if c > bn || c == bn && k < best {
				best, bn = k, c
			}
		}
		if best == "" {
			t.Fatal("the corpus has no such subject")
		}
		return best
	}
	of := func(kind codec.Kind, f func(*ledger.Event) string) func(*ledger.Event) []string {
		return func(ev *ledger.Event) []string {
			if ev.Kind == kind && f(ev) != "" {
				return []string{f(ev)}
			}
			return nil
		}
	}
	subject := func(ev *ledger.Event) string { return ev.Subject }
	signer := func(ev *ledger.Event) string { return ev.Signer }
	agent := busiest(of(codec.KindVRF, subject))
	receiptSigner := busiest(of(codec.KindVRF, signer))
	system := busiest(of(codec.KindAVIRAttestation, subject))
	task := busiest(of(ledger.KindRollback, subject))
	harness := busiest(of(codec.KindRVWW, signer))
	rollbacker := busiest(of(ledger.KindRollback, signer))
	mid := all[len(all)/2].AppendedAt
	late := all[3*len(all)/4].AppendedAt

	type want func(ev *ledger.Event) bool
	isAgent := func(a string) want {
		return func(ev *ledger.Event) bool { return slices.Contains(AgentsOf(&ev.Leaf), a) }
	}
	hasSubject := func(s string) want { return func(ev *ledger.Event) bool { return ev.Subject == s } }
	isTask := func(s string) want {
		return func(ev *ledger.Event) bool { return ev.Subject == s && slices.Contains(TaskKinds, ev.Kind) }
	}
	and := func(ws ...want) want {
		return func(ev *ledger.Event) bool {
			for _, w := range ws {
				if !w(ev) {
					return false
				}
			}
			return true
		}
	}
	for _, tc := range []struct {
		name string
		sel  Selection
		q    ledger.Query
		want want
		min  int // the selection must not be trivially small
	}{
		{"agent's receipts", Selection{Agent: agent}, ledger.Query{}, isAgent(agent), 10},
		{"signer's receipts", Selection{Agent: receiptSigner}, ledger.Query{}, isAgent(receiptSigner), 10},
		{"harness's bundles and rollbacks", Selection{Agent: harness}, ledger.Query{}, isAgent(harness), 10},
		{"subject: an agent", Selection{Subject: agent}, ledger.Query{}, hasSubject(agent), 10},
		{"subject: a system", Selection{Subject: system}, ledger.Query{}, hasSubject(system), 2},
		{"task", Selection{Task: task}, ledger.Query{}, isTask(task), 2},
		{"task and subject agree", Selection{Task: task, Subject: task}, ledger.Query{}, isTask(task), 2},
		{"task and subject differ", Selection{Task: task, Subject: system}, ledger.Query{}, func(*ledger.Event) bool { return false }, 0},
		{"agent and subject", Selection{Agent: receiptSigner, Subject: agent}, ledger.Query{}, and(isAgent(receiptSigner), hasSubject(agent)), 1},
		{"agent since", Selection{Agent: agent}, ledger.Query{Since: mid}, and(isAgent(agent), func(ev *ledger.Event) bool { return !ev.AppendedAt.Before(mid) }), 1},
		{"agent until", Selection{Agent: agent}, ledger.Query{Until: mid}, and(isAgent(agent), func(ev *ledger.Event) bool { return ev.AppendedAt.Before(mid) }), 1},
		{"agent in a window", Selection{Agent: receiptSigner}, ledger.Query{Since: mid, Until: late}, and(isAgent(receiptSigner), func(ev *ledger.Event) bool {
			return !ev.AppendedAt.Before(mid) && ev.AppendedAt.Before(late)
		}), 1},
		{"kind by query", Selection{Subject: task}, ledger.Query{Kind: ledger.KindRollback}, and(hasSubject(task), func(ev *ledger.Event) bool { return ev.Kind == ledger.KindRollback }), 1},
		{"rollback signer", Selection{Agent: rollbacker}, ledger.Query{}, isAgent(rollbacker), 2},
		{"kind by selection", Selection{Subject: task, Kinds: []codec.Kind{codec.KindRVWW}}, ledger.Query{}, and(hasSubject(task), func(ev *ledger.Event) bool { return ev.Kind == codec.KindRVWW }), 1},
		{"nobody", Selection{Agent: "nobody"}, ledger.Query{}, func(*ledger.Event) bool { return false }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []int64
			for _, ev := range all {
				if tc.want(ev) && (tc.q.Kind == "" || ev.Kind == tc.q.Kind) {
					want = append(want, ev.Seq)
				}
			}
			if len(want) < tc.min {
				t.Fatalf("the corpus gives %d events, want at least %d for a meaningful test", len(want), tc.min)
			}
			for _, limit := range []int{0, 1, 3} {
				q := tc.q
				q.Select, q.Limit = tc.sel.Selector(), limit
				var got []int64
				if err := l.Log(ctx, q, func(ev *ledger.Event) (bool, error) { got = append(got, ev.Seq); return true, nil }); err != nil {
					t.Fatal(err)
				}
				exp := want
				if limit > 0 && len(exp) > limit {
					exp = exp[:limit]
				}
				if fmt.Sprint(got) != fmt.Sprint(exp) {
					t.Errorf("limit %d: got events %v, want %v", limit, got, exp)
				}
			}
		})
	}
	snap := l.Snapshot()
	defer snap.Close()
	if err := Events(snap, Selection{}, 0, n, func(int64) (bool, error) { return true, nil }); !errors.Is(err, ErrNoSelection) {
		t.Errorf("an empty selection: %v, want ErrNoSelection", err)
	}
}

// TestAgentsOf states who acts in an event of each kind.
func TestAgentsOf(t *testing.T) {
	for _, tc := range []struct {
		kind            codec.Kind
		subject, signer string
		want            []string
	}{
		{codec.KindVRF, "agent-1", "ed25519:aa", []string{"agent-1", "ed25519:aa"}},
		{codec.KindVRF, "ed25519:aa", "ed25519:aa", []string{"ed25519:aa"}},
		{codec.KindVRF, "agent-1", "", []string{"agent-1"}},
		{codec.KindAVIRAttestation, "Memoria v1.0.0", "ed25519:bb", []string{"ed25519:bb"}},
		{codec.KindAVIRSpec, "Memoria v1.0.0", "", nil},
		{codec.KindRVWW, "966f548c-424c-4692-b71b-ca44b8628235", "hmac:0011223344556677", []string{"hmac:0011223344556677"}},
		{codec.KindRVWW, "966f548c-424c-4692-b71b-ca44b8628235", "", nil},
		{ledger.KindRollback, "966f548c-424c-4692-b71b-ca44b8628235", "ed25519:cc", []string{"ed25519:cc"}},
	} {
		ev := ledger.Event{}
		ev.Kind, ev.Subject, ev.Signer = tc.kind, tc.subject, tc.signer
		got := AgentsOf(&ev.Leaf)
		sort.Strings(got)
		want := slices.Clone(tc.want)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s subject %q signer %q: agents %q, want %q", tc.kind, tc.subject, tc.signer, got, want)
		}
	}
}

package ledger

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestConcurrentAppends has many goroutines append distinct receipt chains
// while several of them append the same shared documents at once. It
// checks dense unique sequence numbers, exactly one winner per identity,
// and that appending the resulting log one event at a time, in log order
// and with the same arrival times, into a fresh ledger gives the same
// tree root: group commit changes nothing but speed.
func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, Options{QueueSize: 8})
	const workers, perWorker, shared = 16, 12, 5
	signer := testKey(3)
	sharedDocs := make([][]byte, shared)
	for i := range sharedDocs {
		sharedDocs[i] = receipt(t, signer, 900000+i, fmt.Sprintf("shared-%d", i), "", -1)
	}
	type result struct {
		out  Outcome
		data []byte
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			agent := fmt.Sprintf("agent-%02d", w)
			prev := ""
			for i := 0; i < perWorker; i++ {
				n := 1000*(w+1) + i
				var subs []Submission
				subs = append(subs, Submission{Name: fmt.Sprint(n), Data: receipt(t, signer, n, agent, prev, int64(i)),
					Arrival: testEpoch.Add(time.Duration(n) * time.Millisecond)})
				prev = uuid4(n)
				if i < shared {
					subs = append(subs, Submission{Name: "shared", Data: sharedDocs[i], Arrival: testEpoch})
				}
				out, err := l.AppendWithRetry(ctx, subs, AppendOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j, o := range out {
					results = append(results, result{o, subs[j].Data})
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	want := int64(workers*perWorker + shared)
	winners := map[string]int{}
	seqs := map[int64]bool{}
	for _, r := range results {
		switch r.out.Status {
		case StatusAppended:
			winners[r.out.ID]++
			if seqs[r.out.Seq] {
				t.Errorf("seq %d assigned twice", r.out.Seq)
			}
			seqs[r.out.Seq] = true
		case StatusReplay:
		default:
			t.Errorf("%s: %s %s", r.out.Name, r.out.Status, r.out.Reason)
		}
	}
	for id, n := range winners {
		if n != 1 {
			t.Errorf("%s appended %d times", id, n)
		}
	}
	if l.Size() != want {
		t.Fatalf("size %d, want %d", l.Size(), want)
	}
	for s := int64(0); s < want; s++ {
		if !seqs[s] {
			t.Errorf("seq %d missing: not dense", s)
		}
	}

	// Replay the log one event per call into a fresh ledger.
	var events []*Event
	if err := l.Scan(0, true, func(ev *Event) (bool, error) { events = append(events, ev); return true, nil }); err != nil {
		t.Fatal(err)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	serial := newLedger(t, Options{})
	for _, ev := range events {
		out, err := serial.Append(ctx, []Submission{{Name: ev.ID, Data: ev.Data, Arrival: ev.AppendedAt}}, AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != StatusAppended || out[0].Seq != ev.Seq {
			t.Fatalf("serial append of event %d: %+v", ev.Seq, out[0])
		}
	}
	r1, err := l.TreeHash(want)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := serial.TreeHash(want)
	if err != nil {
		t.Fatal(err)
	}
	if r1 != r2 {
		t.Errorf("tree roots differ: concurrent %v, serial %v", r1, r2)
	}
}

// TestDeterministic feeds two ledgers with the same key the same ordered
// submissions and requires them to end byte-identical, key for key.
func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	a, b := newLedger(t, Options{}), newLedger(t, Options{})
	signer := testKey(4)
	var batches [][]Submission
	prev := ""
	for i := 0; i < 20; i++ {
		var batch []Submission
		for j := 0; j < 3; j++ {
			n := 3*i + j
			batch = append(batch, Submission{Name: fmt.Sprint(n), Data: receipt(t, signer, n, "agent", prev, int64(n)),
				Arrival: testEpoch.Add(time.Duration(n) * time.Second)})
			prev = uuid4(n)
		}
		batches = append(batches, batch)
	}
	vs := vectorSubs(t)
	for i := range vs {
		vs[i].Arrival = testEpoch.Add(time.Hour)
	}
	batches = append(batches, vs)
	for _, l := range []*Ledger{a, b} {
		for _, batch := range batches {
			if _, err := l.Append(ctx, batch, hmacOpts(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff, ok := sameState(dump(t, a), dump(t, b)); !ok {
		t.Errorf("ledgers differ: %s", diff)
	}
}

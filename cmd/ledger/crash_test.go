package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/ledger"
)

// writeReceiptChains writes agents×perAgent signed receipts, each chain in
// order, and returns the file paths in an order that appends cleanly.
func writeReceiptChains(t testing.TB, dir string, agents, perAgent int) []string {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var paths []string
	for i := 0; i < perAgent; i++ {
		for a := 0; a < agents; a++ {
			n := a*perAgent + i
			d := vrf.Draft{
				ReceiptID:  fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n),
				VerifiedAt: base.Add(time.Duration(n) * time.Second),
				Details:    []vrf.Detail{{Name: "check", Status: "pass", DurationMS: 1}},
				Hashes:     vrf.Hashes{Input: vrf.ShortHash([]byte("i")), Output: vrf.ShortHash([]byte(fmt.Sprint(n))), Suite: vrf.ShortHash([]byte("s"))},
				AgentID:    fmt.Sprintf("agent-%02d", a),
				Chain:      &vrf.ChainLink{Position: int64(i)},
			}
			if i > 0 {
				p := n - 1
				d.Chain.PreviousReceipt = fmt.Sprintf("%08x-0000-4000-8000-%012x", p, p)
			}
			v, err := d.Build()
			if err != nil {
				t.Fatal(err)
			}
			data, err := vrf.Sign(v, priv)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, fmt.Sprintf("r%05d.json", len(paths)))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, p)
		}
	}
	return paths
}

// TestCrashRecovery appends with the real binary, one document per durable
// batch, and kills it with SIGKILL at random moments. After every kill the
// ledger must hold every append the binary acknowledged, at the sequence
// number it reported, with no partial event, dense sequence numbers, a tree
// root recomputed from the events equal to the stored checkpoint's, and
// index entries that agree with the events (ledger.Audit).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test runs the binary dozens of times")
	}
	work := t.TempDir()
	dir := filepath.Join(work, "ledger")
	if _, stderr, code := runLedger(t, nil, "init", "--dir", dir); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	files := writeReceiptChains(t, filepath.Join(work), 8, 40)
	rng := rand.New(rand.NewPCG(1, 2))
	acked := map[string]int64{} // receipt id → seq the binary reported
	kills := 0
	for round := 0; kills < 25 && round < 200; round++ {
		args := append([]string{"append", "--json", "--batch", "1", "--dir", dir}, files...)
		cmd := exec.Command(ledgerBin, args...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random moment measured in progress, not wall-clock
		// time (this machine may be slow or loaded): after a random number
		// of acknowledgements (0 to 11) plus a random 0-20 ms.
		target := rng.IntN(12)
		reached := make(chan struct{})
		seen := 0
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var line struct {
					ID     string `json:"id"`
					Status string `json:"status"`
					Seq    *int64 `json:"seq"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					continue // the kill may cut the last line short
				}
				if (line.Status == "appended" || line.Status == "replay") && line.Seq != nil {
					mu.Lock()
					if prev, ok := acked[line.ID]; ok && prev != *line.Seq {
						t.Errorf("%s acknowledged at seq %d, earlier at %d", line.ID, *line.Seq, prev)
					}
					acked[line.ID] = *line.Seq
					seen++
					if seen == target {
						close(reached)
					}
					mu.Unlock()
				}
			}
		}()
		done := make(chan error, 1)
		go func() { wg.Wait(); done <- cmd.Wait() }()
		if target == 0 {
			close(reached)
		}
		extra := time.Duration(rng.IntN(21)) * time.Millisecond
		select {
		case err := <-done:
			// Finished before the kill: everything is in (exit 5 when
			// some input was a replay); start over on a new ledger so
			// later rounds still have work to interrupt.
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != exitRefused) {
				t.Fatalf("round %d: append ended on its own with %v", round, err)
			}
			checkLedger(t, dir, acked)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := runLedger(t, nil, "init", "--dir", dir); code != 0 {
				t.Fatalf("init: %s", stderr)
			}
			acked = map[string]int64{}
			continue
		case <-reached:
			time.Sleep(extra)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Killed, or finished just before the kill: an exit status either
		// way, which says nothing about the ledger.
		if err := <-done; err != nil && !errors.As(err, new(*exec.ExitError)) {
			t.Fatalf("round %d: wait: %v", round, err)
		}
		kills++
		checkLedger(t, dir, acked)
		if t.Failed() {
			t.Fatalf("after kill %d", kills)
		}
	}
	if kills < 25 {
		t.Fatalf("only %d kills landed while appending", kills)
	}
	t.Logf("%d kills, %d appends acknowledged in the last ledger", kills, len(acked))
}

func checkLedger(t *testing.T, dir string, acked map[string]int64) {
	t.Helper()
	l, err := ledger.Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open after kill: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	rep, err := l.Audit(context.Background(), ledger.AuditOptions{})
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	for _, p := range rep.Problems {
		t.Errorf("audit: %s", p)
	}
	for id, seq := range acked {
		ev, err := l.Lookup(id)
		if err != nil {
			t.Errorf("acknowledged %s (seq %d) is missing: %v", id, seq, err)
			continue
		}
		if ev.Seq != seq {
			t.Errorf("acknowledged %s at seq %d, ledger has it at %d", id, seq, ev.Seq)
		}
	}
}

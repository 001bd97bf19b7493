package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/ledger"
)

// TestMeasureLocking measures what the writer lock and read copies cost
// (docs/BENCHMARKS.md, "Writer lock and read copies"). It runs only when
// LEDGER_MEASURE_EVENTS is set (the ledger's size, e.g. 80000); with
// LEDGER_MEASURE_BASE naming a binary built before the change, it times
// that binary's processes on the same ledger too:
//
//	git archive cd5127b | tar -x -C /tmp/base && (cd /tmp/base && go build -o /tmp/ledger-base ./cmd/ledger)
//	LEDGER_MEASURE_EVENTS=80000 LEDGER_MEASURE_BASE=/tmp/ledger-base go test ./cmd/ledger -run TestMeasureLocking -v -timeout 30m
func TestMeasureLocking(t *testing.T) {
	events, _ := strconv.Atoi(os.Getenv("LEDGER_MEASURE_EVENTS"))
	if events <= 0 {
		t.Skip("set LEDGER_MEASURE_EVENTS (and LEDGER_MEASURE_BASE) to measure")
	}
	base := os.Getenv("LEDGER_MEASURE_BASE")
	const runs = 16
	work := t.TempDir()
	if d := os.Getenv("LEDGER_MEASURE_DIR"); d != "" {
		work = d // kept, to look at afterwards
	}
	dir := filepath.Join(work, "ledger")
	mustRun(t, 0, "init", "--dir", dir)
	docs := filepath.Join(work, "docs")
	if err := os.Mkdir(docs, 0o700); err != nil {
		t.Fatal(err)
	}
	writeIndependentReceipts(t, docs, 0, events)
	start := time.Now()
	mustRun(t, 0, "append", "--dir", dir, docs)
	t.Logf("built a ledger of %d receipts in %s", events, time.Since(start).Round(time.Millisecond))
	extra := filepath.Join(work, "extra")
	if err := os.Mkdir(extra, 0o700); err != nil {
		t.Fatal(err)
	}
	extraFiles := writeIndependentReceipts(t, extra, events, runs+1)

	// Each binary appends to its own clone of the ledger, one receipt per
	// process, runs in a row: an append whose flush at Close tips level 0
	// into a compaction waits for it (Pebble's Close), in both binaries
	// alike, so means over an even number of runs compare them.
	baseDir := filepath.Join(work, "ledger-base")
	if base != "" {
		if out, err := exec.Command("cp", "-a", dir, baseDir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}
	timeRun := func(bin string, args ...string) (time.Duration, string) {
		t.Helper()
		cmd, _, stderr := ledgerCmd(nil, args...)
		cmd.Path, cmd.Args[0] = bin, bin
		s := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v: %s", bin, args, err, stderr)
		}
		return time.Since(s), stderr.String()
	}
	tookRe := regexp.MustCompile(`msg="read copy made" .* took=([0-9.]+[µm]?s)`)
	var newAppend, baseAppend, copies []time.Duration
	for i := range runs {
		d, stderr := timeRun(ledgerBin, "--verbose", "append", "--dir", dir, extraFiles[i])
		newAppend = append(newAppend, d)
		if m := tookRe.FindStringSubmatch(stderr); m != nil {
			c, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatal(err)
			}
			copies = append(copies, c)
		}
	}
	if base != "" {
		for i := range runs {
			d, _ := timeRun(base, "append", "--dir", baseDir, extraFiles[i])
			baseAppend = append(baseAppend, d)
		}
	}
	// The lock alone: flock and the synced lock.info.
	var locks []time.Duration
	for range runs {
		s := time.Now()
		wl, err := ledger.LockWriter(context.Background(), dir, ledger.LockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, time.Since(s))
		if err := wl.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	timeRun(ledgerBin, "append", "--dir", dir, extraFiles[runs]) // the last writer is this binary again: its copy is current
	var newGet, baseGet []time.Duration
	for range runs {
		d, _ := timeRun(ledgerBin, "get", "5", "--dir", dir)
		newGet = append(newGet, d)
		if base != "" {
			d, _ := timeRun(base, "get", "5", "--dir", baseDir)
			baseGet = append(baseGet, d)
		}
	}
	// What a copy writes (everything but its tables, which are links),
	// and the tables only it still holds (the store compacted them away
	// since: disk the copy keeps until the next one replaces it).
	var files, tables, kept int
	var own, keptBytes int64
	stores, _ := filepath.Glob(filepath.Join(dir, "copies", "*", "store", "*"))
	for _, p := range stores {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		if filepath.Ext(p) != ".sst" {
			own += st.Size()
			continue
		}
		tables++
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Nlink == 1 {
			kept++
			keptBytes += st.Size()
		}
	}
	t.Logf("ledger of %d events; %d runs each: mean, median", events, runs)
	t.Logf("read copy at Close (the writer's step): %s, %s (min %s, max %s)", mean(copies), median(copies), slices.Min(copies), slices.Max(copies))
	t.Logf("read copy: %d files: %d tables linked, the rest %d bytes; %d tables (%d bytes) the store has compacted away since", files, tables, own, kept, keptBytes)
	t.Logf("writer lock + synced lock.info: %s, %s", mean(locks), median(locks))
	t.Logf("ledger append (1 receipt), this binary: %s, %s", mean(newAppend), median(newAppend))
	t.Logf("ledger get 5 (read copy), this binary: %s, %s", mean(newGet), median(newGet))
	if base != "" {
		t.Logf("ledger append (1 receipt), before: %s, %s", mean(baseAppend), median(baseAppend))
		t.Logf("ledger get 5, before: %s, %s", mean(baseGet), median(baseGet))
	}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(len(ds))).Round(100 * time.Microsecond)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(100 * time.Microsecond)
}

// writeIndependentReceipts writes n signed receipts numbered from, each a
// chain of its own, and returns their paths.
func writeIndependentReceipts(t *testing.T, dir string, from, n int) []string {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	paths := make([]string, 0, n)
	for i := from; i < from+n; i++ {
		d := vrf.Draft{
			ReceiptID:  fmt.Sprintf("%08x-0000-4000-9000-%012x", i, i),
			VerifiedAt: base.Add(time.Duration(i) * time.Second),
			Details:    []vrf.Detail{{Name: "check", Status: "pass", DurationMS: 1}},
			Hashes:     vrf.Hashes{Input: vrf.ShortHash([]byte("i")), Output: vrf.ShortHash([]byte(fmt.Sprint(i))), Suite: vrf.ShortHash([]byte("s"))},
			AgentID:    fmt.Sprintf("agent-%03d", i%500),
		}
		v, err := d.Build()
		if err != nil {
			t.Fatal(err)
		}
		data, err := vrf.Sign(v, priv)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("r%07d.json", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

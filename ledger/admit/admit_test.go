package admit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

func vectorSubs(t testing.TB) []Submission {
	return []Submission{
		{Name: "vrf", Data: readFile(t, filepath.Join(vectors, "vrf/01_tier0_pass.json"))},
		{Name: "avir", Data: readFile(t, filepath.Join(vectors, "avir/01_verified_L2.attestation.json"))},
		{Name: "rvww", Data: readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww"))},
	}
}

func hmacOpts(t testing.TB) Options {
	k, err := keys.LoadHMACKey(filepath.Join(vectors, "rvww/hmac_key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return Options{HMACKeys: []keys.HMACKey{k}}
}

func TestAppendVectorsAndReplay(t *testing.T) {
	l := newLedger(t, ledger.Options{})
	ctx := context.Background()
	at := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	subs := vectorSubs(t)
	for i := range subs {
		subs[i].Arrival = at
	}
	out, err := l.Append(ctx, subs, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != ledger.StatusAppended || o.Seq != int64(i) {
			t.Fatalf("outcome %d = %+v", i, o)
		}
	}
	if l.Size() != 3 {
		t.Fatalf("size %d", l.Size())
	}
	// Replays: identical bytes.
	again, err := l.Append(ctx, subs, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range again {
		if o.Status != ledger.StatusReplay || o.Seq != int64(i) {
			t.Errorf("replay %d = %+v", i, o)
		}
	}
	// Conflict: same receipt_id, different bytes (re-indented JSON, still
	// valid and signed).
	vrf := subs[0].Data
	conflicting := bytes.Replace(vrf, []byte("\n  "), []byte("\n    "), 1)
	c, err := l.Append(ctx, []Submission{{Name: "c", Data: conflicting}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c[0].Status != ledger.StatusConflict || c[0].Seq != 0 {
		t.Errorf("conflict = %+v", c[0])
	}
	// Unsigned bundle without key: signature not checked → rejected.
	r, err := l.Append(ctx, []Submission{{Name: "b", Data: subs[2].Data}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].Status != ledger.StatusReplay {
		// identity is checked after verification; without the key the
		// bundle does not verify, so it is rejected.
		if r[0].Status != ledger.StatusRejected {
			t.Errorf("bundle without key = %+v", r[0])
		}
	}
	ev, err := l.Event(2, true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ev.Data, subs[2].Data) {
		t.Error("bundle bytes changed")
	}
	if ev.AppendedAt != at {
		t.Errorf("appended at %v", ev.AppendedAt)
	}
}

func TestExportImportReproducesRoot(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, ledger.Options{})
	signer := testKey(5)
	prev := ""
	var subs []Submission
	for i := 0; i < 40; i++ {
		subs = append(subs, Submission{Name: fmt.Sprint(i), Data: receipt(t, signer, i, "agent", prev, int64(i)), Arrival: testEpoch.Add(time.Duration(i) * time.Second)})
		prev = uuid4(i)
	}
	subs = append(subs, vectorSubs(t)...)
	if _, err := src.Append(ctx, subs, hmacOpts(t)); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	est, err := src.Export(ctx, &archive)
	if err != nil || est.Events != 43 {
		t.Fatalf("export: %d events, %v", est.Events, err)
	}
	dstDir := filepath.Join(t.TempDir(), "dst")
	if err := ledger.Init(dstDir, ledger.InitOptions{Origin: "test.example/restored"}); err != nil {
		t.Fatal(err)
	}
	st, err := Import(ctx, dstDir, bytes.NewReader(archive.Bytes()), ImportOptions{Options: hmacOpts(t)})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.TreeHash(src.Size())
	if st.Root != want || st.Events != 43 || st.Signer != src.VerifierKey() {
		t.Errorf("import: %+v, want root %v", st, want)
	}
	dst, err := Open(dstDir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dst.Size() != 43 || dst.Origin() != "test.example/restored" {
		t.Errorf("imported ledger: %d events, origin %q", dst.Size(), dst.Origin())
	}
	if err := dst.Close(); err != nil {
		t.Error(err)
	}
	// Without the bundle's key the import stops at the bundle, and the
	// target is left as it was: empty, and importable again.
	againDir := filepath.Join(t.TempDir(), "again")
	if err := ledger.Init(againDir, ledger.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, againDir, bytes.NewReader(archive.Bytes()), ImportOptions{}); !errors.Is(err, ledger.ErrImport) {
		t.Errorf("import without the HMAC key = %v, want ledger.ErrImport", err)
	}
	if again, err := Open(againDir, ledger.Options{ReadOnly: true}); err != nil || again.Size() != 0 {
		t.Errorf("failed import left %v events (%v)", again.Size(), err)
	} else {
		if err := again.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := Import(ctx, againDir, bytes.NewReader(archive.Bytes()), ImportOptions{Options: hmacOpts(t)}); err != nil {
		t.Errorf("import after a failed one: %v", err)
	}
	// Import refuses a non-empty ledger.
	if _, err := Import(ctx, dstDir, bytes.NewReader(archive.Bytes()), ImportOptions{Options: hmacOpts(t)}); !errors.Is(err, ledger.ErrImport) {
		t.Errorf("import into a non-empty ledger = %v", err)
	}
}

// TestRefusalsLeaveStoreUnchanged appends a valid base, then offers one
// document per refusal reason (replay detection, chains and tasks, trust)
// and checks each is refused with its reason, leaves every key of the
// store outside the refusal journal as it was, and adds one journal
// record (reason, identity, digest, agent, submitter) and one count to
// its agent's counter for that reason.
func TestRefusalsLeaveStoreUnchanged(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	signer := testKey(1)
	other := testKey(2)
	r0 := receipt(t, signer, 100, "agent-a", "", 0)
	r1 := receipt(t, signer, 101, "", uuid4(100), 1)
	bundle := readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww"))
	out, err := l.Append(ctx, []Submission{{Name: "r1", Data: r1}, {Name: "r0", Data: r0}, {Name: "b", Data: bundle}}, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("base: %+v", o)
		}
	}
	if out[1].Seq != 0 || out[0].Seq != 1 {
		t.Errorf("chain order: r0 at %d, r1 at %d; want 0 and 1", out[1].Seq, out[0].Seq)
	}
	bundleSigner := out[2].Event.Signer
	unsignedBundleKey := keys.HMACKey{Name: "wrong", Secret: []byte("not the key")}

	for _, tc := range []struct {
		name   string
		data   []byte
		opts   Options
		status ledger.Status
		class  string
		reason string
		// what the journal records: the reason code, the agent, and the
		// event a replay or conflict collided with (-1: none)
		code  string
		agent string
		event int64
	}{
		{"replay", r0, Options{}, ledger.StatusReplay, "", "already in the ledger", "replay", "agent-a", 0},
		{"conflict", []byte(strings.Replace(string(r0), "{\n", "{\n  ", 1)), Options{}, ledger.StatusConflict, "", "different document", "conflict", "agent-a", 0},
		{"previous missing", receipt(t, signer, 102, "agent-a", uuid4(999), 2), Options{}, ledger.StatusRejected, ledger.RejectLink, "is not in the ledger", "link", "agent-a", -1},
		{"position skip", receipt(t, signer, 103, "agent-a", uuid4(101), 5), Options{}, ledger.StatusRejected, ledger.RejectLink, "chain_position: 5, want 2", "link", "agent-a", -1},
		{"agent mismatch", receipt(t, signer, 104, "agent-b", uuid4(101), 2), Options{}, ledger.StatusRejected, ledger.RejectLink, "a chain speaks for one agent", "link", "agent-b", -1},
		{"fork", receipt(t, other, 105, "", uuid4(100), 1), Options{}, ledger.StatusRejected, ledger.RejectLink, "cannot fork", "link", "agent-a", -1},
		{"unsigned", receipt(t, nil, 106, "agent-c", "", -1), Options{}, ledger.StatusRejected, ledger.RejectTrust, "unsigned", "trust", "", -1},
		{"untrusted signer", receipt(t, other, 107, "agent-c", "", -1), Options{TrustedSigners: map[string]bool{keys.SignerID(signer.Public().(ed25519.PublicKey)): true}}, ledger.StatusRejected, ledger.RejectTrust, "not in the trusted signers", "trust", "", -1},
		{"bundle no known key", readFile(t, "../../testdata/rvww/valid_solved_approved_signed.rvww"), Options{}, ledger.StatusRejected, ledger.RejectInvalid, "no HMAC key", "invalid", "", -1},
		{"replay needs no key", readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww")), Options{}, ledger.StatusReplay, "", "already in the ledger as event 2", "replay", bundleSigner, 2},
		{"bundle wrong key", readFile(t, filepath.Join("../../testdata/rvww/valid_failed_approved_signed.rvww")), Options{HMACKeys: []keys.HMACKey{unsignedBundleKey}}, ledger.StatusRejected, ledger.RejectInvalid, "matches none of the 1 supplied keys", "invalid", "", -1},
		{"malformed", []byte(`{"vrf_version": "1.0", "receipt_id": `), Options{}, ledger.StatusRejected, ledger.RejectMalformed, "", "malformed", "", -1},
		{"invalid", readFile(t, filepath.Join(vectors, "vrf/90_tampered_verdict.json")), Options{}, ledger.StatusRejected, ledger.RejectInvalid, "content_hash", "invalid", "", -1},
		{"future", receipt(t, signer, 108, "agent-d", "", -1), Options{MaxSkew: dur(time.Minute)}, ledger.StatusStale, ledger.RejectFuture, "ahead of arrival", "future", "agent-d", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dump(t, &l)
			counts, err := l.RefusalCounts(tc.agent)
			if err != nil {
				t.Fatal(err)
			}
			tc.opts.Submitter = "test:" + tc.name
			out, err := l.Append(ctx, []Submission{{Name: tc.name, Data: tc.data, Arrival: testEpoch}}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			o := out[0]
			if o.Status != tc.status || o.Class != tc.class || !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("outcome = %s/%s %q, want %s/%s containing %q", o.Status, o.Class, o.Reason, tc.status, tc.class, tc.reason)
			}
			after := dump(t, &l)
			added := 0
			for k := range after {
				if _, ok := before[k]; !ok && strings.HasPrefix(k, "refusal/") {
					added++
				}
			}
			if added != 1 {
				t.Errorf("%d journal records added, want 1", added)
			}
			for _, m := range []map[string]string{before, after} {
				for k := range m {
					if strings.HasPrefix(k, "refusal/") || strings.HasPrefix(k, "refusal-count/") {
						delete(m, k)
					}
				}
			}
			if diff := ledgertest.Diff(before, after); diff != "" {
				t.Errorf("store changed outside the refusal journal: %s", diff)
			}
			var last *ledger.RefusalRecord
			if err := l.Refusals(ctx, ledger.RefusalQuery{}, func(r *ledger.RefusalRecord) (bool, error) { last = r; return true, nil }); err != nil {
				t.Fatal(err)
			}
			if last == nil {
				t.Fatal("no journal record")
			}
			want := ledger.RefusalRecord{N: last.N, Time: testEpoch, Kind: o.Kind, ID: o.ID, Digest: sha256.Sum256(tc.data), Status: tc.status,
				Class: tc.class, Reason: tc.code, Detail: o.Reason, Agent: tc.agent, Submitter: "test:" + tc.name, Event: tc.event}
			if !reflect.DeepEqual(*last, want) {
				t.Errorf("journal record\n%+v, want\n%+v", *last, want)
			}
			now, err := l.RefusalCounts(tc.agent)
			if err != nil {
				t.Fatal(err)
			}
			if now[tc.code] != counts[tc.code]+1 {
				t.Errorf("agent %q's %s count %d, want %d", tc.agent, tc.code, now[tc.code], counts[tc.code]+1)
			}
		})
	}
}

func TestChainRules(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	a, b := testKey(1), testKey(2)
	// A chain without agent_id is named by its first receipt and may carry
	// several signers.
	docs := []Submission{
		{Name: "c2", Data: receipt(t, a, 3, "", uuid4(2), 2)},
		{Name: "c1", Data: receipt(t, b, 2, "", uuid4(1), 1)},
		{Name: "c0", Data: receipt(t, a, 1, "", "", 0)},
	}
	out, err := l.Append(ctx, docs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("%+v", o)
		}
		if o.Event.Subject != uuid4(1) {
			t.Errorf("%s: agent %q, want the chain's first receipt %s", o.Name, o.Event.Subject, uuid4(1))
		}
	}
	chain, err := l.Chain(uuid4(2))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range chain {
		ids = append(ids, ev.ID)
	}
	if strings.Join(ids, ",") != strings.Join([]string{uuid4(1), uuid4(2), uuid4(3)}, ",") {
		t.Errorf("chain = %v", ids)
	}
	// An explicit agent_id further down must match the chain's agent.
	bad := receipt(t, a, 4, "someone-else", uuid4(3), 3)
	good := receipt(t, a, 5, uuid4(1), uuid4(3), 3)
	out, err = l.Append(ctx, []Submission{{Name: "bad", Data: bad}, {Name: "good", Data: good}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != ledger.StatusRejected || out[1].Status != ledger.StatusAppended {
		t.Errorf("bad=%+v good=%+v", out[0], out[1])
	}
}

// TestConcurrentAppends has many goroutines append distinct receipt chains
// while several of them append the same shared documents at once. It
// checks dense unique sequence numbers, exactly one winner per identity,
// and that appending the resulting log one event at a time, in log order
// and with the same arrival times, into a fresh ledger gives the same
// tree root: group commit changes nothing but speed.
func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{QueueSize: 8})
	const workers, perWorker, shared = 16, 12, 5
	signer := testKey(3)
	sharedDocs := make([][]byte, shared)
	for i := range sharedDocs {
		sharedDocs[i] = receipt(t, signer, 900000+i, fmt.Sprintf("shared-%d", i), "", -1)
	}
	type result struct {
		out  ledger.Outcome
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
				out, err := l.AppendWithRetry(ctx, subs, Options{})
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
		case ledger.StatusAppended:
			winners[r.out.ID]++
			if seqs[r.out.Seq] {
				t.Errorf("seq %d assigned twice", r.out.Seq)
			}
			seqs[r.out.Seq] = true
		case ledger.StatusReplay:
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
	var events []*ledger.Event
	if err := l.Scan(0, true, func(ev *ledger.Event) (bool, error) { events = append(events, ev); return true, nil }); err != nil {
		t.Fatal(err)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	serial := newLedger(t, ledger.Options{})
	for _, ev := range events {
		out, err := serial.Append(ctx, []Submission{{Name: ev.ID, Data: ev.Data, Arrival: ev.AppendedAt}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Status != ledger.StatusAppended || out[0].Seq != ev.Seq {
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
	a, b := newLedger(t, ledger.Options{}), newLedger(t, ledger.Options{})
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
	if diff := ledgertest.Diff(dump(t, &a), dump(t, &b)); diff != "" {
		t.Errorf("ledgers differ: %s", diff)
	}
}

// archive exports l and returns the decompressed JSON lines.
func archiveLines(t testing.TB, l *Ledger) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	zr, err := zstd.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
}

func compress(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if _, err := zw.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zw.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportAtomic tampers with an archive in the ways the review did: a
// changed document, a changed header root, a changed checkpoint, a
// truncated archive. Each import fails and leaves the target empty and
// importable; the intact archive then imports.
func TestImportAtomic(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, ledger.Options{})
	appendReceipts(t, src, 0, 300)
	lines := archiveLines(t, src)
	lines[len(lines)-1] = bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))
	edit := func(i int, old, new string) [][]byte {
		out := append([][]byte(nil), lines...)
		out[i] = bytes.Replace(lines[i], []byte(old), []byte(new), 1)
		if bytes.Equal(out[i], lines[i]) {
			t.Fatalf("edit of line %d found no %q", i, old)
		}
		return out
	}
	hdr := string(lines[0])
	rootAt := strings.Index(hdr, `"root":"`) + len(`"root":"`)
	cases := map[string][]byte{
		"document":   compress(t, edit(300, `"data":"`, `"data":"AAAA`)),
		"root":       compress(t, edit(0, hdr[rootAt:rootAt+4], "AAAA")),
		"checkpoint": compress(t, edit(0, `"checkpoint":"test.example`, `"checkpoint":"Test.example`)),
		"truncated":  compress(t, lines[:200]),
	}
	dir := filepath.Join(t.TempDir(), "target")
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "target"}); err != nil {
		t.Fatal(err)
	}
	for name, arch := range cases {
		if _, err := Import(ctx, dir, bytes.NewReader(arch), ImportOptions{}); err == nil {
			t.Errorf("%s: tampered archive imported", name)
		}
		l, err := Open(dir, ledger.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: target after the failed import: %v", name, err)
		}
		if l.Size() != 0 || l.Origin() != "target" {
			t.Errorf("%s: target holds %d events, origin %q", name, l.Size(), l.Origin())
		}
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}
	st, err := Import(ctx, dir, bytes.NewReader(compress(t, lines)), ImportOptions{})
	if err != nil || st.Events != 300 {
		t.Fatalf("import of the intact archive: %+v %v", st, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".target.import-*")); len(leftovers) != 0 {
		t.Errorf("staging directories left behind: %v", leftovers)
	}
}

// TestImportBomb imports a small archive whose one line decompresses to
// hundreds of megabytes (the review's 72 KB archive drove import past 6 GB):
// the line is refused at its cap, and memory stays bounded.
func TestImportBomb(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write([]byte(`{"format":"ledger-export","version":1,"origin":"x","size":1,"root":"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}` + "\n")); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("A"), 1<<20)
	for range 300 {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 200<<10 {
		t.Fatalf("bomb of %d bytes", buf.Len())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dir := filepath.Join(t.TempDir(), "bombed")
	_, err = Import(context.Background(), dir, &buf, ImportOptions{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ledger.ErrImport) || !strings.Contains(err.Error(), "line 2: line longer than") {
		t.Fatalf("import of the bomb = %v", err)
	}
	// HeapSys only grows while the process holds more heap: its growth
	// bounds the import's peak.
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 512<<20 {
		t.Errorf("the bomb grew the heap by %d MB", grew>>20)
	}
	t.Logf("heap grew by %d MB (allocated %d MB in all)", (int64(after.HeapSys)-int64(before.HeapSys))>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed import created the target: %v", err)
	}
}

package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
	"github.com/proofledger/ledger/proof"
)

// sampleDoc is a document of the big ledger kept for the replay and
// lookup figures.
type sampleDoc struct {
	name, id string
	data     []byte
}

// bigLedger builds the --events ledger of small receipts through the real
// append path and measures replay checks, lookups, reputation queries,
// inclusion proofs, bytes on disk and the full audit at that size.
func (b *bench) bigLedger(ctx context.Context) error {
	n := b.sizes.Events
	cfg := ledgertest.Config{
		Seed: b.sizes.Seed + 1, Receipts: n, Agents: max(8*b.sizes.Appenders, n/500), AgentSkew: -1,
		MinDetails: 1, MaxDetails: 4,
	}
	keys := cfg.Keys()
	spool := filepath.Join(b.work, "big-corpus.spool")
	defer func() { _ = os.Remove(spool) }() // best effort: a scratch file in the work directory
	sample, rawBytes, err := b.writeSpool(ctx, spool, cfg)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	dir := filepath.Join(b.work, "big-ledger")
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a scratch ledger in the work directory
	if err := b.buildBig(ctx, dir, spool, keys, sample); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := b.replayAndLookups(ctx, dir, keys, sample); err != nil {
		return err
	}
	norm, err := cfg.Normalized()
	if err != nil {
		return err
	}
	if err := b.reputation(ctx, dir, norm.Start.Add(norm.Span)); err != nil {
		return fmt.Errorf("reputation: %w", err)
	}
	if err := b.proofLimits(ctx); err != nil {
		return err
	}
	if err := b.bytesOnDisk(ctx, dir, rawBytes); err != nil {
		return err
	}
	if err := b.auditFigure(ctx, dir); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// writeSpool streams the corpus to a spool file (so that generating it
// does not compete with ingest for the CPU) and keeps an evenly spread
// sample of documents. It returns the sample and the documents' total size.
func (b *bench) writeSpool(ctx context.Context, path string, cfg ledgertest.Config) ([]sampleDoc, int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, 0, err
	}
	// On success f is closed, and its error returned, below; on failure
	// the spool is never read, and this only frees f.
	defer func() { _ = f.Close() }()
	w := bufio.NewWriterSize(f, 1<<20)
	stride := max(1, cfg.Receipts/b.sizes.Sample)
	var sample []sampleDoc
	var total int64
	b.progress.Info("generating the big corpus", "receipts", cfg.Receipts, "agents", cfg.Agents)
	start, last := time.Now(), time.Now()
	var buf []byte
	err = ledgertest.StreamContext(ctx, cfg, func(d ledgertest.Doc) error {
		buf = binary.AppendUvarint(buf[:0], uint64(len(d.Subject)))
		buf = append(buf, d.Subject...)
		buf = binary.AppendUvarint(buf, uint64(len(d.Data)))
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if _, err := w.Write(d.Data); err != nil {
			return err
		}
		total += int64(len(d.Data))
		if d.Index%stride == 0 && len(sample) < b.sizes.Sample {
			sample = append(sample, sampleDoc{name: d.Name, id: d.ID, data: d.Data})
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			b.progress.Info("generating", "docs", d.Index+1, "of", cfg.Receipts)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if err := w.Flush(); err != nil {
		return nil, 0, err
	}
	b.fact("generate.big_corpus", float64(cfg.Receipts)/time.Since(start).Seconds(), "docs/s")
	b.fact("build.raw_bytes_per_event", float64(total)/float64(cfg.Receipts), "bytes/event")
	return sample, total, f.Close()
}

// spoolReader reads the spool written by writeSpool.
type spoolReader struct {
	r *bufio.Reader
	i int
}

func (s *spoolReader) next() (ledgertest.Doc, error) {
	readBytes := func() ([]byte, error) {
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return nil, err
		}
		out := make([]byte, n)
		_, err = io.ReadFull(s.r, out)
		return out, err
	}
	subject, err := readBytes()
	if err != nil {
		return ledgertest.Doc{}, err // io.EOF at the end
	}
	data, err := readBytes()
	if err != nil {
		return ledgertest.Doc{}, fmt.Errorf("spool: %w", err)
	}
	d := ledgertest.Doc{Index: s.i, Kind: codec.KindVRF, Name: fmt.Sprintf("receipt %d", s.i), Subject: string(subject), Data: data}
	s.i++
	return d, nil
}

// buildBig appends the spooled corpus to a fresh ledger from the
// appenders, BuildPerCall documents per Append call, each agent's chain
// from one appender, and adds the build figure.
func (b *bench) buildBig(ctx context.Context, dir, spool string, keys ledgertest.Keys, sample []sampleDoc) error {
	l, err := b.initLedger(dir, "bench.proofledger.local/big")
	if err != nil {
		return err
	}
	f, err := os.Open(spool)
	if err != nil {
		_ = l.Close() // err is the error to report
		return err
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose
	opts := trust(keys)
	lanes := make([]chan ledgertest.Doc, b.sizes.Appenders)
	for i := range lanes {
		lanes[i] = make(chan ledgertest.Doc, 2*b.sizes.BuildPerCall)
	}
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	fail := func(err error) { once.Do(func() { firstErr = err }) }
	var done atomic.Int64
	stop := make(chan struct{})
	cpuBefore, err := b.cpuLimit(ctx, false, 0)
	if err != nil {
		_ = l.Close() // err is the error to report
		return err
	}
	b.progress.Info("building the big ledger", "events", b.sizes.Events, "appenders", len(lanes), "docs_per_call", b.sizes.BuildPerCall)
	start := time.Now()
	go func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.progress.Info("building", "events", done.Load(), "of", b.sizes.Events, "events_per_s", int(float64(done.Load())/time.Since(start).Seconds()))
			case <-stop:
				return
			}
		}
	}()
	for _, ch := range lanes {
		wg.Go(func() {
			subs := make([]admit.Submission, 0, b.sizes.BuildPerCall)
			failed := false
			for d := range ch {
				if failed {
					continue // drain so the reader never blocks
				}
				subs = append(subs[:0], admit.Submission{Name: d.Name, Data: d.Data})
			more:
				for len(subs) < b.sizes.BuildPerCall {
					select {
					case d2, ok := <-ch:
						if !ok {
							break more
						}
						subs = append(subs, admit.Submission{Name: d2.Name, Data: d2.Data})
					default:
						break more
					}
				}
				if err := appendCounted(ctx, l, subs, opts, &done); err != nil {
					fail(err)
					failed = true
				}
			}
		})
	}
	sr := &spoolReader{r: bufio.NewReaderSize(f, 1<<20)}
	var rerr error
	for rerr == nil {
		var d ledgertest.Doc
		if d, rerr = sr.next(); rerr == nil {
			select {
			case lanes[lane(d, len(lanes))] <- d:
			case <-ctx.Done():
				rerr = ctx.Err()
			}
		}
	}
	for _, ch := range lanes {
		close(ch)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	batches, cerr := commitSizes(l.Ledger)
	if err := l.Close(); cerr == nil {
		cerr = err
	}
	if !errors.Is(rerr, io.EOF) {
		return rerr
	}
	if firstErr != nil {
		return firstErr
	}
	if cerr != nil {
		return cerr
	}
	if got := done.Load(); got != int64(b.sizes.Events) {
		return fmt.Errorf("appended %d events, want %d", got, b.sizes.Events)
	}
	cpuAfter, err := b.cpuLimit(ctx, false, 0)
	if err != nil {
		return err
	}
	// The disk limit replays the build's first DiskReplay events' batches
	// with the sample's bytes.
	var replay []int64
	for i, left := 0, int64(b.sizes.DiskReplay); i < len(batches) && left > 0; i++ {
		replay = append(replay, min(batches[i], left))
		left -= batches[i]
	}
	disk, err := b.diskLimit(ctx, fmt.Sprintf("build.events=%d", b.sizes.Events), func(i int) []byte { return sample[i%len(sample)].data }, replay)
	if err != nil {
		return err
	}
	limit, limitName := max(cpuBefore, cpuAfter), "cpu: 1 Ed25519 verification per receipt"
	if disk < limit {
		limit, limitName = disk, "disk: raw pebble synced batches"
	}
	eps := float64(b.sizes.Events) / elapsed.Seconds()
	b.add(figure{Name: fmt.Sprintf("build.events=%d", b.sizes.Events), Value: eps, Unit: "events/s", Limit: limit, LimitName: limitName,
		Note: fmt.Sprintf("%d receipts in %.1f s through admit.Ledger.Append (%d appenders, %d documents per call, %d commits of %.1f events on average)",
			b.sizes.Events, elapsed.Seconds(), len(lanes), b.sizes.BuildPerCall, len(batches), float64(b.sizes.Events)/float64(len(batches)))})
	b.fact("build.seconds", elapsed.Seconds(), "s")
	b.fact("build.mean_batch", float64(b.sizes.Events)/float64(len(batches)), "events/commit")
	return nil
}

// replayAndLookups measures the limits of the replay figures on a limit
// store filled from the big ledger (rawGets), then, on the reopened
// ledger, ledger.Lookup, replay checks (ledger.Seen), appends of present
// documents (StatusReplay), ledger.ProveInclusion and
// InclusionProof.Verify.
func (b *bench) replayAndLookups(ctx context.Context, dir string, keys ledgertest.Keys, sample []sampleDoc) (err error) {
	procs := runtime.GOMAXPROCS(0)
	rs := make([]*rand.Rand, max(procs, b.sizes.Appenders)) // one per goroutine of rate
	for i := range rs {
		rs[i] = rand.New(rand.NewPCG(b.sizes.Seed, uint64(i)))
	}
	gets, identGets, err := b.rawGets(ctx, dir, sample, rs)
	if err != nil {
		return fmt.Errorf("raw gets: %w", err)
	}

	l, err := b.openLedger(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}()
	size := l.Size()
	at := fmt.Sprintf("at %d events", size)

	b.progress.Info("measuring ledger.Lookup", "goroutines", procs)
	lookups, err := rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		s := sample[rs[w].IntN(len(sample))]
		ev, err := l.Lookup(s.id)
		if err != nil {
			return fmt.Errorf("lookup %s: %w", s.id, err)
		}
		if ev.ID != s.id {
			return fmt.Errorf("lookup %s found %s", s.id, ev.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.add(figure{Name: "replay.lookup", Value: lookups, Unit: "lookups/s", Limit: gets, LimitName: "raw pebble Get of random present keys",
		Note: "ledger.Lookup(receipt_id) on GOMAXPROCS goroutines " + at + "; the limit's store holds the same events' identity and digest entries, leaves, documents and tree hashes"})

	b.progress.Info("measuring ledger.Seen", "goroutines", procs)
	checks, err := rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		s := sample[rs[w].IntN(len(sample))]
		_, found, err := l.Seen(codec.KindVRF, s.id)
		if err != nil {
			return fmt.Errorf("seen %s: %w", s.id, err)
		}
		if !found {
			return fmt.Errorf("seen %s: not found", s.id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.add(figure{Name: "replay.check", Value: checks, Unit: "checks/s", Limit: identGets, LimitName: "raw pebble Get of random identity keys",
		Goal: goalReplayChecks, GoalName: "above 1M checks/s at 1M events (issue)",
		Note: "ledger.Seen(vrf, receipt_id), the identity point lookup an append makes, on GOMAXPROCS goroutines " + at + "; the limit Gets the same receipts' identity keys from a store of its own holding one per event"})

	opts := trust(keys)
	b.progress.Info("measuring replay checks", "appenders", b.sizes.Appenders)
	replays, err := rate(ctx, b.sizes.Appenders, b.sizes.Measure, func(w, _ int) error {
		s := sample[rs[w].IntN(len(sample))]
		out, err := l.AppendWithRetry(ctx, []admit.Submission{{Name: s.name, Data: s.data}}, opts)
		if err != nil {
			return err
		}
		if out[0].Status != ledger.StatusReplay {
			return fmt.Errorf("append of present %s: %s, want replay", s.id, out[0].Status)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.add(figure{Name: "replay.append", Value: replays, Unit: "replays/s", Limit: gets, LimitName: "raw pebble Get of random present keys",
		Note: fmt.Sprintf("admit.Ledger.Append of present receipts, one per call on %d goroutines, all StatusReplay %s: SHA-256 of the document and one digest lookup, no decoding", b.sizes.Appenders, at)})

	b.progress.Info("measuring ledger.ProveInclusion", "goroutines", procs)
	prove, err := rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		_, err := l.ProveInclusion(rs[w].Int64N(size), 0)
		return err
	})
	if err != nil {
		return err
	}
	proofs := make([]*proof.InclusionProof, 256)
	for i := range proofs {
		if proofs[i], err = l.ProveInclusion(rs[0].Int64N(size), 0); err != nil {
			return err
		}
	}
	vkey := l.VerifierKey()
	b.progress.Info("measuring InclusionProof.Verify", "goroutines", procs)
	verify, err := rate(ctx, procs, b.sizes.Measure, func(w, i int) error {
		_, err := proofs[(w*7919+i)%len(proofs)].Verify(vkey, nil)
		return err
	})
	if err != nil {
		return err
	}
	b.proveRate, b.verifyRate, b.proofNote = prove, verify, at
	return nil
}

// proofLimits builds an in-memory tlog hash store of the same size as the
// big ledger and measures bare tlog.ProveRecord and CheckRecord on it, the
// limits of the proof figures measured by replayAndLookups.
func (b *bench) proofLimits(ctx context.Context) error {
	n := int64(b.sizes.Events)
	b.progress.Info("building an in-memory hash store", "records", n)
	hashes := make([]tlog.Hash, 0, 2*n+64)
	// Built on one goroutine, then only read.
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(hashes)) {
				return nil, fmt.Errorf("hash %d not stored", x)
			}
			out[i] = hashes[x]
		}
		return out, nil
	})
	leaf := func(i int64) tlog.Hash { return tlog.RecordHash(binary.BigEndian.AppendUint64(nil, uint64(i))) }
	for i := range n {
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		hs, err := tlog.StoredHashesForRecordHash(i, leaf(i), reader)
		if err != nil {
			return err
		}
		hashes = append(hashes, hs...)
	}
	root, err := tlog.TreeHash(n, reader)
	if err != nil {
		return err
	}
	procs := runtime.GOMAXPROCS(0)
	rs := make([]*rand.Rand, procs)
	for i := range rs {
		rs[i] = rand.New(rand.NewPCG(b.sizes.Seed, 0x70726f6f66+uint64(i)))
	}
	proveLimit, err := rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		_, err := tlog.ProveRecord(n, rs[w].Int64N(n), reader)
		return err
	})
	if err != nil {
		return err
	}
	type proof struct {
		i int64
		p tlog.RecordProof
	}
	proofs := make([]proof, 256)
	for k := range proofs {
		i := rs[0].Int64N(n)
		p, err := tlog.ProveRecord(n, i, reader)
		if err != nil {
			return err
		}
		proofs[k] = proof{i, p}
	}
	checkLimit, err := rate(ctx, procs, b.sizes.Measure, func(w, i int) error {
		p := proofs[(w*7919+i)%len(proofs)]
		return tlog.CheckRecord(p.p, n, root, p.i, leaf(p.i))
	})
	if err != nil {
		return err
	}
	b.add(figure{Name: "proof.inclusion.prove", Value: b.proveRate, Unit: "proofs/s", Limit: proveLimit, LimitName: "tlog.ProveRecord, in-memory hashes",
		Note: "ledger.ProveInclusion(random seq, latest) on GOMAXPROCS goroutines " + b.proofNote})
	b.add(figure{Name: "proof.inclusion.verify", Value: b.verifyRate, Unit: "verifications/s", Limit: checkLimit, LimitName: "tlog.CheckRecord",
		Note: "InclusionProof.Verify (checkpoint signature, Merkle path, leaf) on GOMAXPROCS goroutines " + b.proofNote})
	return nil
}

// bytesOnDisk measures the big ledger's directory, compacted
// (ledger.Compact) and closed, against the raw document bytes.
func (b *bench) bytesOnDisk(ctx context.Context, dir string, rawBytes int64) error {
	l, err := b.openLedger(dir)
	if err != nil {
		return err
	}
	start := time.Now()
	err = l.Compact(ctx)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	b.fact("store.compaction_seconds", time.Since(start).Seconds(), "s")
	size, err := dirSize(dir)
	if err != nil {
		return err
	}
	n := float64(b.sizes.Events)
	b.add(figure{Name: "disk.bytes_per_event", Value: float64(size) / n, Unit: "bytes/event", Limit: float64(rawBytes) / n,
		LimitName: "raw document bytes", Better: "lower",
		Note: fmt.Sprintf("ledger directory after ledger.Compact and Close: %.1f MB for %d events (documents, leaves, tree hashes, indexes, checkpoints; Pebble block compression)", float64(size)/1e6, b.sizes.Events)})
	return nil
}

// appendCounted appends subs (waiting out pushback), requires every one to
// be appended, and adds them to done.
func appendCounted(ctx context.Context, l *admit.Ledger, subs []admit.Submission, opts admit.Options, done *atomic.Int64) error {
	out, err := l.AppendWithRetry(ctx, subs, opts)
	if err == nil {
		err = appended(out)
	}
	if err == nil {
		done.Add(int64(len(subs)))
	}
	return err
}

// rawGets fills a limit store from the big ledger in dir (opened read-only,
// so that it compacts nothing meanwhile) and measures on it, on GOMAXPROCS
// goroutines, raw Gets of random present keys (the limit of replay.lookup
// and replay.append) and raw Gets of the identity keys of the sample's
// receipts, which replay.check looks up (its limit). It removes the store.
func (b *bench) rawGets(ctx context.Context, dir string, sample []sampleDoc, rs []*rand.Rand) (gets, identGets float64, err error) {
	procs := runtime.GOMAXPROCS(0)
	storeDir, err := freshDir(filepath.Join(b.work, "limit-lookups"))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = os.RemoveAll(storeDir) }() // best effort: a scratch store in the work directory
	db, err := b.openLimitStore(storeDir, false)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	l, err := admit.Open(dir, b.queryOptions())
	if err != nil {
		return 0, 0, err
	}
	b.progress.Info("filling the lookup limit store from the big ledger", "events", l.Size())
	start := time.Now()
	st, err := b.fillLookupStore(ctx, l.Ledger, db, 65536)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, err
	}
	b.fact("replay.limit_store.seconds", time.Since(start).Seconds(), "s")
	b.fact("replay.limit_store.keys", float64(st.keys), "keys")

	get := func(k []byte) error {
		_, closer, err := db.Get(k)
		if err != nil {
			return fmt.Errorf("get %q: %w", k, err)
		}
		return closer.Close()
	}
	b.progress.Info("measuring raw pebble gets", "goroutines", procs)
	gets, err = rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		return get(st.present[rs[w].IntN(len(st.present))])
	})
	if err != nil {
		return 0, 0, err
	}
	// The replay check's limit: bare Gets of the identity keys of the
	// receipts replay.check looks up (the sample), a small, hot part of
	// the store. Warm the block cache first: the ledger's replay.check
	// runs after replay.lookup has read the same identities.
	idents := make([][]byte, len(sample))
	for i, s := range sample {
		idents[i] = identityKey(codec.KindVRF, s.id)
		if err := get(idents[i]); err != nil {
			return 0, 0, err
		}
	}
	b.progress.Info("measuring raw pebble gets of identity keys", "goroutines", procs)
	identGets, err = rate(ctx, procs, b.sizes.Measure, func(w, _ int) error {
		return get(idents[rs[w].IntN(len(idents))])
	})
	return gets, identGets, err
}

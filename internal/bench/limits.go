package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/ledger/ledgertest"
)

// The CPU limits of verified ingest are bare Ed25519 verifications (what
// a receipt or an attestation needs) and HMAC-SHA256 throughput (what a
// witness bundle needs). On a shared machine the CPU available changes
// from minute to minute, so besides the cpu.* figures measured first, each
// ingest figure re-measures its CPU limit around its own run (cpuLimit).

// verifyOp is one bare Ed25519 verification of a receipt-like message:
// the 64 hex digits of a content hash.
func verifyOp(seed uint64) func(int, int) error {
	k := ledgertest.NewKeys(seed, 1).Verifiers[0]
	pub := k.Public().(ed25519.PublicKey)
	sum := sha256.Sum256([]byte("ledger bench"))
	msg := []byte(hex.EncodeToString(sum[:]))
	sig := ed25519.Sign(k, msg)
	return func(int, int) error {
		if !ed25519.Verify(pub, msg, sig) {
			return fmt.Errorf("ed25519 signature does not verify")
		}
		return nil
	}
}

// hmacPayload is the size of the message hmacOp authenticates, about a
// typical witness bundle.
const hmacPayload = 10 << 10

// hmacOp is one HMAC-SHA256 over hmacPayload bytes.
func hmacOp() func(int, int) error {
	payload := make([]byte, hmacPayload)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	key := []byte("ledger bench hmac key")
	return func(int, int) error {
		m := hmac.New(sha256.New, key)
		m.Write(payload)
		m.Sum(nil)
		return nil
	}
}

// cpuLimits measures Ed25519 verifications and HMAC-SHA256 on one core and
// on GOMAXPROCS goroutines. The all-core rates are the figures; their limit
// is the one-core rate times GOMAXPROCS, so their ratio is the parallel
// scaling.
func (b *bench) cpuLimits(ctx context.Context) error {
	procs := runtime.GOMAXPROCS(0)
	verify := verifyOp(b.sizes.Seed)
	b.progress.Info("measuring Ed25519 verifications", "goroutines", procs)
	one, err := rate(ctx, 1, b.sizes.Measure, verify)
	if err != nil {
		return err
	}
	all, err := rate(ctx, procs, b.sizes.Measure, verify)
	if err != nil {
		return err
	}
	b.add(figure{Name: "cpu.ed25519_verify", Value: all, Unit: "verifications/s", Limit: one * float64(procs),
		LimitName: fmt.Sprintf("1 core x %d", procs), Note: "bare crypto/ed25519.Verify on GOMAXPROCS goroutines: the CPU limit of receipts and attestations"})

	mac := hmacOp()
	b.progress.Info("measuring HMAC-SHA256", "goroutines", procs)
	one, err = rate(ctx, 1, b.sizes.Measure, mac)
	if err != nil {
		return err
	}
	all, err = rate(ctx, procs, b.sizes.Measure, mac)
	if err != nil {
		return err
	}
	mb := float64(hmacPayload) / 1e6
	b.add(figure{Name: "cpu.hmac_sha256", Value: all * mb, Unit: "MB/s", Limit: one * mb * float64(procs),
		LimitName: fmt.Sprintf("1 core x %d", procs), Note: "HMAC-SHA256 over 10 KiB on GOMAXPROCS goroutines: the CPU limit of witness bundles"})
	return nil
}

// cpuLimit measures, on GOMAXPROCS goroutines, the documents per second
// the CPU could verify if verification were all ingest did: Ed25519
// verifications for receipts and attestations (one each), HMAC-SHA256
// throughput divided by the mean document size for bundles. Call it
// before and after the run it limits; the higher of the two readings is
// the limit (the machine had at least that much CPU to give).
func (b *bench) cpuLimit(ctx context.Context, bundles bool, bytesPerDoc float64) (float64, error) {
	procs := runtime.GOMAXPROCS(0)
	if !bundles {
		return rate(ctx, procs, b.sizes.Measure/2, verifyOp(b.sizes.Seed))
	}
	r, err := rate(ctx, procs, b.sizes.Measure/2, hmacOp())
	return r * hmacPayload / bytesPerDoc, err
}

// docSource yields document bytes in order, cycling when it runs out.
type docSource func(i int) []byte

// pebbleSyncLimit writes the documents' bytes to a fresh limit store in
// the given batch sizes (the ledger's, from commitSizes), each batch
// committed with pebble.Sync, one batch after the other as the ledger's
// sequencer commits them, and returns the documents per second and bytes
// written.
func (b *bench) pebbleSyncLimit(ctx context.Context, name string, docs docSource, batches []int64) (_ float64, _ int64, err error) {
	dir, err := freshDir(filepath.Join(b.work, "raw-pebble-"+name))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a scratch store in the work directory
	db, err := b.openLimitStore(dir, false)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	var key [10]byte
	copy(key[:], "d/")
	i, bytes := 0, int64(0)
	start := time.Now()
	for _, n := range batches {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		batch := db.NewBatch()
		for range n {
			binary.BigEndian.PutUint64(key[2:], uint64(i))
			d := docs(i)
			if err := batch.Set(key[:], d, nil); err != nil {
				_ = batch.Close() // releases memory; fails only for a batch closed twice
				return 0, 0, err
			}
			bytes += int64(len(d))
			i++
		}
		err := batch.Commit(pebble.Sync)
		_ = batch.Close() // releases memory; fails only for a batch closed twice
		if err != nil {
			return 0, 0, fmt.Errorf("raw pebble commit: %w", err)
		}
	}
	return float64(i) / time.Since(start).Seconds(), bytes, nil
}

// fileSyncLimit writes the same batches, one after the other, into a
// preallocated plain file, syncing each with fdatasync: the floor under
// any durable log on this disk (Pebble's write-ahead log is written the
// same way, into recycled, already allocated files).
func (b *bench) fileSyncLimit(ctx context.Context, name string, docs docSource, batches []int64) (float64, error) {
	path := filepath.Join(b.work, "raw-file-"+name)
	defer func() { _ = os.Remove(path) }() // best effort: a scratch file in the work directory
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	// Every write the limit counts is synced, with its error checked, and
	// the file is removed next: Close has nothing left to lose.
	defer func() { _ = f.Close() }()
	total, i := int64(0), 0
	for _, n := range batches {
		for range n {
			total += int64(len(docs(i)))
			i++
		}
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < total; off += int64(len(zeros)) {
		if _, err := f.Write(zeros[:min(int64(len(zeros)), total-off)]); err != nil {
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	var buf []byte
	off := int64(0)
	i = 0
	start := time.Now()
	for _, n := range batches {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		buf = buf[:0]
		for range n {
			buf = append(buf, docs(i)...)
			i++
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			return 0, err
		}
		off += int64(len(buf))
		if err := datasync(f); err != nil {
			return 0, err
		}
	}
	return float64(i) / time.Since(start).Seconds(), nil
}

// diskLimit measures the raw Pebble limit of a set of batches and adds it
// as a figure beside the plain-file limit. It returns the Pebble rate.
func (b *bench) diskLimit(ctx context.Context, name string, docs docSource, batches []int64) (float64, error) {
	b.progress.Info("measuring raw synced writes", "run", name, "batches", len(batches))
	pr, _, err := b.pebbleSyncLimit(ctx, name, docs, batches)
	if err != nil {
		return 0, err
	}
	fr, err := b.fileSyncLimit(ctx, name, docs, batches)
	if err != nil {
		return 0, err
	}
	events := int64(0)
	for _, n := range batches {
		events += n
	}
	b.add(figure{Name: "disk.pebble_sync." + name, Value: pr, Unit: "events/s", Limit: fr, LimitName: "preallocated file + fdatasync",
		Note: fmt.Sprintf("%d batches of %.1f documents on average, each committed with pebble.Sync", len(batches), float64(events)/float64(max(len(batches), 1)))})
	return pr, nil
}

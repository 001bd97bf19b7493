package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// Store keys, as docs/FORMAT.md lays them out.
func u64(n int64) []byte                { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
func key(prefix string, n int64) []byte { return append([]byte(prefix), u64(n)...) }
func leafKey(seq int64) []byte          { return key("leaf/", seq) }
func docKey(seq int64) []byte           { return key("doc/", seq) }
func hashKey(idx int64) []byte          { return key("hash/", idx) }
func ckptKey(size int64) []byte         { return key("checkpoint/", size) }

var kindCodes = map[codec.Kind]byte{codec.KindVRF: 1, codec.KindAVIRAttestation: 2, codec.KindAVIRSpec: 3, codec.KindRVWW: 4, ledger.KindRollback: 5}

func identKey(ev *ledger.Event) []byte {
	return append([]byte{'i', 'd', '/', kindCodes[ev.Kind]}, ev.ID...)
}
func digestKey(ev *ledger.Event) []byte { return append([]byte("digest/"), ev.Digest[:]...) }
func timeKey(ev *ledger.Event) []byte {
	k := binary.BigEndian.AppendUint64([]byte("time/"), uint64(ev.AppendedAt.UnixNano())^(1<<63))
	return append(k, u64(ev.Seq)...)
}

// flip changes one byte of the value at k (off < 0 counts from the end).
func flip(db *pebble.DB, k []byte, off int) error {
	v, err := get(db, k)
	if err != nil {
		return fmt.Errorf("%q: %w", k, err)
	}
	if off < 0 {
		off += len(v)
	}
	v[off] ^= 0x01
	return db.Set(k, v, pebble.Sync)
}

// rekey moves the value at k under k with one byte flipped.
func rekey(db *pebble.DB, k []byte, off int) error {
	v, err := get(db, k)
	if err != nil {
		return fmt.Errorf("%q: %w", k, err)
	}
	k2 := bytes.Clone(k)
	if off < 0 {
		off += len(k2)
	}
	k2[off] ^= 0x01
	return errors.Join(db.Delete(k, pebble.Sync), db.Set(k2, v, pebble.Sync))
}

// swap exchanges the values of two keys.
func swap(db *pebble.DB, a, b []byte) error {
	va, err := get(db, a)
	if err != nil {
		return err
	}
	vb, err := get(db, b)
	if err != nil {
		return err
	}
	return errors.Join(db.Set(a, vb, pebble.Sync), db.Set(b, va, pebble.Sync))
}

// rewriteDoc changes event seq's document with change and rewrites its
// leaf to commit to the new bytes (digest and size), as an attacker who
// rewrites a document and its leaf would; the tree hashes stay.
func rewriteDoc(db *pebble.DB, seq int64, change func([]byte) []byte) error {
	v, err := get(db, docKey(seq))
	if err != nil {
		return err
	}
	doc := change(bytes.Clone(v[1:]))
	lv, err := get(db, leafKey(seq))
	if err != nil {
		return err
	}
	leaf, err := proof.ParseLeaf(lv[1:])
	if err != nil {
		return err
	}
	leaf.Digest, leaf.Size = sha256.Sum256(doc), int64(len(doc))
	return errors.Join(db.Set(docKey(seq), append([]byte{0}, doc...), pebble.Sync),
		db.Set(leafKey(seq), append([]byte{1}, leaf.Encode()...), pebble.Sync))
}

// want is a problem an audit must report: one naming event seq whose text
// contains what.
type want struct {
	seq  int64
	what string
}

// TestTamper damages a generated ledger in every way an attacker with
// disk access, or a failing disk, could, through the store's own keys
// (Pebble on the closed store), one way per row. The audit must find
// every one of them and name the event.
func TestTamper(t *testing.T) {
	f := build(t, fixtureOptions{})
	receipts, bundles := f.seqOf(codec.KindVRF), f.seqOf(codec.KindRVWW)
	attestations, rollbacks := f.seqOf(codec.KindAVIRAttestation), f.seqOf(ledger.KindRollback)
	r := receipts[len(receipts)/2] // a receipt in the middle of the log
	if r%2 == 0 {
		r = receipts[len(receipts)/2+1]
	}
	b := bundles[len(bundles)/2]
	ev := func(seq int64) *ledger.Event { return f.events[seq] }
	// A receipt that has a successor, and the successor.
	var pred, succ int64 = -1, -1
	for _, s := range receipts {
		for _, lk := range ev(s).Links {
			if lk.Rel == ledger.RelPreviousReceipt && pred < 0 && lk.Seq > f.size/3 {
				pred, succ = lk.Seq, s
			}
		}
	}
	// A task's bundle that is linked from a later one.
	var taskEv *ledger.Event
	for _, s := range bundles {
		if len(ev(s).Links) > 0 && s > f.size/3 {
			taskEv = ev(s)
			break
		}
	}
	if pred < 0 || taskEv == nil {
		t.Fatal("the corpus has no chained receipt or repeated task")
	}
	// A signed size in the middle, and the latest.
	mid := f.midSize
	// The counter of receipts of one tier and verdict, and the last receipt counted in it.
	var ra attrs.Receipt
	if err := ra.Decode(ev(r).Attrs); err != nil {
		t.Fatal(err)
	}
	tierKey := append([]byte{'x', '/', 't', 'i', 'e', 'r', '/', byte(ra.Tier)}, ra.Verdict...)
	lastTier := int64(-1)
	for _, s := range receipts {
		var x attrs.Receipt
		if x.Decode(ev(s).Attrs) == nil && x.Tier == ra.Tier && x.Verdict == ra.Verdict {
			lastTier = s
		}
	}
	// The day's rollup of the last bundle, which that bundle changed last.
	lastB := ev(bundles[len(bundles)-1])
	var ba attrs.Bundle
	if err := ba.Decode(lastB.Attrs); err != nil {
		t.Fatal(err)
	}
	known := byte(0)
	if ba.PolicyKnown {
		known = 1
	}
	rollupKey := binary.BigEndian.AppendUint32([]byte("x/rollup/"), uint32(index.DayOf(lastB.Time))^(1<<31))
	rollupKey = append(append(rollupKey, ba.Policy[:]...), byte(ba.Mode), known)
	// An attestation's per-event system record.
	att := ev(attestations[len(attestations)/2])
	systemKey := append(append(append([]byte("x/system/"), att.Subject...), 0), u64(att.Seq)...)

	rows := []struct {
		name   string
		damage func(db *pebble.DB) error
		opts   ledger.AuditOptions
		want   []want
	}{
		{"document byte: receipt", func(db *pebble.DB) error { return flip(db, docKey(r), 200) },
			ledger.AuditOptions{}, []want{{r, "document does not match"}}},
		{"document byte: bundle", func(db *pebble.DB) error { return flip(db, docKey(b), 100) },
			ledger.AuditOptions{}, []want{{b, "document does not match"}}},
		{"document byte: attestation", func(db *pebble.DB) error { return flip(db, docKey(att.Seq), -30) },
			ledger.AuditOptions{}, []want{{att.Seq, "document does not match"}}},
		{"document byte: rollback", func(db *pebble.DB) error { return flip(db, docKey(rollbacks[0]), 20) },
			ledger.AuditOptions{}, []want{{rollbacks[0], "document does not match"}}},
		{"leaf byte", func(db *pebble.DB) error { return flip(db, leafKey(r), 60) },
			ledger.AuditOptions{}, []want{{r, "leaf"}}},
		{"leaf byte in attrs (still decodes)", func(db *pebble.DB) error {
			v, err := get(db, leafKey(b))
			if err != nil {
				return err
			}
			return db.Set(leafKey(b), bytes.Replace(v, []byte(`"retries":`), []byte(`"retries":1`), 1), pebble.Sync)
		}, ledger.AuditOptions{}, []want{{b, "does not match the tree hash"}, {b, "attrs"}}},
		{"tree hash of a leaf", func(db *pebble.DB) error { return flip(db, hashKey(tlog.StoredHashIndex(0, r)), 7) },
			ledger.AuditOptions{}, []want{{r, "does not match the tree hash"}}},
		{"interior tree hash", func(db *pebble.DB) error { return flip(db, hashKey(tlog.StoredHashIndex(0, r)+1), 7) },
			ledger.AuditOptions{}, []want{{r, "stored tree hash"}}},
		{"identity entry: digest", func(db *pebble.DB) error { return flip(db, identKey(ev(r)), 20) },
			ledger.AuditOptions{}, []want{{r, "identity index entry"}}},
		{"identity entry: seq", func(db *pebble.DB) error { return flip(db, identKey(ev(b)), 7) },
			ledger.AuditOptions{}, []want{{b, "identity index entry"}}},
		{"identity entry: key", func(db *pebble.DB) error { return rekey(db, identKey(ev(b)), -1) },
			ledger.AuditOptions{}, []want{{b, "identity index entry"}}},
		{"digest entry: key", func(db *pebble.DB) error { return rekey(db, digestKey(ev(r)), 12) },
			ledger.AuditOptions{}, []want{{r, "digest index entry"}}},
		{"digest entry: value", func(db *pebble.DB) error { return flip(db, digestKey(ev(att.Seq)), -2) },
			ledger.AuditOptions{}, []want{{att.Seq, "digest index entry"}}},
		{"time entry: key", func(db *pebble.DB) error { return rekey(db, timeKey(ev(r)), 9) },
			ledger.AuditOptions{}, []want{{r, "time index entry"}}},
		{"time entry: deleted", func(db *pebble.DB) error { return db.Delete(timeKey(ev(b)), pebble.Sync) },
			ledger.AuditOptions{}, []want{{b, "time index entry"}}},
		{"chain link: position", func(db *pebble.DB) error { return flip(db, append([]byte("chain/"), ev(succ).ID...), 8) },
			ledger.AuditOptions{}, []want{{succ, "chain/"}}},
		{"chain link: successor deleted", func(db *pebble.DB) error {
			return db.Delete(append([]byte("next/"), ev(pred).ID...), pebble.Sync)
		}, ledger.AuditOptions{}, []want{{succ, "next/"}}},
		{"task link", func(db *pebble.DB) error {
			k := append(append(append([]byte("task/"), taskEv.Subject...), 0), u64(taskEv.Seq)...)
			return flip(db, k, 3)
		}, ledger.AuditOptions{}, []want{{taskEv.Seq, "task/"}}},
		{"projection: counter", func(db *pebble.DB) error { return flip(db, tierKey, 0) },
			ledger.AuditOptions{}, []want{{lastTier, "projection entry x/tier/"}}},
		{"projection: rollup", func(db *pebble.DB) error { return flip(db, rollupKey, 1) },
			ledger.AuditOptions{}, []want{{lastB.Seq, "projection entry x/rollup/"}}},
		{"projection: record", func(db *pebble.DB) error { return flip(db, systemKey, -1) },
			ledger.AuditOptions{}, []want{{att.Seq, "projection entry x/system/"}}},
		{"projection: deleted", func(db *pebble.DB) error { return db.Delete(systemKey, pebble.Sync) },
			ledger.AuditOptions{}, []want{{att.Seq, "is missing"}}},
		{"projection: added", func(db *pebble.DB) error {
			return db.Set(append(bytes.Clone(systemKey[:len(systemKey)-1]), 0xee), []byte{1, 2}, pebble.Sync)
		}, ledger.AuditOptions{}, []want{{-1, "not implied by any event"}}},
		{"signature in a receipt, leaf rewritten to match", func(db *pebble.DB) error {
			return rewriteDoc(db, r, func(d []byte) []byte {
				i := bytes.LastIndex(d, []byte(`"signature": "`)) + len(`"signature": "`) + 10
				if d[i] == '0' { // another hex digit
					d[i] = '1'
				} else {
					d[i] = '0'
				}
				return d
			})
		}, ledger.AuditOptions{}, []want{{r, "does not match the tree hash"}, {r, "does not verify"}}},
		{"HMAC of a bundle, leaf rewritten to match", func(db *pebble.DB) error {
			return rewriteDoc(db, b, func(d []byte) []byte { d[len(d)-1] ^= 0x80; return d })
		}, ledger.AuditOptions{}, []want{{b, "does not match the tree hash"}, {b, "does not verify"}}},
		{"signature of a rollback, leaf rewritten to match", func(db *pebble.DB) error {
			return rewriteDoc(db, rollbacks[1], func(d []byte) []byte {
				return bytes.Replace(d, []byte(`"restored_clean": false`), []byte(`"restored_clean": true`), 1)
			})
		}, ledger.AuditOptions{}, []want{{rollbacks[1], "does not verify"}}},
		{"event deleted", func(db *pebble.DB) error {
			return errors.Join(db.Delete(leafKey(r), pebble.Sync), db.Delete(docKey(r), pebble.Sync))
		}, ledger.AuditOptions{}, []want{{r, "missing"}}},
		{"event deleted with its tree hash", func(db *pebble.DB) error {
			return errors.Join(db.Delete(leafKey(b), pebble.Sync), db.Delete(docKey(b), pebble.Sync), db.Delete(hashKey(tlog.StoredHashIndex(0, b)), pebble.Sync))
		}, ledger.AuditOptions{}, []want{{b, "missing"}, {b, "neither its leaf nor its tree hash"}}},
		{"two events swapped", func(db *pebble.DB) error {
			return errors.Join(swap(db, leafKey(r), leafKey(b)), swap(db, docKey(r), docKey(b)))
		}, ledger.AuditOptions{}, []want{{r, "moved or swapped"}, {b, "moved or swapped"}, {r, "tree hash"}, {b, "tree hash"}}},
		{"checkpoint re-signed with another key", func(db *pebble.DB) error {
			return db.Set(ckptKey(mid), resign(t, db, mid, testKey(9), ""), pebble.Sync)
		}, ledger.AuditOptions{}, []want{{mid - 1, "key mismatch"}}},
		{"checkpoint forged: another root, another key", func(db *pebble.DB) error {
			return db.Set(ckptKey(mid), resign(t, db, mid, testKey(9), "other root"), pebble.Sync)
		}, ledger.AuditOptions{}, []want{{mid - 1, "does not verify"}}},
		{"latest checkpoint re-signed with another key", func(db *pebble.DB) error {
			return db.Set(ckptKey(f.size), resign(t, db, f.size, testKey(9), ""), pebble.Sync)
		}, ledger.AuditOptions{}, []want{{-1, "does not verify"}, {f.size - 1, "key mismatch"}}},
		{"meta/size lowered", func(db *pebble.DB) error { return db.Set([]byte("meta/size"), u64(f.size-1), pebble.Sync) },
			ledger.AuditOptions{}, []want{{-1, ""}}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := f.copyDir(t)
			edit(t, dir, row.damage)
			rep := runAudit(t, dir, row.opts)
			if testing.Verbose() {
				t.Logf("found:\n%s", listProblems(rep))
			}
			if rep.OK() {
				t.Fatal("the audit found nothing")
			}
			for _, w := range row.want {
				if !names(rep, w.seq, w.what) {
					t.Errorf("no problem names event %d saying %q; found:\n%s", w.seq, w.what, listProblems(rep))
				}
			}
		})
	}
}

// resign returns the checkpoint stored for size signed by another key
// under the log's origin (for another root when other is set).
func resign(t testing.TB, db *pebble.DB, size int64, key []byte, other string) []byte {
	t.Helper()
	note, err := get(db, ckptKey(size))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(note, []byte("\n\n"))
	c, err := proof.ParseCheckpoint(string(note[:i+1]))
	if err != nil {
		t.Fatal(err)
	}
	if other != "" {
		c.Root = sha256.Sum256([]byte(other))
	}
	s, _, err := proof.NewSigner(origin, key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := proof.Sign(c, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listProblems(rep *ledger.AuditReport) string {
	var b bytes.Buffer
	for _, p := range rep.Problems {
		fmt.Fprintf(&b, "  [%d] %s\n", p.Seq, p.What)
	}
	if rep.Omitted > 0 {
		fmt.Fprintf(&b, "  … and %d more\n", rep.Omitted)
	}
	return b.String()
}

// TestRollback replaces the store with a copy taken when the ledger was
// half its size, as an attacker restoring an old backup would. With the
// checkpoint log kept, the ledger knows it signed for more (damaged). With
// the checkpoint log rolled back too, nothing inside the ledger directory
// can tell: the audit is clean, and only a checkpoint saved earlier
// (--against) catches it.
func TestRollback(t *testing.T) {
	f := build(t, fixtureOptions{})
	restore := func(t *testing.T, files ...string) string {
		dir := f.copyDir(t)
		for _, name := range files {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(filepath.Join(dir, name), os.DirFS(filepath.Join(f.mid, name))); err != nil {
				// a file, not a directory
				data, rerr := os.ReadFile(filepath.Join(f.mid, name))
				if rerr != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	t.Run("store only", func(t *testing.T) {
		rep := runAudit(t, restore(t, "store"), ledger.AuditOptions{})
		if rep.OK() || !names(rep, f.midSize, "are missing") || !names(rep, -1, fmt.Sprintf("signed a checkpoint of size %d", f.size)) {
			t.Errorf("found:\n%s", listProblems(rep))
		}
	})
	t.Run("store and checkpoint log", func(t *testing.T) {
		dir := restore(t, "store", "checkpoints")
		if rep := runAudit(t, dir, ledger.AuditOptions{}); !rep.OK() {
			t.Fatalf("an older, complete ledger audits with problems:\n%s", listProblems(rep))
		}
		for _, opts := range []ledger.AuditOptions{{Against: f.saved}, {Against: f.saved, AgainstOnly: true}} {
			rep := runAudit(t, dir, opts)
			if rep.OK() || !names(rep, f.midSize, "ROLLBACK") || rep.Against == nil || rep.Against.Consistent || !rep.Against.Verified {
				t.Errorf("%+v: found:\n%s", opts.AgainstOnly, listProblems(rep))
			}
		}
	})
}

// TestAgainst checks saved checkpoints: the latest and an older one are
// consistent (by the recomputed tree or by a consistency proof); one
// signed by another key is a key mismatch; one for a tree the log no
// longer has at its size is a fork.
func TestAgainst(t *testing.T) {
	f := build(t, fixtureOptions{})
	var old []byte
	edit(t, f.copyDir(t), func(db *pebble.DB) error {
		var err error
		old, err = get(db, ckptKey(f.midSize))
		return err
	})
	for _, c := range []struct {
		name   string
		note   []byte
		opts   ledger.AuditOptions
		method string
	}{
		{"latest, whole audit", f.saved, ledger.AuditOptions{}, "recomputed tree"},
		{"latest, alone", f.saved, ledger.AuditOptions{AgainstOnly: true}, "consistency proof"},
		{"older, whole audit", old, ledger.AuditOptions{}, "recomputed tree"},
		{"older, alone", old, ledger.AuditOptions{AgainstOnly: true}, "consistency proof"},
		{"older, audit from after it", old, ledger.AuditOptions{From: f.midSize + 5}, "consistency proof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Against = c.note
			rep := runAudit(t, f.dir, c.opts)
			if !rep.OK() || rep.Against == nil || !rep.Against.Verified || !rep.Against.Consistent || rep.Against.Method != c.method {
				t.Errorf("against %+v:\n%s", rep.Against, listProblems(rep))
			}
		})
	}
	var rekeyed, forked []byte
	edit(t, f.copyDir(t), func(db *pebble.DB) error {
		rekeyed = resign(t, db, f.midSize, testKey(9), "")
		forked = resign(t, db, f.midSize, testKey(1), "a rewritten history")
		return nil
	})
	for _, alone := range []bool{false, true} {
		rep := runAudit(t, f.dir, ledger.AuditOptions{Against: rekeyed, AgainstOnly: alone})
		if rep.OK() || !names(rep, -1, "key mismatch") || rep.Against.Verified {
			t.Errorf("another key (alone %v):\n%s", alone, listProblems(rep))
		}
		rep = runAudit(t, f.dir, ledger.AuditOptions{Against: forked, AgainstOnly: alone})
		if rep.OK() || !names(rep, -1, "FORK") || !rep.Against.Verified || rep.Against.Consistent {
			t.Errorf("fork (alone %v):\n%s", alone, listProblems(rep))
		}
	}
}

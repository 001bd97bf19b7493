package ledger

import (
	"bytes"
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/codec"
)

// AuditReport is what Audit found.
type AuditReport struct {
	// Events is the number of events the store says it holds.
	Events int64
	// Root is the tree root recomputed from the events' leaves.
	Root tlog.Hash
	// Problems lists every inconsistency found; empty means the store is sound.
	Problems []string
}

// OK reports whether the audit found nothing wrong.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds an audit report.
const maxProblems = 200

// Audit checks the store's structure from scratch: events are dense from 0
// with nothing beyond the recorded size; each event's bytes match its
// digest and its leaf names its own sequence number; the Merkle tree
// recomputed from the leaves matches every stored hash and the latest
// signed checkpoint; and the identity, time, task and chain indexes hold
// exactly the entries the events imply.
func (l *Ledger) Audit(ctx context.Context) (*AuditReport, error) {
	rep := &AuditReport{Events: l.Size()}
	problem := func(format string, args ...any) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...))
		}
	}
	n := rep.Events
	hashes := make([]tlog.Hash, 0, tlog.StoredHashCount(n))
	mem := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(hashes)) {
				return nil, fmt.Errorf("hash %d not computed", x)
			}
			out[i] = hashes[x]
		}
		return out, nil
	})
	wantIdent := map[string][]byte{}
	wantTime := map[string]bool{}
	wantTask := map[string]bool{}
	wantDigest := map[string][]byte{}
	wantHead := map[string][]byte{}
	wantSucc := map[string]int64{}
	var next int64
	var lastAppended int64
	err := l.Scan(0, true, func(ev *Event) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if ev.Seq != next {
			problem("event %d: expected event %d next (events are not dense)", ev.Seq, next)
			next = ev.Seq
		}
		next++
		if ev.Seq >= n {
			problem("event %d: beyond the recorded size %d (a partial batch is visible)", ev.Seq, n)
			return true, nil
		}
		if sha256Sum(ev.Data) != ev.Digest || int64(len(ev.Data)) != ev.Size {
			problem("event %d: document bytes do not match the leaf's digest and size", ev.Seq)
		}
		if t := ev.AppendedAt.UnixNano(); t < lastAppended {
			problem("event %d: appended_at goes backwards", ev.Seq)
		} else {
			lastAppended = t
		}
		hs, err := tlog.StoredHashes(ev.Seq, ev.Leaf(), mem)
		if err != nil {
			return false, err
		}
		hashes = append(hashes, hs...)
		iv := identValue{seq: ev.Seq, digest: ev.Digest, position: -1}
		if ev.Kind == codec.KindVRF {
			iv.position, iv.agent = ev.Position, ev.Subject
		}
		wantIdent[string(identKey(ev.Kind, ev.ID))] = iv.encode()
		wantDigest[string(digestKey(ev.Digest))] = digestValue(ev)
		wantTime[string(timeKey(ev.AppendedAt.UnixNano(), ev.Seq))] = true
		if ev.Kind == codec.KindRVWW || ev.Kind == KindRollback {
			wantTask[string(taskKey(ev.Subject, ev.Seq))] = true
			wantHead[string(taskHeadKey(ev.Subject))] = append(u64(uint64(ev.Seq)), ev.ID...)
		}
		for _, lk := range ev.Links {
			if lk.Seq >= ev.Seq {
				problem("event %d: link %s points forward to event %d", ev.Seq, lk.Rel, lk.Seq)
			}
			if lk.Rel == RelPreviousReceipt {
				wantSucc[string(successorKey(lk.ID))] = ev.Seq
			}
		}
		return true, nil
	})
	if err != nil {
		return rep, err
	}
	if next < n {
		problem("the store records %d events but only %d are present", n, next)
	}
	if int64(len(hashes)) != tlog.StoredHashCount(min(n, next)) {
		problem("recomputed %d tree hashes, want %d", len(hashes), tlog.StoredHashCount(n))
	}
	// Documents: exactly one per event.
	var docs int64
	err = l.scanPrefix(prefixData, func(k, _ []byte) error {
		if seq := int64(be64(k[len(prefixData):])); seq != docs {
			problem("document of event %d where event %d's was expected", seq, docs)
			docs = seq
		}
		docs++
		return nil
	})
	if err != nil {
		return rep, err
	}
	if docs != n {
		problem("%d documents stored for %d events", docs, n)
	}
	// Stored hashes.
	var stored int64
	err = l.scanPrefix(prefixHash, func(k, v []byte) error {
		idx := int64(be64(k[len(prefixHash):]))
		stored++
		if idx >= int64(len(hashes)) {
			problem("stored hash %d: beyond the tree (a partial batch is visible)", idx)
		} else if !bytes.Equal(v, hashes[idx][:]) {
			problem("stored hash %d differs from the hash recomputed from the events", idx)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	if stored != int64(len(hashes)) {
		problem("%d stored hashes, want %d", stored, len(hashes))
	}
	if n > 0 && int64(len(hashes)) == tlog.StoredHashCount(n) {
		root, err := tlog.TreeHash(n, mem)
		if err != nil {
			return rep, err
		}
		rep.Root = root
		ck, err := l.get(checkpointKey(n))
		if err != nil {
			problem("no checkpoint kept for size %d: %v", n, err)
		} else if c, err := OpenCheckpoint(ck, l.vkey); err != nil {
			problem("checkpoint %d: %v", n, err)
		} else if c.Root != root {
			problem("checkpoint %d root %v differs from the recomputed root %v", n, c.Root, root)
		}
	}
	// Indexes: exactly the entries the events imply.
	checkIndex := func(name string, prefix []byte, want func(k, v []byte) bool, count int) error {
		seen := 0
		err := l.scanPrefix(prefix, func(k, v []byte) error {
			seen++
			if !want(k, v) {
				problem("%s index: unexpected entry %q", name, k)
			}
			return nil
		})
		if err == nil && seen != count {
			problem("%s index: %d entries, want %d", name, seen, count)
		}
		return err
	}
	if err := checkIndex("identity", prefixIdent, func(k, v []byte) bool { w, ok := wantIdent[string(k)]; return ok && bytes.Equal(w, v) }, len(wantIdent)); err != nil {
		return rep, err
	}
	if err := checkIndex("time", prefixTime, func(k, _ []byte) bool { return wantTime[string(k)] }, len(wantTime)); err != nil {
		return rep, err
	}
	if err := checkIndex("task", prefixTask, func(k, _ []byte) bool { return wantTask[string(k)] }, len(wantTask)); err != nil {
		return rep, err
	}
	if err := checkIndex("digest", prefixDigest, func(k, v []byte) bool { w, ok := wantDigest[string(k)]; return ok && bytes.Equal(w, v) }, len(wantDigest)); err != nil {
		return rep, err
	}
	if err := checkIndex("task head", prefixTaskHead, func(k, v []byte) bool { w, ok := wantHead[string(k)]; return ok && bytes.Equal(w, v) }, len(wantHead)); err != nil {
		return rep, err
	}
	if err := checkIndex("successor", prefixSucc, func(k, v []byte) bool { s, ok := wantSucc[string(k)]; return ok && int64(be64(v)) == s }, len(wantSucc)); err != nil {
		return rep, err
	}
	return rep, nil
}

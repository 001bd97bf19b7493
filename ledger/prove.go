package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/proofledger/ledger/proof"

	"golang.org/x/mod/sumdb/tlog"
)

// ProveInclusion returns an inclusion proof of event seq in the tree of
// size n (0 means the latest checkpoint's size), with the checkpoint at
// that size. The proof is checked against the signed root before it is
// returned: stored hashes or a leaf altered on disk make it an error
// naming the event, never a proof that fails verification.
func (l *Ledger) ProveInclusion(seq, n int64) (*proof.InclusionProof, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	note, c, err := l.checkpointAt(v, n)
	if err != nil {
		return nil, err
	}
	if seq < 0 || seq >= c.Size {
		return nil, fmt.Errorf("event %d is not in the tree of size %d: %w", seq, c.Size, ErrNotFound)
	}
	_, leaf, err := l.eventAt(v, seq, false)
	if err != nil {
		return nil, err
	}
	hashes, err := tlog.ProveRecord(c.Size, seq, hashReader{r: v.r})
	if err != nil {
		return nil, fmt.Errorf("prove event %d: %w", seq, err)
	}
	if err := tlog.CheckRecord(hashes, c.Size, c.Root, seq, tlog.RecordHash(leaf)); err != nil {
		return nil, fmt.Errorf("%w: event %d: the stored tree does not prove its leaf in the signed tree of size %d (altered on disk): %v", ErrCorrupt, seq, c.Size, err)
	}
	return &proof.InclusionProof{Index: seq, Leaf: bytes.Clone(leaf), Hashes: hashes, Checkpoint: bytes.Clone(note)}, nil
}

// ProveConsistency returns a proof that the tree of size newSize (0 means
// the latest) extends the tree of size oldSize, checked before it is
// returned. The old tree of size 0 is the empty tree (proof.EmptyRoot()).
func (l *Ledger) ProveConsistency(oldSize, newSize int64) (*proof.ConsistencyProof, error) {
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	note, c, err := l.checkpointAt(v, newSize)
	if err != nil {
		return nil, err
	}
	if oldSize < 0 || oldSize > c.Size {
		return nil, fmt.Errorf("old size %d: must be between 0 and %d", oldSize, c.Size)
	}
	p := &proof.ConsistencyProof{OldSize: oldSize, OldRoot: proof.EmptyRoot(), Checkpoint: bytes.Clone(note)}
	if oldSize > 0 {
		hr := hashReader{r: v.r}
		if p.OldRoot, err = tlog.TreeHash(oldSize, hr); err != nil {
			return nil, err
		}
		if p.Hashes, err = tlog.ProveTree(c.Size, oldSize, hr); err != nil {
			return nil, fmt.Errorf("prove consistency %d→%d: %w", oldSize, c.Size, err)
		}
		if err := tlog.CheckTree(p.Hashes, c.Size, c.Root, oldSize, p.OldRoot); err != nil {
			return nil, fmt.Errorf("%w: the stored tree of size %d is not consistent with the signed tree of size %d (altered on disk): %v", ErrCorrupt, oldSize, c.Size, err)
		}
	}
	if oc, err := viewGet(v, checkpointKey(oldSize)); err == nil {
		if kept, err := l.openNote(oc); err == nil && kept.Size == oldSize && kept.Root == p.OldRoot {
			p.OldCheckpoint = oc
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return p, nil
}

// leafMismatch finds the first event whose leaf does not match the tree
// hash stored for it (after a whole-tree check failed) and names it.
func (l *Ledger) leafMismatch(v *view, summary string) error {
	var bad int64 = -1
	err := l.scanView(context.Background(), v, 0, func(ev *Event, leaf string) (bool, error) {
		h, err := viewGet(v, hashKey(tlog.StoredHashIndex(0, ev.Seq)))
		if err != nil {
			return false, err
		}
		if want := leafHashString(leaf); !bytes.Equal(h, want[:]) {
			bad = ev.Seq
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s (%v)", ErrCorrupt, summary, err)
	}
	if bad >= 0 {
		return fmt.Errorf("%w: %s: the leaf of event %d was altered on disk", ErrCorrupt, summary, bad)
	}
	return fmt.Errorf("%w: %s: the stored tree hashes were altered on disk", ErrCorrupt, summary)
}

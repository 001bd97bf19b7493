package ledger

import (
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/proof"
)

// A checkpoint saved earlier (AuditOptions.Against), by a witness or a
// user who ran `ledger checkpoint`, pins the tree as it was then: today's
// tree must have the same root at that size. A different root is a fork
// (the log was rewritten after it was saved); a size beyond today's is a
// rollback (signed events are gone). Both survive an attacker who also
// rewrote the checkpoint log, which nothing inside the ledger directory
// can detect.

// againstState is the saved checkpoint on its way through the audit.
type againstState struct {
	c      proof.Checkpoint
	parsed bool // c holds its tree head
	done   bool // consistency was decided (or cannot be)
}

// openAgainst verifies the saved checkpoint's signature and records its
// tree head.
func (a *auditor) openAgainst(signed []byte) {
	r := &AgainstResult{}
	a.rep.Against = r
	ag := &againstState{}
	a.against = ag
	c, err := a.l.openNote(signed)
	if err == nil {
		r.Verified = true
	} else {
		a.problem(-1, "the saved checkpoint does not verify under the log's key %s: %s", a.l.vkey, noteProblem(signed, a.l.vkey, err))
		if c, err = parseNoteUnverified(signed); err != nil {
			ag.done = true
			return
		}
	}
	ag.c, ag.parsed = c, true
	r.Size, r.Root = c.Size, c.Root
	if c.Size > a.v.size {
		ag.done = true
		a.problem(a.v.size, "ROLLBACK: the saved checkpoint is for a tree of %d events, but the ledger holds %d: events it signed for are gone (the store was truncated or rolled back)", c.Size, a.v.size)
	}
}

// againstByTree decides consistency with the tree the audit recomputed,
// which holds the saved checkpoint's size now.
func (a *auditor) againstByTree(root tlog.Hash) {
	ag, r := a.against, a.rep.Against
	ag.done = true
	r.Method = "recomputed tree"
	if root == ag.c.Root {
		r.Consistent = true
		return
	}
	a.problem(-1, "FORK: the saved checkpoint for size %d has root %s, but the events give %s at that size: the log was rewritten after it was saved", ag.c.Size, b64(ag.c.Root[:]), b64(root[:]))
}

// againstByProof decides consistency with an RFC 6962 consistency proof
// from the saved size to the latest signed checkpoint, computed from the
// stored hashes: O(log n) reads. A damaged ledger has no signed tree to
// prove against: its stored hashes' root at the saved size is compared.
func (a *auditor) againstByProof() error {
	ag := a.against
	if ag == nil || ag.done || !ag.parsed {
		return nil
	}
	ag.done = true
	r := a.rep.Against
	m, n := ag.c.Size, a.v.size
	hr := hashReader{r: a.v.r}
	r.Method = "consistency proof"
	if m == 0 {
		r.Consistent = true // every tree extends the empty one (its root was checked)
		return nil
	}
	if a.v.ckpt.note == nil {
		r.Method = "stored hashes"
		root, err := tlog.TreeHash(m, hr)
		if err != nil {
			return err
		}
		if root == ag.c.Root {
			r.Consistent = true
		} else {
			a.forkAt(root)
		}
		return nil
	}
	p, err := tlog.ProveTree(n, m, hr)
	if err == nil {
		err = tlog.CheckTree(p, n, a.v.ckpt.c.Root, m, ag.c.Root)
	}
	if err == nil {
		r.Consistent = true
		return nil
	}
	switch root, rerr := tlog.TreeHash(m, hr); {
	case rerr != nil:
		a.problem(-1, "the saved checkpoint for size %d cannot be proven consistent with today's tree: %v", m, rerr)
	case root != ag.c.Root:
		a.forkAt(root)
	default:
		a.problem(-1, "the saved checkpoint for size %d matches the stored hashes, but they are not consistent with the latest signed checkpoint (size %d): %v", m, n, err)
	}
	return nil
}

func (a *auditor) forkAt(root tlog.Hash) {
	c := a.against.c
	a.problem(-1, "FORK: the saved checkpoint for size %d has root %s, but today's tree has %s at that size: the log was rewritten after it was saved", c.Size, b64(c.Root[:]), b64(root[:]))
}

// noteProblem says why a signed checkpoint does not verify under vkey: a
// text that does not parse, a signature by the log's key that fails (the
// note was altered), or signatures by other keys only (a key mismatch).
func noteProblem(signed []byte, vkey string, err error) string {
	if _, perr := parseNoteUnverified(signed); perr != nil {
		return err.Error()
	}
	_, oerr := note.Open(signed, note.VerifierList())
	ue, ok := oerr.(*note.UnverifiedNoteError)
	if !ok || ue.Note == nil {
		return err.Error()
	}
	v, verr := note.NewVerifier(strings.TrimSpace(vkey))
	var others []string
	for _, s := range ue.Note.UnverifiedSigs {
		if verr == nil && s.Name == v.Name() && s.Hash == v.KeyHash() {
			return fmt.Sprintf("its signature by the log's key does not verify (the note was altered): %v", err)
		}
		others = append(others, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	if len(others) == 0 {
		return fmt.Sprintf("it carries no signature: %v", err)
	}
	return fmt.Sprintf("key mismatch: it is signed by %s, not by the log's key", strings.Join(others, ", "))
}

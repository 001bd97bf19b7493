package ledger

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"

	"golang.org/x/mod/sumdb/tlog"
)

// Problem is one divergence an audit found.
type Problem struct {
	// Seq is the event the problem is about, or -1.
	Seq int64 `json:"seq"`
	// What says what differs.
	What string `json:"what"`
}

// String renders the problem on one line.
func (p Problem) String() string { return p.What }

// ReasonCount is a reason and how many documents it applies to.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// AgainstResult is what checking a saved checkpoint (AuditOptions.Against)
// found.
type AgainstResult struct {
	// Size and Root are the saved checkpoint's tree head (zero when it
	// does not parse).
	Size int64
	Root tlog.Hash
	// Verified: its signature verifies under the log's key.
	Verified bool
	// Consistent: today's tree has that root at that size, so it extends
	// the tree the checkpoint saw.
	Consistent bool
	// Method says how consistency was established: "recomputed tree" (the
	// audit recomputed the tree from the leaves through the checkpoint's
	// size) or "consistency proof" (an RFC 6962 proof from the stored
	// hashes, checked against the latest signed checkpoint).
	Method string
}

// AuditReport is what Audit found.
type AuditReport struct {
	// Events is the number of events the store says it holds.
	Events int64
	// From is the first event whose document, leaf, tree hashes and links
	// were checked (AuditOptions.From); Checked = Events - From.
	From, Checked int64
	// Checkpoints is the number of signed sizes checked (each checkpoint
	// is kept in the store and in the checkpoint log).
	Checkpoints int64
	// Root is the tree root recomputed from the events' leaves (with
	// From > 0, from the stored hashes of the tree of From events and the
	// leaves after it).
	Root tlog.Hash
	// Verified counts documents whose signature or HMAC the Verify hook
	// checked; Unsigned those that carry none; Unverifiable the signed ones
	// it could not check (an HMAC key that is not registered), with the
	// reasons (at most maxReasons of them, the rest under "other reasons").
	// Not being verifiable is not a divergence.
	Verified, Unsigned, Unverifiable int64
	UnverifiableReasons              []ReasonCount
	// Entries counts the index entries compared (the store's identity,
	// digest and time entries and the Rules' entries), Projections the
	// projection entries compared (x/), each counted once per key present
	// on either side.
	Entries, Projections int64
	// Against is the result of checking AuditOptions.Against, nil without one.
	Against *AgainstResult
	// Problems lists the divergences found, ordered by event, up to
	// AuditOptions.MaxProblems (those of the lowest events are kept);
	// Omitted counts the rest.
	Problems []Problem
	Omitted  int64
}

// OK reports whether the audit found nothing wrong.
func (r *AuditReport) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// DocCheck is what an AuditOptions.Verify hook found about one document.
type DocCheck struct {
	// Signed: the document carries a signature or an HMAC.
	Signed bool
	// Verified: its signature or HMAC was checked, and holds.
	Verified bool
	// Unverifiable, when set, says why a signed document's signature
	// could not be checked ("key hmac:… not registered"). It is counted,
	// never a divergence.
	Unverifiable string
	// Problems are divergences: the document does not decode or verify,
	// or the facts its leaf records differ from the document's.
	Problems []string
}

// DocVerifier checks one event's document: ev.Data holds the document,
// already checked against the leaf's digest and size. It is called from
// several goroutines at once (one per core) and must not keep ev.
type DocVerifier func(ev *Event) DocCheck

// AuditOptions configure Audit.
type AuditOptions struct {
	// MaxProblems bounds the problems listed (default 200); the rest are
	// counted.
	MaxProblems int
	// Progress, when set, is called now and then (every 4,096 events and
	// at the end of the scan) with the events scanned and the total.
	Progress func(done, total int64)
	// From audits the documents, leaves, tree hashes and links of events
	// From and later only; the tree of the first From events is taken
	// from its stored hashes, which must give the root the ledger signed
	// for that size, or be proven by the signed checkpoints after it. The
	// derived entries are still recomputed from every leaf (they are
	// aggregates over the whole log), without reading documents.
	From int64
	// Verify, when set, checks each audited event's document (signatures,
	// HMACs, the leaf's facts); package admit supplies one
	// (admit.Ledger.AuditVerifier). Without it the documents are only
	// checked against their leaves' digests.
	Verify DocVerifier
	// Projectors recompute the projections for comparison (nil: the ledger's
	// own, Options.Projectors). Without any, projections are not compared.
	Projectors []Projector
	// Against is a signed checkpoint note saved earlier (as `ledger
	// checkpoint` prints it): it must verify under the log's key and be
	// consistent with today's tree.
	Against []byte
	// AgainstOnly checks Against alone, with an O(log n) consistency proof,
	// and reads no event.
	AgainstOnly bool
	// ScratchDir is where the scratch store holding the recomputed entries
	// is made (and removed after): default the ledger's directory (the
	// file system that holds the store, sized for it), else the OS temp
	// directory when the ledger's directory cannot be written.
	ScratchDir string
	// Workers is the number of goroutines decoding leaves and checking
	// documents (default GOMAXPROCS).
	Workers int
}

// ErrAuditFrom: AuditOptions.From is outside the log.
var ErrAuditFrom = errors.New("audit: --from is outside the log")

// maxReasons bounds the distinct reasons a report keeps for documents
// that could not be verified.
const maxReasons = 16

// Audit checks the ledger from scratch. It re-reads every event: events
// are dense from 0 with nothing beyond the recorded size; each leaf parses
// and names its own sequence number; each document matches its leaf's
// digest and size and, with AuditOptions.Verify, its signature or HMAC and
// the facts its leaf records; arrival times never go backwards and links
// point to earlier events of the right identity; the Merkle tree
// recomputed from the leaves matches every stored hash; every signed
// checkpoint, in the store and in the checkpoint log, verifies under the
// log key and matches the recomputed tree at its size (two different roots
// for one size is a fork); and the derived entries (the store's identity,
// digest and time indexes, the Rules' entries and the projections) are
// recomputed from the leaves into a scratch store, then compared with the
// stored ones key by key by merging the two sorted keyspaces. Keyspaces
// the audit does not know (settings, journals that are not evidence) are
// not compared. A damaged ledger (opened with AllowDamaged) is audited
// too, its damage the first problem. Each problem names the event it
// comes from where one can be named: an aggregate projection entry is
// named by the last event that changed it.
//
// Memory is bounded whatever the ledger's size: O(log n) tree hashes; the
// identities of the latest 65,536 events (to check links); the
// documents in flight between the reader, the Workers and the ordered
// consumer (at most 2×Workers+2 chunks of 256 events or 4 MiB, a larger
// document making a chunk of its own); one projection batch of
// RebuildChunk events and the projector's rebuild filter (the index caps
// its filter at 64 MB); the scratch store's memtable (32 MB, twice while
// one flushes) and block cache (16 MB); the problems kept (MaxProblems)
// and at most maxReasons reasons. No map grows with the number of events.
// The scratch store's files grow with the derived entries (on disk, in
// ScratchDir) and are removed when the audit ends.
func (l *Ledger) Audit(ctx context.Context, opts AuditOptions) (_ *AuditReport, err error) {
	defer recoverFatal(&err)
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	if opts.From < 0 || opts.From > v.size {
		return nil, fmt.Errorf("%w: event %d, the ledger holds %d events", ErrAuditFrom, opts.From, v.size)
	}
	a := &auditor{l: l, v: v, rep: &AuditReport{Events: v.size, From: opts.From, Checked: v.size - opts.From},
		opts: opts, from: opts.From, reasons: map[string]int64{}}
	a.probs.max = opts.MaxProblems
	if a.probs.max <= 0 {
		a.probs.max = 200
	}
	if a.opts.Workers <= 0 {
		a.opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Projectors == nil {
		a.opts.Projectors = l.proj
	}
	if l.damage != nil {
		var de *DamageError
		if errors.As(l.damage, &de) {
			a.problem(-1, "%s", de.Reason)
		} else {
			a.problem(-1, "%v", l.damage)
		}
	}
	defer a.finish()
	if opts.Against != nil {
		a.openAgainst(opts.Against)
	}
	if opts.AgainstOnly {
		if opts.Against == nil {
			return nil, errors.New("audit: AgainstOnly without a checkpoint to check")
		}
		a.rep.Checked = 0
		return a.rep, a.found(a.againstByProof())
	}
	// Damaged bytes that stop a phase (a checksum failure, an unreadable
	// key) are a finding, not a failure of the audit.
	if err := a.run(ctx); err != nil {
		return a.rep, a.found(err)
	}
	return a.rep, nil
}

// found turns damaged bytes met by a phase of the audit into a problem;
// any other error is the audit's failure.
func (a *auditor) found(err error) error {
	if err != nil && errors.Is(err, ErrCorrupt) {
		a.problem(-1, "%v", err)
		return nil
	}
	return err
}

// auditor carries one audit's state; its memory is bounded whatever the
// ledger's size.
type auditor struct {
	l       *Ledger
	v       *view
	rep     *AuditReport
	opts    AuditOptions
	from    int64
	probs   problemSet
	reasons map[string]int64 // unverifiable reasons, at most maxReasons keys

	against     *againstState
	tree        compactRange
	ids         idRing // the identities of the latest events, for links
	lastAt      int64  // appended_at of the previous event, ns
	haveLastAt  bool
	scratch     *scratch
	derive      *deriver
	pendingAttr map[string]*pendingProblem // derived entries to name an event for
	pendingList []*pendingProblem
}

// problem records a divergence.
func (a *auditor) problem(seq int64, format string, args ...any) {
	a.probs.add(seq, fmt.Sprintf(format, args...))
}

// finish fills the report's problem list and reasons.
func (a *auditor) finish() {
	a.rep.Problems, a.rep.Omitted = a.probs.sorted()
	for r, n := range a.reasons {
		a.rep.UnverifiableReasons = append(a.rep.UnverifiableReasons, ReasonCount{Reason: r, Count: n})
	}
	sort.Slice(a.rep.UnverifiableReasons, func(i, j int) bool {
		x, y := a.rep.UnverifiableReasons[i], a.rep.UnverifiableReasons[j]
		if x.Count != y.Count {
			return x.Count > y.Count
		}
		return x.Reason < y.Reason
	})
}

// unverifiable counts a document whose signature could not be checked.
func (a *auditor) unverifiable(reason string) {
	a.rep.Unverifiable++
	if _, ok := a.reasons[reason]; !ok && len(a.reasons) >= maxReasons-1 {
		reason = "other reasons"
	}
	a.reasons[reason]++
}

// run is the whole audit but the saved-checkpoint quick check: one ordered
// pass over the events, then the comparison of the derived entries.
func (a *auditor) run(ctx context.Context) (err error) {
	if err := a.openDerived(); err != nil {
		return err
	}
	defer func() {
		if cerr := a.closeDerived(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	ck, err := a.newCheckpointStreams()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := ck.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := a.scan(ctx, ck); err != nil {
		return err
	}
	if a.against != nil && !a.against.done {
		if err := a.againstByProof(); err != nil {
			return err
		}
	}
	return a.compareDerived(ctx)
}

// problemSet keeps the MaxProblems problems of the lowest events (in the
// order they were found within an event) and counts the rest: a max-heap
// on (seq, order of discovery), so the report does not depend on how the
// workers were scheduled.
type problemSet struct {
	max     int
	h       problemHeap
	n       int64
	omitted int64
}

type heldProblem struct {
	p   Problem
	ord int64
}

type problemHeap []heldProblem

func (h problemHeap) Len() int { return len(h) }
func (h problemHeap) Less(i, j int) bool { // max-heap: the greatest (seq, ord) on top
	return after(h[i], h[j])
}
func (h problemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *problemHeap) Push(x any)   { *h = append(*h, x.(heldProblem)) }
func (h *problemHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// after orders problems: by event (-1 first), then as found.
func after(x, y heldProblem) bool {
	if x.p.Seq != y.p.Seq {
		return x.p.Seq > y.p.Seq
	}
	return x.ord > y.ord
}

func (s *problemSet) add(seq int64, what string) {
	s.n++
	p := heldProblem{p: Problem{Seq: seq, What: what}, ord: s.n}
	switch {
	case len(s.h) < s.max:
		heap.Push(&s.h, p)
	case after(s.h[0], p):
		s.h[0] = p
		heap.Fix(&s.h, 0)
		s.omitted++
	default:
		s.omitted++
	}
}

// drop counts a problem that is not kept.
func (s *problemSet) drop() { s.omitted++ }

func (s *problemSet) sorted() ([]Problem, int64) {
	held := append([]heldProblem(nil), s.h...)
	sort.Slice(held, func(i, j int) bool { return after(held[j], held[i]) })
	out := make([]Problem, len(held))
	for i, h := range held {
		out[i] = h.p
	}
	return out, s.omitted
}

// shortHex renders a value for a message, bounded.
func shortHex(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%x… (%d bytes)", b[:40], len(b))
	}
	return fmt.Sprintf("%x", b)
}

package ledger

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
)

// Submission is one document offered for appending.
type Submission struct {
	// Name is how messages refer to the document (its file name, "-").
	Name string
	// Data is the document's original bytes; the ledger stores them as given.
	Data []byte
	// Arrival is when the document arrived; zero means now. Replicas fed
	// the same ordered submissions with the same arrival times end
	// byte-identical.
	Arrival time.Time
}

// Status is what became of one submission.
type Status string

// The statuses of an Outcome.
const (
	StatusAppended Status = "appended"
	StatusReplay   Status = "replay"   // identity present, identical bytes
	StatusConflict Status = "conflict" // identity present, different bytes
	StatusRejected Status = "rejected" // malformed, invalid, untrusted or breaking a chain rule
)

// Reject classes say why a submission was rejected.
const (
	RejectMalformed = "malformed" // cannot be parsed or fails its schema
	RejectInvalid   = "invalid"   // fails verification
	RejectTrust     = "trust"     // unsigned, or signer not trusted
	RejectLink      = "link"      // breaks a chain or task rule
)

// Outcome reports one submission.
type Outcome struct {
	Name   string
	Kind   codec.Kind
	ID     string
	Status Status
	// Seq is the new event's sequence number, the original event's for a
	// replay or conflict, and -1 otherwise.
	Seq int64
	// Class says why a submission was rejected (Reject* constants).
	Class  string
	Reason string
	// Findings are the codec's findings for a malformed or invalid document.
	Findings []codec.Finding
	// Waiting is set when a receipt was rejected because the receipt it
	// continues (this id) is not in the ledger: it may be appended once
	// that one is (AppendStream retries it).
	Waiting string
	// Event is the appended event (without Data).
	Event *Event
}

// AppendOptions are the trust settings of one Append call.
type AppendOptions struct {
	// AllowUnsigned admits documents that carry no signature.
	AllowUnsigned bool
	// HMACKeys are tried on signed witness bundles, after the keys
	// registered in the ledger.
	HMACKeys []keys.HMACKey
	// TrustedSigners, when not nil, restricts Ed25519-signed documents to
	// these signers ("ed25519:<hex>").
	TrustedSigners map[string]bool
}

// candidate is a decoded, verified submission waiting for the sequencer.
type candidate struct {
	idx     int // position in the caller's slice
	sub     Submission
	res     *inspect.Result
	kind    codec.Kind
	id      string
	digest  [sha256.Size]byte
	arrival time.Time
	payload []byte // the document as stored: codec byte and (compressed) bytes

	// Chain and task facts the sequencer checks against the log.
	agent    string // explicit agent_id of a receipt
	prev     string // previous_receipt
	position int64  // chain_position, -1 when absent
	task     string // task of a bundle or rollback
}

// Append decodes, verifies and appends the submissions, in chain order
// within the call (a receipt after the receipt it continues, whatever order
// the caller gave). It returns one Outcome per submission in the caller's
// order. Appended events are on disk (synced) before Append returns. The
// error is non-nil only when the ledger itself failed (or ctx ended), not
// when a document was refused; ErrPushback means the sequencer's queue is
// full.
func (l *Ledger) Append(ctx context.Context, subs []Submission, opts AppendOptions) ([]Outcome, error) {
	if l.readOnly {
		if l.damage != nil {
			return nil, l.damage
		}
		return nil, ErrReadOnly
	}
	out := make([]Outcome, len(subs))
	set, err := l.loadSettings()
	if err != nil {
		return nil, err
	}
	// The replay short cut reads the durable log only.
	v, err := l.acquire()
	if err != nil {
		return nil, err
	}
	defer l.releaseView(v)
	hmacKeys := append(append([]keys.HMACKey(nil), set.hmac...), opts.HMACKeys...)
	iopts := inspect.Options{HMACKeys: hmacKeys, Policies: set.policies}
	now := time.Now()
	// Decoding and verifying is the costly, stateless part: spread it over
	// the cores, keeping the caller's order.
	prepared := make([]*candidate, len(subs))
	workers := min(runtime.GOMAXPROCS(0), len(subs))
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(subs) {
					return
				}
				select {
				case l.prep <- struct{}{}:
				case <-ctx.Done():
					return // Append reports ctx.Err()
				}
				prepared[i], out[i] = l.prepare(v, i, subs[i], iopts, opts, now)
				<-l.prep
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cands []*candidate
	for _, c := range prepared {
		if c != nil {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return out, nil
	}
	cands = chainOrder(cands)
	req := &appendRequest{cands: cands, done: make(chan struct{})}
	select {
	case l.queue <- req:
	case <-l.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
		return nil, ErrPushback
	}
	if err := waitCtx(ctx, req.done); err != nil {
		return nil, err
	}
	if req.err != nil {
		return nil, req.err
	}
	for i, c := range cands {
		out[c.idx] = req.outcomes[i]
	}
	return out, nil
}

// prepare decodes and verifies one submission and applies the trust rules
// that need no ledger state.
func (l *Ledger) prepare(v *view, i int, s Submission, iopts inspect.Options, opts AppendOptions, now time.Time) (*candidate, Outcome) {
	o := Outcome{Name: s.Name, Status: StatusRejected, Seq: -1}
	digest := sha256.Sum256(s.Data)
	// A byte-identical copy of a stored document is a replay whatever the
	// trust settings: one point lookup in the durable log, no decoding. (A
	// damaged entry is ignored here: the sequencer's identity check
	// decides, and reports it.)
	dk := digestKey(digest)
	if val, err := viewGet(v, dk); err == nil {
		if seq, kind, id, err := decodeDigest(dk, val); err == nil && seq < v.size {
			o.Kind, o.ID, o.Seq = kind, id, seq
			o.Status = StatusReplay
			o.Reason = fmt.Sprintf("already in the ledger as event %d", o.Seq)
			return nil, o
		}
	}
	res := l.ins.Inspect(s.Data, iopts)
	o.Kind, o.ID = res.Kind, res.ID
	switch res.Status {
	case inspect.Malformed:
		o.Class, o.Findings = RejectMalformed, res.Findings
		o.Reason = findingsReason(res.Findings)
		return nil, o
	case inspect.Invalid:
		o.Class, o.Findings = RejectInvalid, res.Findings
		o.Reason = findingsReason(res.Findings)
		return nil, o
	}
	signedKind := res.Kind != codec.KindAVIRSpec // specifications carry no signature
	if signedKind && !res.Signed && !opts.AllowUnsigned {
		o.Class = RejectTrust
		o.Reason = "unsigned document (pass --allow-unsigned to admit unsigned documents)"
		return nil, o
	}
	if res.Signed && opts.TrustedSigners != nil && strings.HasPrefix(res.Signer, "ed25519:") && !opts.TrustedSigners[res.Signer] {
		o.Class = RejectTrust
		o.Reason = fmt.Sprintf("signer %s is not in the trusted signers", res.Signer)
		return nil, o
	}
	if res.Bundle != nil && res.Signed {
		// A bundle's signer is its key's fingerprint, not the key's local
		// name, so that replicas with differently named key files agree.
		res.Signer = hmacKeyID(res.Bundle.VerifiedKey(), iopts.HMACKeys)
	}
	arrival := s.Arrival
	if arrival.IsZero() {
		arrival = now
	}
	c := &candidate{idx: i, sub: s, res: res, kind: res.Kind, id: res.ID, digest: digest, arrival: arrival, position: -1,
		payload: encodePayload(s.Data)}
	switch {
	case res.Receipt != nil:
		r := res.Receipt
		c.agent = r.AgentID()
		c.prev = r.PreviousReceipt()
		if p, ok := r.ChainPosition(); ok {
			c.position = p
		}
	case res.Bundle != nil:
		c.task = res.Bundle.TaskUUID()
	case res.Rollback != nil:
		c.task = res.Rollback.TaskID
	}
	return c, o
}

func findingsReason(fs []codec.Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// chainOrder orders candidates so that a receipt comes after the receipt it
// continues when both are in the call; otherwise the caller's order stands.
func chainOrder(cands []*candidate) []*candidate {
	byID := make(map[string]*candidate)
	for _, c := range cands {
		if c.kind == codec.KindVRF {
			byID[c.id] = c
		}
	}
	out := make([]*candidate, 0, len(cands))
	placed := make(map[*candidate]bool, len(cands))
	visiting := make(map[*candidate]bool)
	var place func(c *candidate)
	place = func(c *candidate) {
		if placed[c] || visiting[c] {
			return // a cycle is broken here; the sequencer rejects its members
		}
		visiting[c] = true
		if p, ok := byID[c.prev]; ok && c.prev != "" {
			place(p)
		}
		visiting[c] = false
		placed[c] = true
		out = append(out, c)
	}
	// Walk in the caller's order so unrelated documents keep it.
	sorted := append([]*candidate(nil), cands...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].idx < sorted[j].idx })
	for _, c := range sorted {
		place(c)
	}
	return out
}

// hmacKeyID names an HMAC key by a fingerprint that does not reveal it:
// "hmac:" and the first 8 bytes of HMAC-SHA256(key, "ledger hmac key id").
func hmacKeyID(name string, ks []keys.HMACKey) string {
	for _, k := range ks {
		for _, c := range k.Candidates() {
			if c.Name == name {
				return HMACKeyID(c.Secret)
			}
		}
	}
	return ""
}

// HMACKeyID returns the fingerprint the ledger records as the signer of a
// bundle verified with secret.
func HMACKeyID(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ledger hmac key id"))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:8])
}

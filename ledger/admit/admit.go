package admit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/proof"
)

// Ledger is a ledger store opened with the admission layer: documents go
// in (decoded, verified, trusted, placed in their chains), events come out.
// Every read of the store is its embedded *ledger.Ledger's.
type Ledger struct {
	*ledger.Ledger
	reg *registry.Registry
	ins *inspect.Inspector
	// prep holds one token per core: decoding and verifying take one, so
	// that however many callers append at once, the sequencer and syncer
	// goroutines find a core instead of queueing behind them.
	prep chan struct{}
}

// Open opens the ledger in dir with the admission rules (Rules), in
// addition to opts (whose Rules it sets): OpenContext without a context.
func Open(dir string, opts ledger.Options) (*Ledger, error) {
	return OpenContext(context.Background(), dir, opts)
}

// OpenContext opens the ledger in dir with the admission rules (Rules), in
// addition to opts (whose Rules it sets). A write open waits for the
// ledger's writer lock up to opts.Wait or ctx's deadline
// (ledger.OpenContext); a read-only one reads a read copy when a writer
// holds it. A read-only open of a ledger of an earlier format upgrades it
// first, as a writer.
func OpenContext(ctx context.Context, dir string, opts ledger.Options) (*Ledger, error) {
	opts.Rules = Rules{}
	l, err := ledger.OpenContext(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return Wrap(l)
}

// Wrap adds the admission layer to a store opened with Rules.
func Wrap(l *ledger.Ledger) (*Ledger, error) {
	ins, err := inspect.New()
	if err != nil {
		_ = l.Close() // err is the error to report
		return nil, err
	}
	return &Ledger{Ledger: l, reg: registry.New(l), ins: ins, prep: make(chan struct{}, runtime.GOMAXPROCS(0))}, nil
}

// Registry returns the ledger's registered HMAC keys and policies.
func (l *Ledger) Registry() *registry.Registry { return l.reg }

// Inspector returns the ledger's document inspector.
func (l *Ledger) Inspector() *inspect.Inspector { return l.ins }

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

// Options are the trust settings of one Append call.
type Options struct {
	// AllowUnsigned admits documents that carry no signature.
	AllowUnsigned bool
	// HMACKeys are tried on signed witness bundles, after the keys
	// registered in the ledger.
	HMACKeys []keys.HMACKey
	// TrustedSigners, when not nil, restricts Ed25519-signed documents to
	// these signers ("ed25519:<hex>"), in place of the ledger's trusted
	// signers (registry). When it is nil the ledger's apply; while the
	// ledger has none, any signer is admitted.
	TrustedSigners map[string]bool
	// Submitter names who offers the documents, for the refusal journal
	// (the command line sets "cli:" and the user name; a server, the name
	// of the caller's token).
	Submitter string

	// retryWaiting: the caller (AppendStream) retries receipts refused
	// because the receipt they continue is not in the ledger yet, so
	// those refusals are not journaled.
	retryWaiting bool
	// AnySigner admits any Ed25519 signer whatever the ledger's trusted
	// signers (Import sets it: an archive holds only what a ledger once
	// admitted).
	AnySigner bool

	// MaxAge and MaxSkew, when not nil, replace the ledger's freshness
	// setting (registry.Freshness) of the same name for this call: a
	// document whose own time is more than MaxAge before its arrival, or
	// more than MaxSkew after it, is refused with status stale (class
	// stale or future; freshness.go). Zero is no limit.
	MaxAge, MaxSkew *time.Duration
	// AnyTime applies no freshness rule (Import sets it: an archive holds
	// what a ledger once admitted when it was fresh).
	AnyTime bool
	// Clock stamps the arrival of a submission without one; nil is
	// time.Now. Tests inject a fixed clock.
	Clock func() time.Time
}

// candidate is a decoded, verified submission on its way to the store.
type candidate struct {
	idx   int
	entry *ledger.Entry
	facts *facts
}

// Append decodes, verifies and appends the submissions, in chain order
// within the call (a receipt after the receipt it continues, whatever
// order the caller gave). It returns one Outcome per submission in the
// caller's order. Appended events are durable before Append returns. The
// error is non-nil only when the ledger itself failed (or ctx ended), not
// when a document was refused; ledger.ErrPushback means the sequencer's
// queue is full.
func (l *Ledger) Append(ctx context.Context, subs []Submission, opts Options) ([]ledger.Outcome, error) {
	return l.append(ctx, subs, opts, nil)
}

// append is Append with the governance policies known besides the
// defaults given (nil: the registry's).
func (l *Ledger) append(ctx context.Context, subs []Submission, opts Options, pols []governance.Policy) ([]ledger.Outcome, error) {
	if l.ReadOnly() {
		if err := l.Damage(); err != nil {
			return nil, err
		}
		return nil, ledger.ErrReadOnly
	}
	out := make([]ledger.Outcome, len(subs))
	regKeys, err := l.reg.HMACKeys()
	if err != nil {
		return nil, err
	}
	trustSource := "the trusted signers"
	if pols == nil {
		if pols, err = l.reg.Policies(); err != nil {
			return nil, err
		}
	}
	switch {
	case opts.AnySigner:
		opts.TrustedSigners = nil
	case opts.TrustedSigners == nil:
		if opts.TrustedSigners, err = l.reg.TrustedSigners(); err != nil {
			return nil, err
		}
		trustSource = "the ledger's trusted signers"
	}
	iopts := inspect.Options{HMACKeys: append(regKeys, opts.HMACKeys...), Policies: pols}
	fresh, err := l.freshnessOf(opts)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if opts.Clock != nil {
		now = opts.Clock()
	}
	// Decoding and verifying is the costly, stateless part: spread it over
	// the cores, keeping the caller's order.
	prepared := make([]*candidate, len(subs))
	refusedAgent := make([]string, len(subs)) // the journal's agent of a document refused in preparation
	workers := min(runtime.GOMAXPROCS(0), len(subs))
	var wg sync.WaitGroup
	var next atomic.Int64
	var failed atomic.Pointer[error]
	for range workers {
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
				var err error
				prepared[i], out[i], refusedAgent[i], err = l.prepare(i, subs[i], iopts, opts, trustSource, fresh, now)
				<-l.prep
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p := failed.Load(); p != nil {
		return nil, *p
	}
	// Every submission goes to the store: the refused ones only to be
	// recorded in the refusal journal, in the same durable batch as the
	// others (refused in the caller's order, then the candidates in chain
	// order).
	var refused, cands []*candidate
	for i, c := range prepared {
		if c == nil {
			o := out[i]
			c = &candidate{idx: i, entry: &ledger.Entry{Name: subs[i].Name, Kind: o.Kind, ID: o.ID, Data: subs[i].Data,
				Arrival: subs[i].Arrival, Refused: &out[i], Agent: refusedAgent[i], Submitter: opts.Submitter}}
			refused = append(refused, c)
			continue
		}
		c.entry.Submitter, c.entry.RetryWaiting = opts.Submitter, opts.retryWaiting
		cands = append(cands, c)
	}
	all := append(refused, chainOrder(cands)...)
	entries := make([]*ledger.Entry, len(all))
	for i, c := range all {
		entries[i] = c.entry
	}
	res, err := l.Ledger.Append(ctx, entries)
	if err != nil {
		return nil, err
	}
	for i, c := range all {
		out[c.idx] = res[i]
	}
	return out, nil
}

// AppendWithRetry is Append that waits and retries, with capped
// exponential backoff, while the sequencer pushes back.
func (l *Ledger) AppendWithRetry(ctx context.Context, subs []Submission, opts Options) ([]ledger.Outcome, error) {
	return l.appendWithRetry(ctx, subs, opts, nil)
}

func (l *Ledger) appendWithRetry(ctx context.Context, subs []Submission, opts Options, pols []governance.Policy) ([]ledger.Outcome, error) {
	delay := time.Millisecond
	for {
		out, err := l.append(ctx, subs, opts, pols)
		if err != ledger.ErrPushback {
			return out, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// prepare decodes and verifies one submission, applies the trust rules
// that need no log order and judges its freshness (fresh; the verdict is
// applied by the Rules, after the identity check). A refusal is an Outcome, a nil candidate and
// the agent the refusal journal names; the error is the store's own
// failure.
func (l *Ledger) prepare(i int, s Submission, iopts inspect.Options, opts Options, trustSource string, fresh freshRule, now time.Time) (*candidate, ledger.Outcome, string, error) {
	o := ledger.Outcome{Name: s.Name, Status: ledger.StatusRejected, Seq: -1}
	// A byte-identical copy of a stored document is a replay whatever the
	// trust settings: one point lookup in the durable log, no decoding.
	digest := sha256.Sum256(s.Data)
	latest := l.Latest()
	defer latest.Close()
	if seq, kind, id, found, err := latest.LookupDigest(digest); err != nil {
		return nil, o, "", err
	} else if found {
		o.Kind, o.ID, o.Seq = kind, id, seq
		o.Status = ledger.StatusReplay
		o.Reason = fmt.Sprintf("already in the ledger as event %d", seq)
		// The copy speaks for whom the original does.
		ev, err := latest.Event(seq, false)
		if err != nil {
			return nil, o, "", err
		}
		return nil, o, JournalAgent(&ev.Leaf), nil
	}
	res := l.ins.Inspect(s.Data, iopts)
	o.Kind, o.ID = res.Kind, res.ID
	// A document refused here is not attributed to the agent it names:
	// that claim was not verified, or not by a signer the ledger trusts.
	switch res.Status {
	case inspect.Malformed:
		o.Class, o.Findings = ledger.RejectMalformed, res.Findings
		o.Reason = findingsReason(res.Findings)
		return nil, o, "", nil
	case inspect.Invalid:
		o.Class, o.Findings = ledger.RejectInvalid, res.Findings
		o.Reason = findingsReason(res.Findings)
		return nil, o, "", nil
	}
	signedKind := res.Kind != codec.KindAVIRSpec // specifications carry no signature
	if signedKind && !res.Signed && !opts.AllowUnsigned {
		o.Class = ledger.RejectTrust
		o.Reason = "unsigned document (the ledger admits unsigned documents only when told to)"
		return nil, o, "", nil
	}
	if res.Signed && opts.TrustedSigners != nil && strings.HasPrefix(res.Signer, "ed25519:") && !opts.TrustedSigners[res.Signer] {
		o.Class = ledger.RejectTrust
		o.Reason = fmt.Sprintf("signer %s is not in %s", res.Signer, trustSource)
		return nil, o, "", nil
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
	// Judged now, applied in sequence order after the identity check.
	f := &facts{position: -1, stale: fresh.judge(res, arrival)}
	e := &ledger.Entry{Name: s.Name, Kind: res.Kind, ID: res.ID, Data: s.Data, Arrival: arrival, Facts: f,
		Leaf: proof.Leaf{Subject: res.Subject, Signer: res.Signer, Time: res.Time, Position: -1, Attrs: attrs.Of(res)}}
	e.SetDigest(digest)
	switch {
	case res.Receipt != nil:
		r := res.Receipt
		f.agent, f.prev = r.AgentID(), r.PreviousReceipt()
		if p, ok := r.ChainPosition(); ok {
			f.position = p
		}
		e.Leaf.Subject = "" // the chain rules decide the agent
	case res.Bundle != nil:
		f.task = res.Bundle.TaskUUID()
	case res.Rollback != nil:
		f.task = res.Rollback.TaskID
	}
	agent, err := candidateAgent(latest, e, f)
	if err != nil {
		return nil, o, "", err
	}
	e.Agent = agent
	return &candidate{idx: i, entry: e, facts: f}, o, "", nil
}

// JournalAgent is the agent the refusal journal names for a copy of the
// event whose leaf is l: a receipt's agent (its subject), else the
// document's signer (an attestation's replicator, a bundle's or a
// rollback's harness key); "" for a specification.
func JournalAgent(l *proof.Leaf) string {
	if l.Kind == codec.KindVRF {
		return l.Subject
	}
	return l.Signer
}

// candidateAgent is the agent the refusal journal names if a verified,
// trusted document is refused in sequence: what its leaf would say
// (JournalAgent), as far as it is known before sequencing. A receipt
// without agent_id that continues a receipt speaks for that receipt's
// agent (one point lookup of the chain entry in s, the view published
// last; "" when the predecessor is not published yet).
func candidateAgent(s *ledger.Snapshot, e *ledger.Entry, f *facts) (string, error) {
	if e.Kind != codec.KindVRF {
		return e.Leaf.Signer, nil
	}
	switch {
	case f.agent != "":
		return f.agent, nil
	case f.prev != "":
		k := chainKey(f.prev)
		v, err := s.Get(k)
		if errors.Is(err, ledger.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		c, err := decodeChain(k, v)
		return c.agent, err
	case f.position >= 0:
		return e.ID, nil
	case e.Leaf.Signer != "":
		return e.Leaf.Signer, nil
	}
	return e.ID, nil
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
		if c.entry.Kind == codec.KindVRF {
			byID[c.entry.ID] = c
		}
	}
	out := make([]*candidate, 0, len(cands))
	placed := make(map[*candidate]bool, len(cands))
	visiting := make(map[*candidate]bool)
	var place func(c *candidate)
	place = func(c *candidate) {
		if placed[c] || visiting[c] {
			return // a cycle is broken here; the rules reject its members
		}
		visiting[c] = true
		if p, ok := byID[c.facts.prev]; ok && c.facts.prev != "" {
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

// hmacKeyID names the HMAC key that verified a bundle by its fingerprint
// (registry.KeyID).
func hmacKeyID(name string, ks []keys.HMACKey) string {
	for _, k := range ks {
		for _, c := range k.Candidates() {
			if c.Name == name {
				return registry.KeyID(c.Secret)
			}
		}
	}
	return ""
}

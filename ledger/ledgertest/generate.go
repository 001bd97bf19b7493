package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/proofledger/ledger/codec"
)

// Doc is one generated document.
type Doc struct {
	// Index is the document's position in the corpus, from 0.
	Index int
	// Name is a file name for the document: "vrf/0000012-<receipt id>.json",
	// "rvww/0000013-<task>.rvww", "avir/0000014-<system>.attestation.json",
	// "avir/0000015-<system>.spec.json".
	Name string
	// Kind is the document's kind.
	Kind codec.Kind
	// ID is the document's identity as the codecs report it: a receipt_id,
	// a bundle's "<task uuid>@<created_ns>", an attestation's chain_hash,
	// a specification's hash.
	ID string
	// Subject is who the document speaks for: a receipt's agent_id, a
	// bundle's task UUID, an attestation's or specification's "name
	// vversion". Documents with one subject must be appended in corpus
	// order; documents of different subjects may go in any order.
	Subject string
	// Data is the document's bytes.
	Data []byte
	// Time is the document's own time (verified_at, created_ns, the
	// attestation's completion); zero for a specification.
	Time time.Time
	// Arrival is when the document reaches the ledger: a little after
	// Time, never decreasing along the corpus.
	Arrival time.Time
}

// Corpus is a generated corpus: its documents in append order and the
// keys that verify them.
type Corpus struct {
	// Config is the configuration with every default filled in.
	Config Config
	// Keys verify every document.
	Keys Keys
	// Docs are the documents in a valid append order.
	Docs []Doc
	// Specs are the AVIR specifications the attestations verify against,
	// one per system version, whether or not Config.Specs put them in Docs.
	Specs []Spec
}

// Spec is an AVIR specification of a corpus.
type Spec struct {
	// System is "name vversion".
	System string
	// Data is the specification as a JSON document.
	Data []byte
}

// Stats counts a corpus's documents and bytes by kind.
type Stats struct {
	Docs  map[codec.Kind]int
	Bytes map[codec.Kind]int64
}

// Stats counts the corpus's documents and bytes by kind.
func (c *Corpus) Stats() Stats {
	s := Stats{Docs: map[codec.Kind]int{}, Bytes: map[codec.Kind]int64{}}
	for _, d := range c.Docs {
		s.Docs[d.Kind]++
		s.Bytes[d.Kind] += int64(len(d.Data))
	}
	return s
}

// Generate makes the corpus of cfg in memory. For large corpora use Stream.
func Generate(cfg Config) (*Corpus, error) {
	return GenerateContext(context.Background(), cfg)
}

// GenerateContext is Generate that stops when ctx ends.
func GenerateContext(ctx context.Context, cfg Config) (*Corpus, error) {
	norm, err := cfg.Normalized()
	if err != nil {
		return nil, err
	}
	g, err := newGenerator(norm)
	if err != nil {
		return nil, err
	}
	c := &Corpus{Config: norm, Keys: g.keys, Docs: make([]Doc, 0, norm.Receipts+norm.Bundles+norm.Attestations)}
	for _, s := range g.plan.systems {
		c.Specs = append(c.Specs, Spec{System: s.key, Data: s.data})
	}
	err = g.run(ctx, func(d Doc) error {
		c.Docs = append(c.Docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Stream makes the corpus of cfg one document at a time and calls fn with
// each, in corpus order, from the calling goroutine. It holds only a
// bounded window of documents (a few per worker), so a million-document
// corpus streams in constant memory. An error from fn stops the stream and
// is returned. The keys are cfg.Keys().
func Stream(cfg Config, fn func(Doc) error) error {
	return StreamContext(context.Background(), cfg, fn)
}

// StreamContext is Stream that stops when ctx ends.
func StreamContext(ctx context.Context, cfg Config, fn func(Doc) error) error {
	norm, err := cfg.Normalized()
	if err != nil {
		return err
	}
	g, err := newGenerator(norm)
	if err != nil {
		return err
	}
	return g.run(ctx, fn)
}

// generator builds documents. Its planner runs on one goroutine and fixes
// everything that depends on earlier documents (chains, tasks, times);
// the documents themselves are built and signed on worker goroutines from
// a per-document seed, so the output does not depend on scheduling.
type generator struct {
	cfg  Config
	keys Keys
	plan *planner
}

func newGenerator(cfg Config) (*generator, error) {
	keys := NewKeys(cfg.Seed, cfg.VerifierKeys)
	p, err := newPlanner(cfg, keys)
	if err != nil {
		return nil, err
	}
	return &generator{cfg: cfg, keys: keys, plan: p}, nil
}

// job is one document on its way from the planner to the caller.
type job struct {
	index   int
	kind    codec.Kind
	at      time.Time
	arrival time.Time
	seed    uint64

	receipt *receiptPlan
	bundle  *bundlePlan
	attest  *attestPlan
	spec    *system

	doc  Doc
	err  error
	done chan struct{}
}

// run plans on one goroutine, builds on cfg.Workers goroutines and calls
// fn in order on the calling goroutine.
func (g *generator) run(ctx context.Context, fn func(Doc) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := g.cfg.Workers
	work := make(chan *job, 2*workers)
	order := make(chan *job, 8*workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(work)
		defer close(order)
		for {
			j := g.plan.next()
			if j == nil {
				return
			}
			// A job goes into order before work, so the oldest job in order
			// has always been handed to a worker.
			select {
			case order <- j:
			case <-ctx.Done():
				return
			}
			select {
			case work <- j:
			case <-ctx.Done():
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for j := range work {
				if ctx.Err() == nil {
					g.build(j)
				} else {
					j.err = ctx.Err()
				}
				close(j.done)
			}
		})
	}
	err := func() error {
		for j := range order {
			select {
			case <-j.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if j.err != nil {
				return j.err
			}
			if err := fn(j.doc); err != nil {
				return err
			}
			j.doc = Doc{} // let the bytes go
		}
		return ctx.Err()
	}()
	cancel()
	for range order { // unblock the planner
	}
	wg.Wait()
	return err
}

// build makes j's document.
func (g *generator) build(j *job) {
	r := rand.New(rand.NewPCG(g.cfg.Seed^0x646f63756d656e74, j.seed))
	d := Doc{Index: j.index, Kind: j.kind, Time: j.at, Arrival: j.arrival}
	var err error
	switch {
	case j.receipt != nil:
		d.Data, err = g.buildReceipt(j, r)
		d.ID, d.Subject = j.receipt.receiptID, j.receipt.agentID
		d.Name = fmt.Sprintf("vrf/%07d-%s.json", j.index, d.ID)
	case j.bundle != nil:
		d.Data, err = g.buildBundle(j, r)
		d.Subject = uuidString(j.bundle.task)
		d.ID = fmt.Sprintf("%s@%d", d.Subject, j.bundle.createdNS)
		d.Time = time.Unix(0, int64(j.bundle.createdNS)).UTC()
		d.Name = fmt.Sprintf("rvww/%07d-%s.rvww", j.index, d.Subject)
	case j.attest != nil:
		d.Data, d.ID, err = g.buildAttestation(j, r)
		d.Subject = j.attest.sys.key
		d.Name = fmt.Sprintf("avir/%07d-%s.attestation.json", j.index, slug(d.Subject))
	case j.spec != nil:
		d.Data, d.ID, d.Subject = j.spec.data, j.spec.spec.Hash(), j.spec.key
		d.Time = time.Time{} // a specification has no time of its own
		d.Name = fmt.Sprintf("avir/%07d-%s.spec.json", j.index, slug(d.Subject))
	default:
		err = errors.New("ledgertest: empty job")
	}
	if err != nil {
		j.err = fmt.Errorf("ledgertest: document %d: %w", j.index, err)
		return
	}
	j.doc = d
}

// planner fixes the order, kinds, times and cross-document state of a
// corpus. It is used by one goroutine.
type planner struct {
	cfg  Config
	keys Keys
	rng  *rand.Rand

	agents   []*agent
	agentCDF []float64
	tasks    []*task
	taskNext int
	systems  []*system

	remaining [3]int // receipts, bundles, attestations still to plan
	total     int    // counted documents (specifications are extra)
	planned   int    // counted documents planned so far
	index     int    // next document index, specifications included
	startUS   int64
	stepUS    float64
	last      time.Time // latest arrival
	queued    *job      // an attestation waiting behind its specification
}

func newPlanner(cfg Config, keys Keys) (*planner, error) {
	p := &planner{
		cfg:       cfg,
		keys:      keys,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x706c616e6e6572)),
		remaining: [3]int{cfg.Receipts, cfg.Bundles, cfg.Attestations},
		total:     cfg.Receipts + cfg.Bundles + cfg.Attestations,
		startUS:   cfg.Start.UnixMicro(),
	}
	if p.total > 0 {
		p.stepUS = float64(cfg.Span.Microseconds()) / float64(p.total)
	}
	setup := rand.New(rand.NewPCG(cfg.Seed, 0x7365747570))
	if cfg.Receipts > 0 {
		if cfg.Agents < 1 || cfg.VerifierKeys < 1 {
			return nil, errors.New("ledgertest: receipts need at least one agent and one verifier key")
		}
		p.agents, p.agentCDF = newAgents(setup, &cfg)
	}
	if cfg.Attestations > 0 {
		if cfg.Systems < 1 || cfg.Versions < 1 {
			return nil, errors.New("ledgertest: attestations need at least one system and version")
		}
		var err error
		if p.systems, err = newSystems(setup, &cfg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// next returns the next job, or nil at the end.
func (p *planner) next() *job {
	if j := p.queued; j != nil {
		p.queued = nil
		return j
	}
	left := p.remaining[0] + p.remaining[1] + p.remaining[2]
	if left == 0 {
		return nil
	}
	k := 0
	for n := p.rng.IntN(left); n >= p.remaining[k]; k++ {
		n -= p.remaining[k]
	}
	p.remaining[k]--

	// Document times advance evenly over the span with jitter, in whole
	// microseconds, never backwards; arrival follows 50 ms to 5 s later.
	us := p.startUS + int64((float64(p.planned)+p.rng.Float64())*p.stepUS)
	p.planned++
	at := time.UnixMicro(us).UTC()
	arrival := at.Add(time.Duration(50+p.rng.IntN(4950)) * time.Millisecond).Add(time.Duration(p.rng.IntN(1000)) * time.Microsecond)
	if arrival.Before(p.last) {
		arrival = p.last
	}
	p.last = arrival

	j := &job{at: at, arrival: arrival, seed: p.rng.Uint64(), done: make(chan struct{})}
	switch k {
	case 0:
		j.kind, j.receipt = codec.KindVRF, p.planReceipt()
	case 1:
		j.kind, j.bundle = codec.KindRVWW, p.planBundle(at, p.index)
	case 2:
		sys := p.systems[p.rng.IntN(len(p.systems))]
		j.kind, j.attest = codec.KindAVIRAttestation, &attestPlan{sys: sys}
		if p.cfg.Specs && !sys.emitted {
			sys.emitted = true
			spec := &job{index: p.index, kind: codec.KindAVIRSpec, at: at, arrival: arrival, spec: sys, done: make(chan struct{})}
			p.index++
			j.index = p.index
			p.index++
			p.queued = j
			return spec
		}
	}
	j.index = p.index
	p.index++
	return j
}

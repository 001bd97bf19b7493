package ledgertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

func newInspector(t testing.TB) *inspect.Inspector {
	t.Helper()
	ins, err := inspect.New()
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

// small is a corpus big enough to show every feature and quick to make.
func small() ledgertest.Config {
	return ledgertest.Config{Seed: 42, Receipts: 300, Bundles: 200, Attestations: 40, Agents: 12, Specs: true}
}

func generate(t testing.TB, cfg ledgertest.Config) *ledgertest.Corpus {
	t.Helper()
	c, err := ledgertest.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDeterministic(t *testing.T) {
	a := small()
	a.Workers = 1
	b := small()
	b.Workers = 5
	ca, cb := generate(t, a), generate(t, b)
	if len(ca.Docs) != len(cb.Docs) {
		t.Fatalf("%d documents, then %d", len(ca.Docs), len(cb.Docs))
	}
	for i := range ca.Docs {
		da, db := ca.Docs[i], cb.Docs[i]
		if da.Name != db.Name || da.ID != db.ID || !bytes.Equal(da.Data, db.Data) || !da.Arrival.Equal(db.Arrival) || !da.Time.Equal(db.Time) {
			t.Fatalf("document %d differs between runs: %s / %s", i, da.Name, db.Name)
		}
	}
	if fmt.Sprint(ca.Keys.Signers()) != fmt.Sprint(cb.Keys.Signers()) || !bytes.Equal(ca.Keys.HMAC.Secret, cb.Keys.HMAC.Secret) {
		t.Fatal("keys differ between runs")
	}
	other := small()
	other.Seed++
	if bytes.Equal(generate(t, other).Docs[0].Data, ca.Docs[0].Data) {
		t.Fatal("another seed gave the same first document")
	}
}

func TestStreamMatchesGenerate(t *testing.T) {
	cfg := small()
	c := generate(t, cfg)
	i := 0
	err := ledgertest.Stream(cfg, func(d ledgertest.Doc) error {
		if d.Index != i || !bytes.Equal(d.Data, c.Docs[i].Data) {
			return fmt.Errorf("streamed document %d (%s) differs from generated %s", i, d.Name, c.Docs[i].Name)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(c.Docs) {
		t.Fatalf("streamed %d documents, generated %d", i, len(c.Docs))
	}
	stop := errors.New("stop")
	n := 0
	err = ledgertest.Stream(cfg, func(ledgertest.Doc) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Fatalf("stopping the stream: err %v after %d documents", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ledgertest.StreamContext(ctx, cfg, func(ledgertest.Doc) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled stream: %v", err)
	}
}

// TestDocumentsVerify checks that every document is valid with the corpus
// keys, that the generator's view of it (kind, ID, subject, time) is the
// codecs' view, and that attestations verify against their specification.
func TestDocumentsVerify(t *testing.T) {
	c := generate(t, small())
	ins := newInspector(t)
	specs := map[string]*avir.Spec{}
	for _, s := range c.Specs {
		sp, err := ins.ParseSpec(s.Data)
		if err != nil {
			t.Fatalf("spec %s: %v", s.System, err)
		}
		specs[s.System] = sp
	}
	opts := inspect.Options{HMACKeys: c.Keys.HMACKeys()}
	signers := c.Keys.TrustedSigners()
	for _, d := range c.Docs {
		o := opts
		if d.Kind == codec.KindAVIRAttestation {
			o.Spec = specs[d.Subject]
		}
		res := ins.Inspect(d.Data, o)
		if !res.Valid() {
			t.Fatalf("%s: %v: %v", d.Name, res.Status, res.Findings)
		}
		if res.Kind != d.Kind || res.ID != d.ID {
			t.Fatalf("%s: inspect sees %s %s, the generator said %s %s", d.Name, res.Kind, res.ID, d.Kind, d.ID)
		}
		if d.Kind != codec.KindAVIRSpec {
			if !res.Signed || !res.SignatureChecked {
				t.Fatalf("%s: signed %v, signature checked %v", d.Name, res.Signed, res.SignatureChecked)
			}
			if d.Kind != codec.KindRVWW && !signers[res.Signer] {
				t.Fatalf("%s: signer %s is not a corpus key", d.Name, res.Signer)
			}
		}
		if !res.Time.Equal(d.Time) {
			t.Fatalf("%s: document time %v, the generator said %v", d.Name, res.Time, d.Time)
		}
		if d.Kind == codec.KindVRF && res.Subject != d.Subject {
			t.Fatalf("%s: agent %q, the generator said %q", d.Name, res.Subject, d.Subject)
		}
	}
}

// TestRealism checks the shape of a corpus: chains with several signers,
// repeated tasks, the verdict and outcome mixes, a few violations and
// incomplete bundles, times inside the span and arrivals in order.
func TestRealism(t *testing.T) {
	cfg := ledgertest.Config{Seed: 7, Receipts: 2000, Bundles: 1000, Attestations: 200, Agents: 20}
	c := generate(t, cfg)
	ins := newInspector(t)
	if n := len(c.Docs); n != 3200 {
		t.Fatalf("%d documents, want 3200", n)
	}
	chainLen := map[string]int{}
	chainSigners := map[string]map[string]bool{}
	verdicts := map[string]int{}
	tiers := map[int]int{}
	taskRuns := map[string]int{}
	outcomes := map[rvww.Outcome]int{}
	policies := map[string]int{}
	attVerdicts := map[string]int{}
	systems := map[string]bool{}
	violating, incomplete, solved, postmortems := 0, 0, 0, 0
	var last time.Time
	end := c.Config.Start.Add(c.Config.Span)
	for _, d := range c.Docs {
		if d.Arrival.Before(last) {
			t.Fatalf("%s arrives at %v, before the previous document (%v)", d.Name, d.Arrival, last)
		}
		last = d.Arrival
		if d.Kind == codec.KindAVIRSpec {
			continue
		}
		if d.Time.Before(c.Config.Start) || d.Time.After(end) || d.Arrival.Before(d.Time) {
			t.Fatalf("%s: time %v arrival %v outside [%v, %v]", d.Name, d.Time, d.Arrival, c.Config.Start, end)
		}
		res := ins.Inspect(d.Data, inspect.Options{HMACKeys: c.Keys.HMACKeys()})
		switch d.Kind {
		case codec.KindVRF:
			r := res.Receipt
			verdicts[r.Verdict()]++
			tiers[r.Tier()]++
			if n := r.Counts().Total; n < 1 || n > 20 {
				t.Fatalf("%s: %d details", d.Name, n)
			}
			if pos, ok := r.ChainPosition(); ok {
				if int(pos) != chainLen[r.AgentID()] {
					t.Fatalf("%s: chain position %d, want %d", d.Name, pos, chainLen[r.AgentID()])
				}
				chainLen[r.AgentID()]++
				if chainSigners[r.AgentID()] == nil {
					chainSigners[r.AgentID()] = map[string]bool{}
				}
				chainSigners[r.AgentID()][r.Signer()] = true
			}
		case codec.KindRVWW:
			b := res.Bundle
			taskRuns[b.TaskUUID()]++
			outcomes[b.Header.Outcome]++
			policies[res.Policy.Name]++
			if len(res.Violations) > 0 {
				violating++
			}
			if b.Header.Outcome == rvww.OutcomeSolved {
				solved++
				if !b.EvidenceComplete() {
					incomplete++
				}
			} else if b.HasPostmortem {
				postmortems++
			}
			if n := len(b.Calls); n < 3 || n > 510 {
				t.Fatalf("%s: %d tool calls", d.Name, n)
			}
			if b.HasDiff && (len(b.Diff) < 1<<10 || len(b.Diff) > 31<<10) {
				t.Fatalf("%s: diff of %d bytes", d.Name, len(b.Diff))
			}
			if b.HasTestLog && (len(b.TestLog) < 512 || len(b.TestLog) > 11<<10) {
				t.Fatalf("%s: test log of %d bytes", d.Name, len(b.TestLog))
			}
		case codec.KindAVIRAttestation:
			attVerdicts[res.Attestation.Verdict()]++
			systems[res.Attestation.SystemKey()] = true
		}
	}
	longest, multiSigner := 0, 0
	for agent, n := range chainLen {
		longest = max(longest, n)
		if len(chainSigners[agent]) > 1 {
			multiSigner++
		}
	}
	if longest < 50 || multiSigner == 0 {
		t.Errorf("chains: longest %d receipts, %d chains with several signers", longest, multiSigner)
	}
	repeated := 0
	for _, n := range taskRuns {
		if n > 1 {
			repeated++
		}
	}
	if repeated < 50 {
		t.Errorf("only %d tasks have several bundles", repeated)
	}
	for _, v := range []string{"pass", "partial", "fail", "error"} {
		if verdicts[v] == 0 {
			t.Errorf("no receipt with verdict %s (%v)", v, verdicts)
		}
	}
	if float64(verdicts["pass"]) < 0.6*float64(cfg.Receipts) {
		t.Errorf("receipt verdicts %v: want mostly pass", verdicts)
	}
	if tiers[0] == 0 || tiers[1] == 0 {
		t.Errorf("tiers %v", tiers)
	}
	if rate := float64(solved) / float64(cfg.Bundles); rate < 0.58 || rate > 0.72 {
		t.Errorf("solve rate %.2f, want about 0.65 (%v)", rate, outcomes)
	}
	for _, o := range []rvww.Outcome{rvww.OutcomeFailed, rvww.OutcomeErrored, rvww.OutcomeSkipped} {
		if outcomes[o] == 0 {
			t.Errorf("no bundle with outcome %s", o)
		}
	}
	if len(policies) != 3 {
		t.Errorf("policies %v, want the three defaults", policies)
	}
	if violating == 0 || violating > cfg.Bundles/10 {
		t.Errorf("%d bundles with violations, want a few", violating)
	}
	if incomplete == 0 || incomplete > solved/5 {
		t.Errorf("%d of %d solved bundles evidence-incomplete, want a few", incomplete, solved)
	}
	if postmortems == 0 {
		t.Error("no postmortems")
	}
	for _, v := range []string{"VERIFIED", "PARTIAL", "FAILED"} {
		if attVerdicts[v] == 0 {
			t.Errorf("no attestation with verdict %s (%v)", v, attVerdicts)
		}
	}
	if len(systems) < 6 {
		t.Errorf("attestations cover %d system versions", len(systems))
	}
}

// TestAppendsToLedger appends a small corpus to a real ledger, signatures
// required and only the corpus keys trusted: every document is appended,
// and the receipt chains are whole.
func TestAppendsToLedger(t *testing.T) {
	c := generate(t, small())
	dir := t.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "ledgertest.example/log", Key: c.Keys.Verifiers[0]}); err != nil {
		t.Fatal(err)
	}
	l, err := admit.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	opts := admit.Options{HMACKeys: c.Keys.HMACKeys(), TrustedSigners: c.Keys.TrustedSigners()}
	ctx := context.Background()
	const batch = 64
	lastOfAgent := map[string]string{}
	for i := 0; i < len(c.Docs); i += batch {
		var subs []admit.Submission
		for _, d := range c.Docs[i:min(i+batch, len(c.Docs))] {
			subs = append(subs, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
			if d.Kind == codec.KindVRF {
				lastOfAgent[d.Subject] = d.ID
			}
		}
		out, err := l.Append(ctx, subs, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %s (%s): %s", o.Name, o.Status, o.Class, o.Reason)
			}
		}
	}
	if got := l.Size(); got != int64(len(c.Docs)) {
		t.Fatalf("ledger has %d events, want %d", got, len(c.Docs))
	}
	for agent, id := range lastOfAgent {
		chain, err := l.Chain(id)
		if err != nil {
			t.Fatal(err)
		}
		if chain[len(chain)-1].ID != id || chain[0].Subject != agent {
			t.Fatalf("chain of %s ends at %s, want %s", agent, chain[len(chain)-1].ID, id)
		}
	}
	// Appending the corpus again is all replays.
	out, err := l.Append(ctx, []admit.Submission{{Name: c.Docs[0].Name, Data: c.Docs[0].Data}}, opts)
	if err != nil || out[0].Status != ledger.StatusReplay {
		t.Fatalf("append again: %v %+v", err, out)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []ledgertest.Config{
		{Receipts: -1},
		{Receipts: 1, MaxDetails: 500},
		{Receipts: 1, MinDetails: 5, MaxDetails: 2},
		{Bundles: 1, Solved: 2},
		{Attestations: 1, Systems: 50},
		{Receipts: 1, Span: -time.Second},
	} {
		if _, err := ledgertest.Generate(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	c := generate(t, ledgertest.Config{Seed: 1})
	if st := c.Stats(); st.Docs[codec.KindVRF] != 200 || st.Docs[codec.KindRVWW] != 100 || st.Docs[codec.KindAVIRAttestation] != 20 {
		t.Errorf("default corpus: %v", st.Docs)
	}
}

// TestTextScale checks that TextScale changes the bundles' text sections
// only: at 0.05 and at 3 every bundle has the same identity, header
// (except its total size), trace and set of sections as at the default
// scale, verifies with the corpus key, and the corpus is smaller or
// bigger. Out-of-range scales are refused.
func TestTextScale(t *testing.T) {
	base := ledgertest.Config{Seed: 9, Bundles: 300, Workers: 3}
	ref := generate(t, base)
	refBytes := ref.Stats().Bytes[codec.KindRVWW]
	ins := newInspector(t)
	for _, scale := range []float64{0.05, 3} {
		cfg := base
		cfg.TextScale = scale
		c := generate(t, cfg)
		if len(c.Docs) != len(ref.Docs) {
			t.Fatalf("scale %v: %d documents, want %d", scale, len(c.Docs), len(ref.Docs))
		}
		for i, d := range c.Docs {
			r := ref.Docs[i]
			if d.ID != r.ID || d.Name != r.Name || !d.Time.Equal(r.Time) || !d.Arrival.Equal(r.Arrival) {
				t.Fatalf("scale %v: document %d is %s %s, want %s %s", scale, i, d.Name, d.ID, r.Name, r.ID)
			}
			if res := ins.Inspect(d.Data, inspect.Options{HMACKeys: c.Keys.HMACKeys()}); !res.Valid() {
				t.Fatalf("scale %v: %s: %v %v", scale, d.Name, res.Status, res.Findings)
			}
			got, err := rvww.Decode(d.Data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rvww.Decode(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			gh, wh := got.Header, want.Header
			gh.TotalSize, wh.TotalSize = 0, 0
			for _, calls := range [][]rvww.ToolCall{got.Calls, want.Calls} {
				for k := range calls {
					calls[k].Offset = 0 // byte offsets move with the sections before the trace
				}
			}
			if gh != wh || !reflect.DeepEqual(got.Calls, want.Calls) ||
				[5]bool{got.HasSpec, got.HasPlan, got.HasDiff, got.HasTestLog, got.HasPostmortem} !=
					[5]bool{want.HasSpec, want.HasPlan, want.HasDiff, want.HasTestLog, want.HasPostmortem} {
				t.Fatalf("scale %v: %s: header, trace or sections differ from the default scale's", scale, d.Name)
			}
		}
		size := c.Stats().Bytes[codec.KindRVWW]
		if scale < 1 && size*3 > refBytes || scale > 1 && size < 2*refBytes {
			t.Errorf("scale %v: %d bytes of bundles, %d at the default scale", scale, size, refBytes)
		}
		t.Logf("scale %v: %.0f bytes per bundle (default %.0f)", scale, float64(size)/float64(len(c.Docs)), float64(refBytes)/float64(len(ref.Docs)))
	}
	for _, s := range []float64{-1, math.NaN(), ledgertest.MaxTextScale + 1} {
		if _, err := ledgertest.Generate(ledgertest.Config{Bundles: 1, TextScale: s}); err == nil {
			t.Errorf("TextScale %v: no error", s)
		}
	}
}

// BenchmarkGenerate reports generation speed in docs/s for each kind.
func BenchmarkGenerate(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  ledgertest.Config
	}{
		{"vrf", ledgertest.Config{Seed: 1, Receipts: 2000}},
		{"rvww", ledgertest.Config{Seed: 1, Bundles: 1000}},
		{"avir", ledgertest.Config{Seed: 1, Attestations: 200}},
		{"mixed", ledgertest.Config{Seed: 1, Receipts: 1000, Bundles: 500, Attestations: 100}},
	} {
		b.Run(c.name, func(b *testing.B) {
			docs, size := 0, 0
			for b.Loop() {
				err := ledgertest.Stream(c.cfg, func(d ledgertest.Doc) error {
					docs++
					size += len(d.Data)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
			b.ReportMetric(float64(size)/float64(docs), "bytes/doc")
		})
	}
}

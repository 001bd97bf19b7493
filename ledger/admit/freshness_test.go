package admit

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/ledgertest"
	"github.com/proofledger/ledger/ledger/registry"
)

func dur(d time.Duration) *time.Duration { return &d }

// TestFreshness checks the freshness rules on a document of each kind:
// judged against the arrival (given, or the injected clock's), refused
// with status stale (class stale when too old, future when too far
// ahead) beyond a limit and admitted at it exactly, the per-call limits
// replacing the ledger's setting, zero turning a rule off, and a
// specification (no time of its own) always admitted. A refusal writes
// nothing to the log and is journaled and counted for the document's
// agent.
func TestFreshness(t *testing.T) {
	ctx := context.Background()
	c, err := ledgertest.Generate(ledgertest.Config{Seed: 11, Receipts: 4, Bundles: 2, Attestations: 2, Agents: 2, Specs: true})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[codec.Kind]ledgertest.Doc{}
	for _, d := range c.Docs {
		if _, ok := docs[d.Kind]; !ok {
			docs[d.Kind] = d
		}
	}
	for _, k := range []codec.Kind{codec.KindVRF, codec.KindRVWW, codec.KindAVIRAttestation, codec.KindAVIRSpec} {
		if _, ok := docs[k]; !ok {
			t.Fatalf("the corpus has no %s", k)
		}
	}
	const day = 24 * time.Hour
	tests := []struct {
		name    string
		setting registry.Freshness // the ledger's
		opts    Options            // MaxAge, MaxSkew, Clock (the clock's "now" is relative to the document's time)
		offset  time.Duration      // arrival - document time
		clock   bool               // stamp the arrival with the injected clock, not Submission.Arrival
		class   string             // "" admitted, else stale or future
		reason  string
	}{
		{name: "off", offset: 10 * 365 * day},
		{name: "off, far ahead", offset: -10 * 365 * day},
		{name: "setting: younger than max-age", setting: registry.Freshness{MaxAge: 30 * day}, offset: 29 * day},
		{name: "setting: exactly max-age", setting: registry.Freshness{MaxAge: 30 * day}, offset: 30 * day},
		{name: "setting: 1ns past max-age", setting: registry.Freshness{MaxAge: 30 * day}, offset: 30*day + 1,
			class: ledger.RejectStale, reason: "is 30d1s old at arrival"},
		{name: "setting: 41d old", setting: registry.Freshness{MaxAge: 30 * day}, offset: 41 * day,
			class: ledger.RejectStale, reason: "is 41d old at arrival"},
		{name: "setting: exactly max-skew ahead", setting: registry.Freshness{MaxSkew: 5 * time.Minute}, offset: -5 * time.Minute},
		{name: "setting: 2h ahead", setting: registry.Freshness{MaxSkew: 5 * time.Minute}, offset: -2 * time.Hour,
			class: ledger.RejectFuture, reason: "is 2h ahead of arrival"},
		{name: "setting: max-skew does not limit age", setting: registry.Freshness{MaxSkew: 5 * time.Minute}, offset: 400 * day},
		{name: "setting: max-age does not limit skew", setting: registry.Freshness{MaxAge: time.Hour}, offset: -400 * day},
		{name: "both: old", setting: registry.Freshness{MaxAge: time.Hour, MaxSkew: time.Minute}, offset: 2 * time.Hour,
			class: ledger.RejectStale, reason: "older than the ledger's max-age 1h"},
		{name: "both: ahead", setting: registry.Freshness{MaxAge: time.Hour, MaxSkew: time.Minute}, offset: -2 * time.Minute,
			class: ledger.RejectFuture, reason: "beyond the ledger's max-skew 1m"},
		{name: "flag overrides setting: admitted", setting: registry.Freshness{MaxAge: time.Hour}, opts: Options{MaxAge: dur(30 * day)}, offset: 2 * day},
		{name: "flag overrides setting: refused", setting: registry.Freshness{MaxAge: 30 * day}, opts: Options{MaxAge: dur(time.Hour)}, offset: 2 * time.Hour,
			class: ledger.RejectStale, reason: "older than max-age set for this call 1h"},
		{name: "flag 0 turns the setting off", setting: registry.Freshness{MaxAge: time.Hour, MaxSkew: time.Minute}, opts: Options{MaxAge: dur(0)}, offset: 2 * time.Hour},
		{name: "flag overrides one limit only", setting: registry.Freshness{MaxAge: time.Hour, MaxSkew: time.Minute}, opts: Options{MaxAge: dur(0)}, offset: -time.Hour,
			class: ledger.RejectFuture, reason: "the ledger's max-skew 1m"},
		{name: "flag without setting", opts: Options{MaxSkew: dur(time.Second)}, offset: -2 * time.Second,
			class: ledger.RejectFuture, reason: "max-skew set for this call 1s"},
		{name: "injected clock: stale", opts: Options{MaxAge: dur(time.Hour)}, offset: time.Hour + time.Second, clock: true,
			class: ledger.RejectStale, reason: "is 1h1s old at arrival"},
		{name: "injected clock: fresh", opts: Options{MaxAge: dur(time.Hour)}, offset: time.Hour, clock: true},
		{name: "import's AnyTime", setting: registry.Freshness{MaxAge: time.Hour}, opts: Options{AnyTime: true, MaxSkew: dur(time.Second)}, offset: 400 * day},
	}
	for _, kind := range []codec.Kind{codec.KindVRF, codec.KindRVWW, codec.KindAVIRAttestation, codec.KindAVIRSpec} {
		d := docs[kind]
		docTime := d.Time
		if kind == codec.KindAVIRSpec {
			docTime = docs[codec.KindAVIRAttestation].Time // a specification has none: any arrival
		} else if docTime.IsZero() {
			t.Fatalf("%s %s: the corpus gives no time", kind, d.Name)
		}
		for _, tc := range tests {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				l := newLedger(t, ledger.Options{})
				if err := l.Registry().SetFreshness(tc.setting); err != nil {
					t.Fatal(err)
				}
				arrival := docTime.Add(tc.offset)
				opts := tc.opts
				opts.HMACKeys, opts.TrustedSigners, opts.Submitter = c.Keys.HMACKeys(), c.Keys.TrustedSigners(), "test"
				sub := Submission{Name: d.Name, Data: d.Data, Arrival: arrival}
				if tc.clock {
					sub.Arrival = time.Time{}
					opts.Clock = func() time.Time { return arrival }
				}
				out, err := l.Append(ctx, []Submission{sub}, opts)
				if err != nil {
					t.Fatal(err)
				}
				o := out[0]
				class := tc.class
				if kind == codec.KindAVIRSpec {
					class = "" // no time of its own: never stale
				}
				if class == "" {
					if o.Status != ledger.StatusAppended {
						t.Fatalf("%s %s %q, want appended", o.Status, o.Class, o.Reason)
					}
					if !o.Event.AppendedAt.Equal(arrival) {
						t.Errorf("appended_at %v, want the arrival %v", o.Event.AppendedAt, arrival)
					}
					return
				}
				if o.Status != ledger.StatusStale || o.Class != class || o.Seq != -1 || !strings.Contains(o.Reason, tc.reason) ||
					!strings.Contains(o.Reason, "document time "+docTime.UTC().Format(time.RFC3339Nano)+" ("+timeField(kind)+")") {
					t.Fatalf("%s %s seq %d %q, want stale %s containing %q and the document's time and field", o.Status, o.Class, o.Seq, o.Reason, class, tc.reason)
				}
				if n := l.Size(); n != 0 {
					t.Errorf("the log holds %d events after a stale refusal", n)
				}
				var recs []*ledger.RefusalRecord
				if err := l.Refusals(ctx, ledger.RefusalQuery{}, func(r *ledger.RefusalRecord) (bool, error) { recs = append(recs, r); return true, nil }); err != nil {
					t.Fatal(err)
				}
				if len(recs) != 1 || recs[0].Status != ledger.StatusStale || recs[0].Reason != class || recs[0].Class != class ||
					recs[0].Detail != o.Reason || recs[0].Agent == "" || !recs[0].Time.Equal(arrival) {
					t.Fatalf("journal %+v, want one stale record (%s) with an agent at the arrival", recs, class)
				}
				counts, err := l.RefusalCounts(recs[0].Agent)
				if err != nil {
					t.Fatal(err)
				}
				if counts[class] != 1 {
					t.Errorf("agent %s's counts %v, want %s: 1", recs[0].Agent, counts, class)
				}
			})
		}
	}
}

// TestFreshnessAfterIdentity checks that the freshness rules come after
// the identity check: a copy of a document the ledger admitted when it
// was fresh is a replay once it is old, and a conflict stays a conflict;
// a stale document is refused the same within a call of fresh ones.
func TestFreshnessAfterIdentity(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	signer := testKey(3)
	r0 := receipt(t, signer, 1, "agent-a", "", -1)
	r1 := receipt(t, signer, 2, "agent-a", "", -1)
	t0 := testEpoch.Add(time.Minute)
	if err := l.Registry().SetFreshness(registry.Freshness{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	out, err := l.Append(ctx, []Submission{{Name: "r0", Data: r0, Arrival: t0}}, Options{})
	if err != nil || out[0].Status != ledger.StatusAppended {
		t.Fatalf("fresh: %v %+v", err, out)
	}
	later := t0.Add(48 * time.Hour)
	conflict := []byte(strings.Replace(string(r0), "{\n", "{\n  ", 1))
	out, err = l.Append(ctx, []Submission{{Name: "replay", Data: r0, Arrival: later}, {Name: "conflict", Data: conflict, Arrival: later},
		{Name: "stale", Data: r1, Arrival: later}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []ledger.Status{ledger.StatusReplay, ledger.StatusConflict, ledger.StatusStale} {
		if out[i].Status != want {
			t.Errorf("%s: %s %q, want %s", out[i].Name, out[i].Status, out[i].Reason, want)
		}
	}
	if l.Size() != 1 {
		t.Errorf("size %d, want 1", l.Size())
	}
}

func TestParseFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		text string // FormatDuration(want)
		bad  bool
	}{
		{in: "0", want: 0, text: "0s"},
		{in: "720h", want: 720 * time.Hour, text: "30d"},
		{in: "30d", want: 720 * time.Hour, text: "30d"},
		{in: "2w", want: 14 * 24 * time.Hour, text: "14d"},
		{in: "5m", want: 5 * time.Minute, text: "5m"},
		{in: "1h30m", want: 90 * time.Minute, text: "1h30m"},
		{in: "90s", want: 90 * time.Second, text: "1m30s"},
		{in: "250ms", want: 250 * time.Millisecond, text: "250ms"},
		{in: "-1h", bad: true},
		{in: "-3d", bad: true},
		{in: "d", bad: true},
		{in: "1.5d", bad: true},
		{in: "40000d", bad: true},
		{in: "1000000h", bad: true},
		{in: "soon", bad: true},
		{in: "", bad: true},
	} {
		got, err := registry.ParseDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if s := registry.FormatDuration(got); s != tc.text {
			t.Errorf("FormatDuration(%v) = %q, want %q", got, s, tc.text)
		}
	}
}

// TestFreshnessTravelsAndImportIgnoresIt checks that the freshness
// setting travels in an export archive and is restored by an import, and
// that the import admits the archive's documents however old they are by
// that setting (it never applies freshness; neither does the audit).
func TestFreshnessTravelsAndImportIgnoresIt(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	signer := testKey(3)
	at := testEpoch.Add(2 * time.Minute)
	out, err := l.Append(ctx, []Submission{{Name: "r1", Data: receipt(t, signer, 1, "agent-a", "", -1), Arrival: at},
		{Name: "r2", Data: receipt(t, signer, 2, "agent-a", "", -1), Arrival: at}}, Options{})
	if err != nil || out[0].Status != ledger.StatusAppended || out[1].Status != ledger.StatusAppended {
		t.Fatalf("append: %v %+v", err, out)
	}
	// A setting the archive's documents are far too old for by now, and
	// far too old for at their own arrival (max-age 1ns).
	want := registry.Freshness{MaxAge: time.Nanosecond, MaxSkew: 5 * time.Minute}
	if err := l.Registry().SetFreshness(want); err != nil {
		t.Fatal(err)
	}
	var arch bytes.Buffer
	if _, err := l.Export(ctx, &arch); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	st, err := Import(ctx, dir, bytes.NewReader(arch.Bytes()), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 2 {
		t.Errorf("imported %d events, want 2", st.Events)
	}
	r, err := Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if got, err := r.Registry().Freshness(); err != nil || got != want {
		t.Errorf("restored freshness %+v, %v; want %+v", got, err, want)
	}
	// The restored ledger applies it to new appends.
	out, err = r.Append(ctx, []Submission{{Name: "r3", Data: receipt(t, signer, 3, "agent-a", "", -1), Arrival: at.Add(time.Hour)}}, Options{})
	if err != nil || out[0].Status != ledger.StatusStale {
		t.Errorf("append to the restored ledger: %v %+v, want stale", err, out)
	}
}

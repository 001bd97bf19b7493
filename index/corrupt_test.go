package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/proof"
)

// valueDecoder is a decoder of stored values with the keyspace it reads.
type valueDecoder struct {
	name   string
	prefix []byte
	decode func(k, v []byte) (record, error)
}

// valueDecoders are every decoder of stored projection values.
var valueDecoders = []valueDecoder{
	{"reputation", pAgent, func(k, v []byte) (record, error) { return decodeRep(k, v) }},
	{"bundle", pBundle, func(k, v []byte) (record, error) { return decodeBundle(k, v) }},
	{"rollup", pRollup, func(k, v []byte) (record, error) {
		r, lat, err := decodeRollupAt(k, v)
		if err != nil {
			return nil, err
		}
		r.loadLatencies(lat)
		return r, nil
	}},
	{"task", pTask, func(k, v []byte) (record, error) { return decodeTask(k, v) }},
	{"task bundle", pTaskBundle, func(k, v []byte) (record, error) { return decodeTaskBundle(k, v) }},
	{"counter", pTier, func(k, v []byte) (record, error) { return decodeCounter(k, v) }},
	{"system", pSystem, func(k, v []byte) (record, error) { return decodeSys(k, v) }},
	{"verifier", pVerifier, func(k, v []byte) (record, error) { return decodeVer(k, v) }},
	{"rollback", pRollback, func(k, v []byte) (record, error) { return decodeRollback(k, v) }},
	{"regression", pRegression, func(k, v []byte) (record, error) { return decodeRegression(k, v) }},
	{"agent event", pAgentEvent, func(k, v []byte) (record, error) { return decodeKindRec(k, v) }},
	{"subject event", pSubjectEvent, func(k, v []byte) (record, error) { return decodeKindRec(k, v) }},
}

func decoderOf(t *testing.T, name string) valueDecoder {
	t.Helper()
	for _, d := range valueDecoders {
		if d.name == name {
			return d
		}
	}
	t.Fatalf("no decoder %s", name)
	return valueDecoder{}
}

// checkCorrupt fails unless err wraps ErrCorrupt and names key and every
// one of want.
func checkCorrupt(t *testing.T, err error, key []byte, want ...string) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("error %v, want one wrapping ErrCorrupt", err)
		return
	}
	for _, w := range append([]string{quoteKey(key)}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
}

// TestValuesRoundTripAndTruncate decodes every value of a projected
// sample store, demands that it re-encodes to the same bytes, and that
// every truncation of it, and it with a byte more, fails naming the key.
func TestValuesRoundTripAndTruncate(t *testing.T) {
	m, err := project(sampleEvents())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for k, v := range m {
		key := []byte(k)
		var d valueDecoder
		for _, c := range valueDecoders {
			if bytes.HasPrefix(key, c.prefix) {
				d = c
			}
		}
		if d.decode == nil {
			if !bytes.HasPrefix(key, pAgentDay) && !bytes.HasPrefix(key, pAgentTask) && !bytes.HasPrefix(key, pSigner) && !bytes.HasPrefix(key, pSignerDay) {
				t.Errorf("no decoder for %q", k)
				continue
			}
			d = decoderOf(t, "reputation")
		}
		seen[d.name]++
		r, err := d.decode(key, v)
		if err != nil {
			t.Errorf("%s %q: %v", d.name, k, err)
			continue
		}
		if got := r.encode(); !bytes.Equal(got, v) {
			t.Errorf("%s %q: decodes and re-encodes to %x, stored %x", d.name, k, got, v)
		}
		for n := range len(v) {
			_, err := d.decode(key, v[:n])
			checkCorrupt(t, err, key, "truncated")
		}
		_, err = d.decode(key, append(bytes.Clone(v), 0))
		checkCorrupt(t, err, key, "1 trailing bytes")
	}
	for _, d := range valueDecoders {
		if seen[d.name] == 0 {
			t.Errorf("the sample store has no %s value", d.name)
		}
	}
}

// TestValueCorruption feeds each decoder values that are well-formed
// byte-wise but that the index never writes.
func TestValueCorruption(t *testing.T) {
	vals := func(f func(e *enc)) []byte {
		var e enc
		f(&e)
		return e.b
	}
	rep := func(first, last int64, s float64) []byte {
		return vals(func(e *enc) {
			e.u(1)
			e.u(0)
			e.u(0)
			e.u(0)
			e.i(first)
			e.i(last)
			e.f(s)
			e.f(0)
		})
	}
	bundle := func(outcome, known byte, latency uint64) []byte {
		return vals(func(e *enc) {
			e.byte1(outcome)
			e.byte1(known)
			e.flag(true)
			e.byte1(2)
			e.b = append(e.b, make([]byte, 8)...)
			e.u(1)
			e.u(latency)
			e.u(1)
			e.u(0)
			e.u(0)
			e.s("task")
		})
	}
	rollup := func(solved uint64, lat ...uint64) []byte {
		return vals(func(e *enc) {
			e.u(solved)
			for range 8 {
				e.u(0)
			}
			e.u(uint64(len(lat) / 2))
			for _, x := range lat {
				e.u(x)
			}
		})
	}
	task := func(solved bool, first int64, days ...int64) []byte {
		return vals(func(e *enc) {
			e.flag(solved)
			e.i(first)
			e.u(uint64(len(days)))
			for _, d := range days {
				e.i(d)
				e.i(5)
			}
		})
	}
	for _, tc := range []struct {
		name, decoder string
		value         []byte
		want          []string // in the error, besides the key
	}{
		{"empty reputation", "reputation", nil, []string{"pass at byte 0 of 0", "truncated"}},
		{"non-minimal varint", "reputation", []byte{0x80, 0x00}, []string{"pass at byte 0", "not minimal"}},
		{"varint overflow", "counter", bytes.Repeat([]byte{0xff}, 11), []string{"count", "overflows"}},
		{"NaN sum", "reputation", rep(1, 2, math.NaN()), []string{"success sum", "NaN"}},
		{"negative sum", "reputation", rep(1, 2, -1), []string{"success sum", "-1"}},
		{"first after last", "reputation", rep(3, 2, 1), []string{"first receipt"}},
		{"outcome byte 4", "bundle", bundle(4, 1, 10), []string{"outcome at byte 0", "byte 4 exceeds 3"}},
		{"outcome byte 0x80", "bundle", bundle(0x80, 1, 10), []string{"outcome at byte 0", "byte 128 exceeds 3"}},
		{"flag byte 2", "bundle", bundle(0, 2, 10), []string{"policy_known at byte 1", "flag byte 2"}},
		{"latency over 32 bits", "bundle", bundle(0, 1, 1<<32), []string{"latency_ms", "exceeds"}},
		{"short policy", "bundle", []byte{0, 1, 1, 2, 0, 0, 0}, []string{"policy at byte 4", "value truncated (8 bytes, 3 left)"}},
		{"latency count 0", "rollup", rollup(1, 5, 0), []string{"latency count at byte 11", "count 0"}},
		{"latencies not rising", "rollup", rollup(2, 5, 1, 0, 1), []string{"latency at", "must rise"}},
		{"latency over 32 bits", "rollup", rollup(2, 1<<31, 1, 1<<31, 1), []string{"latency at", "fit 32 bits"}},
		{"latencies for other bundles", "rollup", rollup(3, 5, 1), []string{"1 latencies for 3 bundles"}},
		{"too many latencies", "rollup", vals(func(e *enc) {
			for range 9 {
				e.u(0)
			}
			e.u(1000)
			e.u(1)
			e.u(1)
		}), []string{"latencies at byte 9", "1000 entries of 2 bytes or more, 2 bytes left"}},
		{"too many fail days", "task", vals(func(e *enc) { e.flag(true); e.i(1); e.u(1 << 40) }), []string{"fail days at byte 2", "1099511627776 entries"}},
		{"unsolved task solved", "task", task(false, 7), []string{"first_solved", "never solved"}},
		{"fail days not rising", "task", task(true, 1, 5, 5), []string{"fail day", "must rise"}},
		{"fail day beyond int32", "task", task(true, 1, 1<<40), []string{"fail day", "fit 32 bits"}},
		{"passed over total", "system", vals(func(e *enc) {
			e.s("VERIFIED")
			e.s("L2")
			e.i(4)
			e.i(3)
			e.i(0)
			e.s("")
			e.s("id")
		}), []string{"4 passed of 3"}},
		{"string past the end", "verifier", vals(func(e *enc) { e.u(10); e.b = append(e.b, "abc"...) }), []string{"system at byte 0", "truncated: length 10 exceeds the 3 bytes left"}},
		{"rollback flag 7", "rollback", vals(func(e *enc) { e.s("t"); e.byte1(7) }), []string{"restored_clean at byte 2", "flag byte 7"}},
		{"empty regression", "regression", nil, []string{"first_solved", "truncated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decoderOf(t, tc.decoder)
			key := append(bytes.Clone(d.prefix), "some\x00key"...)
			_, err := d.decode(key, tc.value)
			checkCorrupt(t, err, key, tc.want...)
		})
	}
}

func TestQuoteKeyTruncates(t *testing.T) {
	long := bytes.Repeat([]byte{'k'}, 1000)
	q := quoteKey(long)
	if len(q) > maxKeyQuote+40 || !strings.Contains(q, "(1000 bytes)") {
		t.Errorf("quoteKey of 1000 bytes = %s", q)
	}
	if q := quoteKey([]byte("x/a/\x00\xff")); q != `"x/a/\x00\xff"` {
		t.Errorf("quoteKey = %s", q)
	}
}

// queries runs every query on r and returns the errors, by query.
func queries(r Reader) map[string]error {
	since := sampleTime.Add(-48 * time.Hour)
	out := map[string]error{}
	_, out["Agent"] = Agent(r, "agent-1", time.Time{})
	_, out["Agent since"] = Agent(r, "agent-1", since)
	_, out["Signer"] = Signer(r, "ed25519:aa", time.Time{})
	_, out["Signer since"] = Signer(r, "ed25519:aa", since)
	_, out["Agents"] = Agents(r, time.Time{}, sampleTime)
	_, out["Agents since"] = Agents(r, since, sampleTime)
	_, out["Signers"] = Signers(r, time.Time{}, sampleTime)
	_, out["Signers since"] = Signers(r, since, sampleTime)
	_, out["TierVerdicts"] = TierVerdicts(r)
	_, out["Systems"] = Systems(r)
	_, out["VerifierAttestations"] = VerifierAttestations(r)
	_, out["Aggregate"] = Aggregate(r, time.Time{}, time.Time{}, AnyBundle)
	_, out["Aggregate edges"] = Aggregate(r, sampleTime.Add(-time.Hour), sampleTime.Add(100*time.Hour), AnyBundle)
	_, out["Aggregate one day"] = Aggregate(r, sampleTime.Add(-time.Hour), sampleTime.Add(time.Hour), Filter{Mode: 2})
	for d := DayOf(sampleTime) - 1; d < DayOf(sampleTime)+6; d++ {
		// A window inside one day reads its bundle records.
		if _, err := Aggregate(r, d.Start().Add(time.Nanosecond), (d + 1).Start(), AnyBundle); err != nil {
			out["Aggregate within "+d.String()] = err
		}
	}
	_, out["Rollbacks"] = Rollbacks(r, time.Time{}, time.Time{})
	_, out["Regressions"] = Regressions(r, Day(math.MinInt32), Day(math.MaxInt32))
	_, _, _, out["BundleDays"] = BundleDays(r)
	// Every agent's and subject's events, alone, by kind and combined.
	for _, p := range [][]byte{pAgentEvent, pSubjectEvent} {
		for _, name := range selectionNames(r, p) {
			sel := Selection{Agent: name}
			if bytes.Equal(p, pSubjectEvent) {
				sel = Selection{Subject: name, Agent: "ed25519:aa"}
			}
			q := fmt.Sprintf("Events %s %q", p, name)
			out[q] = Events(r, sel, 0, 1<<40, func(int64) (bool, error) { return true, nil })
			sel.Kinds = []codec.Kind{codec.KindVRF}
			if err := Events(r, sel, 2, 5, func(int64) (bool, error) { return true, nil }); err != nil && out[q] == nil {
				out[q] = err
			}
			if bytes.Equal(p, pSubjectEvent) {
				sel = Selection{Subject: name}
				if err := Events(r, sel, 0, 1<<40, func(int64) (bool, error) { return true, nil }); err != nil && out[q] == nil {
					out[q] = err
				}
			}
		}
	}
	return out
}

// selectionNames lists the names under an investigation keyspace (for
// queries to visit each).
func selectionNames(r Reader, p []byte) []string {
	var names []string
	_ = r.Range(p, prefixEnd(p), func(k, _ []byte) (bool, error) {
		if len(k) >= len(p)+9 && k[len(k)-9] == 0 {
			if n := string(k[len(p) : len(k)-9]); n != "" && (len(names) == 0 || names[len(names)-1] != n) {
				names = append(names, n)
			}
		}
		return true, nil
	})
	return names
}

// TestCorruptValuesSurface truncates each value of a projected sample
// store in turn and demands that a query, or projecting the samples again
// (which reads the aggregates back), fails naming its key.
func TestCorruptValuesSurface(t *testing.T) {
	evs := sampleEvents()
	m, err := project(evs)
	if err != nil {
		t.Fatal(err)
	}
	for q, err := range queries(m) {
		if err != nil {
			t.Fatalf("%s on the sample store: %v", q, err)
		}
	}
	for k, v := range m {
		bad := memStore{}
		for k2, v2 := range m {
			bad[k2] = v2
		}
		bad[k] = v[:len(v)-1]
		var caught []string
		for q, err := range queries(bad) {
			if err != nil {
				checkCorrupt(t, err, []byte(k))
				caught = append(caught, q)
			}
		}
		for _, ev := range evs {
			b := New().Begin()
			if err := b.Project(bad, ev); err != nil {
				checkCorrupt(t, err, []byte(k))
				caught = append(caught, "Project")
			}
		}
		if len(caught) == 0 {
			t.Errorf("value of %q truncated: no query and no projection noticed", k)
		}
	}
}

// TestCorruptKeys puts one malformed key under each keyspace and demands
// that the queries that scan it fail naming the key.
func TestCorruptKeys(t *testing.T) {
	rep := (&repAgg{pass: 1, first: 1, last: 1}).encode()
	one := (func() *counter { c := counter(1); return &c })().encode()
	sys := (&sysRec{verdict: "VERIFIED", passed: 1, total: 1}).encode()
	ver := (&verRec{system: "s", verdict: "VERIFIED"}).encode()
	rb := (&rollbackRec{task: "t", clean: true}).encode()
	day := DayOf(sampleTime).key()
	for _, tc := range []struct {
		name  string
		key   []byte
		value []byte
		query string
		want  string
	}{
		{"agent without NUL", join(pAgent, []byte("agent-1")), rep, "Agents", "want <subject>\\0"},
		{"bare agent prefix", bytes.Clone(pAgent), rep, "Agents", "0 bytes after"},
		{"signer without NUL", join(pSigner, []byte("ed25519:aa")), rep, "Signers", "want <subject>\\0"},
		{"tier 9", join(pTier, []byte{9}, []byte("pass")), one, "TierVerdicts", "tier 9"},
		{"tier without verdict", join(pTier, []byte{1}), one, "TierVerdicts", "1 bytes after"},
		{"system key short", join(pSystem, []byte("abc")), sys, "Systems", "3 bytes after"},
		{"system key without NUL", join(pSystem, []byte("Memoria v1"), seqKey(3)), sys, "Systems", "want <name>\\0<seq"},
		{"system seq negative", join(pSystem, []byte("M"), []byte{0}, seqKey(-1)), sys, "Systems", "seq -1"},
		{"verifier key short", join(pVerifier, []byte{0}), ver, "VerifierAttestations", "1 bytes after"},
		{"rollup key short", join(pRollup, day, []byte{1, 2, 3}), nil, "Aggregate", "7 bytes after"},
		{"rollup key long", join(pRollup, day, make([]byte, 11)), nil, "Aggregate", "want <day 4><policy 8><mode><known 0 or 1>"},
		{"rollup known byte 2", join(pRollup, day, make([]byte, 9), []byte{2}), nil, "Aggregate", "want <day 4><policy 8><mode><known 0 or 1>"},
		{"bundle key short", join(pBundle, nsKey(sampleTime.UnixNano())), nil, "BundleDays", "8 bytes after"},
		{"bundle key on an edge day", join(pBundle, nsKey(sampleTime.UnixNano()), []byte{1}), nil, "Aggregate edges", "9 bytes after"},
		{"rollback key long", join(pRollback, nsKey(sampleTime.UnixNano()), seqKey(1), []byte{0}), rb, "Rollbacks", "got 17 bytes"},
		{"rollback key counted", join(pRollback, nsKey(sampleTime.UnixNano())), rb, "Aggregate", "8 bytes after"},
		{"regression key short", join(pRegression, day), nil, "Regressions", "4 bytes after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := memStore{string(tc.key): tc.value}
			err := queries(m)[tc.query]
			checkCorrupt(t, err, tc.key, tc.want)
		})
	}
}

// TestSubjectNamesWithNUL: an agent whose name continues another's past
// a NUL byte does not count as, or break, the other's windowed figures.
func TestSubjectNamesWithNUL(t *testing.T) {
	evs := sampleEvents()[:1]
	other := *evs[0]
	other.Seq, other.Subject = 1, evs[0].Subject+"\x00xy"
	m, err := project(append(evs, &other))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Agent(m, evs[0].Subject, sampleTime.Add(-time.Hour))
	if err != nil || rep.Receipts() != 1 {
		t.Errorf("Agent since: %+v %v, want 1 receipt", rep, err)
	}
	all, err := Agents(m, time.Time{}, sampleTime)
	if err != nil || len(all) != 2 {
		t.Errorf("Agents: %+v %v, want 2", all, err)
	}
}

// TestProjectRejectsBadAttrs projects events whose attributes are not
// what the ledger writes and demands an error naming the event and the
// field.
func TestProjectRejectsBadAttrs(t *testing.T) {
	parse := func(s string) canonjson.Value {
		v, err := canonjson.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	receipt := `{"verdict":"pass","tier":0,"total":1,"passed":1,"failed":0,"errors":0}`
	bundle := `{"outcome":"solved","mode":2,"policy":"0102030405060708","policy_known":false,"cost":1,"latency_ms":2,"tokens":3,"retries":0,"tool_calls":1,"evidence_complete":true}`
	for _, tc := range []struct {
		kind  codec.Kind
		attrs canonjson.Value
		field string
	}{
		{codec.KindVRF, canonjson.MakeObject(), "attrs.verdict: missing"},
		{codec.KindVRF, parse(receipt).With("verdict", canonjson.MakeInt(1)), "attrs.verdict: want a string, got 1"},
		{codec.KindVRF, parse(receipt).With("tier", canonjson.MakeString("0")), "attrs.tier: want an integer, got string"},
		{codec.KindVRF, parse(receipt).With("passed", canonjson.MakeInt(-1)), "attrs.passed: want a non-negative integer"},
		{codec.KindAVIRAttestation, parse(`{"verdict":"VERIFIED"}`), "attrs.level: missing"},
		{codec.KindRVWW, parse(bundle).With("outcome", canonjson.MakeString("won")), "attrs.outcome: want"},
		{codec.KindRVWW, parse(bundle).With("cost", canonjson.MakeFloat(1.5)), "attrs.cost: want an integer, got 1.5"},
		{codec.KindRVWW, parse(bundle).With("extra", canonjson.MakeNull()), `attrs."extra": unknown key`},
		{ledger.KindRollback, parse(`{"restored_clean":"yes"}`), "attrs.restored_clean: want a boolean, got string"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			ev := &ledger.Event{Leaf: proof.Leaf{Seq: 41, Kind: tc.kind, Subject: "s", Time: sampleTime, Attrs: tc.attrs}}
			m := memStore{}
			err := New().Begin().Project(m, ev)
			if !errors.Is(err, attrs.ErrInvalid) {
				t.Fatalf("error %v, want one wrapping attrs.ErrInvalid", err)
			}
			for _, want := range []string{"event 41", string(tc.kind), tc.field} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestOutcomeCodes: rvww's four outcomes are the index's codes, and
// every other byte counts as an error.
func TestOutcomeCodes(t *testing.T) {
	for o := range 256 {
		want := uint8(outError)
		switch rvww.Outcome(o) {
		case rvww.OutcomeSolved:
			want = outSolved
		case rvww.OutcomeFailed:
			want = outFailed
		case rvww.OutcomeSkipped:
			want = outSkipped
		}
		if got := outcomeCode(rvww.Outcome(o)); got != want {
			t.Errorf("outcome %d: code %d, want %d", o, got, want)
		}
	}
}

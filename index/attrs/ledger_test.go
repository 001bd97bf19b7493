package attrs_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

const root = "../../testdata"

// files returns the submissions of every file under dir (recursively),
// sorted by path.
func files(t *testing.T, dir string) []admit.Submission {
	t.Helper()
	var subs []admit.Submission
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".json", ".rvww", ".yaml":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		subs = append(subs, admit.Submission{Name: p, Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return subs
}

func hmacKey(t *testing.T, p string) keys.HMACKey {
	t.Helper()
	k, err := keys.LoadHMACKey(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestOfMatchesLedger appends the sample documents (testdata/vrf, avir,
// rvww, vectors and demo) and generated corpora (ledger/ledgertest, with
// specifications, many governance violations and rollback records) to a
// ledger, reads every stored leaf back and demands that its attrs are, in
// canonical JSON, what Of makes of the same document's inspect result,
// and that the typed decoder of its kind reads them and re-encodes them
// to the same bytes.
func TestOfMatchesLedger(t *testing.T) {
	dir := t.TempDir()
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "attrs.test"}); err != nil {
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

	corpus, err := ledgertest.Generate(ledgertest.Config{Seed: 7, Receipts: 400, Bundles: 400, Attestations: 60, Specs: true,
		Violations: 0.3, Incomplete: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	hmac := []keys.HMACKey{hmacKey(t, "vectors/rvww/hmac_key.txt"), hmacKey(t, "demo/hmac_key.bin")}
	hmac = append(hmac, corpus.Keys.HMACKeys()...)
	opts := admit.Options{AllowUnsigned: true, HMACKeys: hmac}

	var generated, rollbacks []admit.Submission
	rbKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	for i, d := range corpus.Docs {
		generated = append(generated, admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival})
		if d.Kind == codec.KindRVWW && i%7 == 0 {
			doc, err := rollback.Sign(d.Subject, i%2 == 0, d.Time.Add(time.Minute), "test rollback", rbKey)
			if err != nil {
				t.Fatal(err)
			}
			rollbacks = append(rollbacks, admit.Submission{Name: "rollback-" + d.Name, Data: doc})
		}
	}
	// Rollbacks follow the bundles of their tasks.
	calls := [][]admit.Submission{
		crafted(t), files(t, "vrf"), files(t, "avir"), files(t, "rvww"), files(t, "vectors"),
		files(t, "demo/vrf"), files(t, "demo/avir"), files(t, "demo/rvww"), files(t, "demo/rollback"),
		generated, rollbacks,
	}
	var seqs []int64
	for _, subs := range calls {
		out, err := l.Append(context.Background(), subs, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status == ledger.StatusAppended {
				seqs = append(seqs, o.Seq)
			}
		}
	}

	policies, err := l.Registry().Policies()
	if err != nil {
		t.Fatal(err)
	}
	iopts := inspect.Options{HMACKeys: hmac, Policies: policies}
	kinds := map[codec.Kind]int{}
	seen := map[string]int{}
	for _, seq := range seqs {
		ev, err := l.Event(seq, true)
		if err != nil {
			t.Fatal(err)
		}
		res := l.Inspector().Inspect(ev.Data, iopts)
		if ev.Attrs.Len() == 0 && attrs.Of(res).Len() == 0 {
			kinds[ev.Kind]++
			continue // no facts: the leaf omits attrs
		}
		stored, mine := canonjson.Canonical(ev.Attrs), canonjson.Canonical(attrs.Of(res))
		if !bytes.Equal(stored, mine) {
			t.Errorf("event %d (%s): the ledger stored attrs\n%s\nOf gives\n%s", seq, ev.Kind, stored, mine)
			continue
		}
		kinds[ev.Kind]++
		var typed interface{ Value() canonjson.Value }
		switch ev.Kind {
		case codec.KindVRF:
			var a attrs.Receipt
			err = a.Decode(ev.Attrs)
			typed = a
			seen["receipt verdict "+a.Verdict]++
			if a.TaskType != "" {
				seen["receipt with task_type"]++
			} else {
				seen["receipt without task_type"]++
			}
		case codec.KindAVIRAttestation:
			var a attrs.Attestation
			err = a.Decode(ev.Attrs)
			typed = a
			seen["attestation verdict "+a.Verdict]++
			if a.Level == "" {
				seen["attestation without level"]++
			}
		case codec.KindRVWW:
			var a attrs.Bundle
			err = a.Decode(ev.Attrs)
			typed = a
			seen["bundle outcome "+a.Outcome.String()]++
			switch {
			case !a.PolicyKnown:
				seen["bundle of an unknown policy"]++
			case len(a.Violations) > 0:
				seen["bundle with violations"]++
			default:
				seen["bundle without violations"]++
			}
		case ledger.KindRollback:
			var a attrs.Rollback
			err = a.Decode(ev.Attrs)
			typed = a
			seen["rollback"]++
		default:
			if ev.Attrs.Len() != 0 {
				t.Errorf("event %d (%s): attrs %s, want none", seq, ev.Kind, stored)
			}
			continue
		}
		if err != nil {
			t.Errorf("event %d (%s): stored attrs %s do not decode: %v", seq, ev.Kind, stored, err)
			continue
		}
		if again := canonjson.Canonical(typed.Value()); !bytes.Equal(again, stored) {
			t.Errorf("event %d (%s): attrs %s decode and re-encode to %s", seq, ev.Kind, stored, again)
		}
	}
	t.Logf("%d events compared: %v", len(seqs), kinds)
	var cases []string
	for k, n := range seen {
		cases = append(cases, k+"="+strconv.Itoa(n))
	}
	sort.Strings(cases)
	t.Logf("cases: %s", strings.Join(cases, ", "))
	for _, want := range []string{
		"receipt verdict pass", "receipt verdict fail", "receipt verdict partial", "receipt verdict error",
		"receipt with task_type", "receipt without task_type",
		"attestation verdict VERIFIED", "attestation verdict PARTIAL", "attestation verdict FAILED", "attestation without level",
		"bundle outcome solved", "bundle outcome failed", "bundle outcome skipped", "bundle outcome errored",
		"bundle outcome unknown(4)", "bundle outcome unknown(200)", "bundle outcome unknown(255)",
		"bundle of an unknown policy", "bundle with violations", "bundle without violations", "rollback",
	} {
		if seen[want] == 0 {
			t.Errorf("no %s among the samples", want)
		}
	}
	if kinds[codec.KindAVIRSpec] == 0 {
		t.Errorf("no specification among the samples")
	}
}

// crafted returns unsigned documents of what the sample files lack:
// receipts without a task type, and bundles with unknown outcome bytes
// (under a known policy and under an unknown one, with an unknown mode).
func crafted(t *testing.T) []admit.Submission {
	t.Helper()
	var subs []admit.Submission
	at := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	for i, statuses := range [][]string{{"pass", "pass"}, {"fail"}, {"pass", "fail"}, {"pass", "error"}, nil} {
		d := vrf.Draft{
			ReceiptID:  fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1),
			VerifiedAt: at.Add(time.Duration(i) * time.Minute),
			Tier:       i % 4,
			Hashes:     vrf.Hashes{Input: vrf.ShortHash([]byte("in")), Output: vrf.ShortHash([]byte("out")), Suite: vrf.ShortHash([]byte("suite"))},
		}
		for j, st := range statuses {
			d.Details = append(d.Details, vrf.Detail{Name: fmt.Sprintf("check-%d", j), Status: st, DurationMS: 1.5})
		}
		doc, err := d.Build()
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, admit.Submission{Name: fmt.Sprintf("crafted-receipt-%d", i), Data: canonjson.Canonical(doc)})
	}
	// An attestation without a verification level.
	data, err := os.ReadFile(filepath.Join(root, "avir/verified_unsigned.attestation.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := canonjson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	subs = append(subs, admit.Submission{Name: "crafted-attestation", Data: canonjson.Indent(doc.Without("verification_level"))})

	restricted := governance.Restricted()
	for i, c := range []struct {
		outcome rvww.Outcome
		mode    rvww.Mode
		policy  [8]byte
	}{
		{4, rvww.ModeRestricted, restricted.Hash()},
		{200, 9, [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{255, rvww.ModeAutonomous, governance.Autonomous().Hash()},
	} {
		b := &rvww.Bundle{Header: rvww.Header{TaskID: [16]byte{15: byte(i + 1)}, PolicyHash: c.policy,
			CreatedNS: uint64(at.Add(time.Duration(i) * time.Hour).UnixNano()), Outcome: c.outcome, Mode: c.mode}}
		for j, action := range []string{"Read", "Bash", "Grep"} {
			check := rvww.PolicyCheck(restricted.Check(action))
			if c.mode != rvww.ModeRestricted {
				check = rvww.CheckAllowed
			}
			b.Calls = append(b.Calls, rvww.ToolCall{Action: action, PolicyCheck: check, LatencyMS: uint32(10 * (j + 1)), CostMicrodollars: 5, Tokens: 100})
		}
		data, err := rvww.Encode(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, admit.Submission{Name: fmt.Sprintf("crafted-bundle-%d", i), Data: data})
	}
	return subs
}

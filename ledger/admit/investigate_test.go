package admit

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/ledger"
)

// receiptWithID builds and signs an unchained receipt with the given id.
func receiptWithID(t testing.TB, priv ed25519.PrivateKey, id string, n int) []byte {
	t.Helper()
	d := vrf.Draft{
		ReceiptID:  id,
		VerifiedAt: testEpoch.Add(time.Duration(n) * time.Minute),
		Details:    []vrf.Detail{{Name: "t1", Status: "pass", DurationMS: 1}},
		Hashes:     vrf.Hashes{Input: vrf.ShortHash([]byte("in")), Output: vrf.ShortHash([]byte(id)), Suite: vrf.ShortHash([]byte("suite"))},
		AgentID:    "agent-p",
	}
	v, err := d.Build()
	if err != nil {
		t.Fatal(err)
	}
	b, err := vrf.Sign(v, priv)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResolve resolves every kind of reference get and prove take: a
// sequence number, an identity as given or in upper case, a task UUID
// (its latest bundle, not a rollback after it), and unique prefixes of
// identities and digests; and refuses short, ambiguous and unknown ones.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	signer := testKey(5)
	var subs []Submission
	// Twelve receipts whose ids share the prefix "abcdef01-0000" (and one
	// of them alone "abcdef01-0000-4000-8000-0000000000aa").
	for i := range 12 {
		subs = append(subs, Submission{Name: fmt.Sprint(i), Data: receiptWithID(t, signer, fmt.Sprintf("abcdef01-0000-4000-8000-%012x", 0xa0+i), i)})
	}
	subs = append(subs, Submission{Name: "other", Data: receiptWithID(t, signer, "12345678-0000-4000-8000-000000000001", 20)})
	for i := range 2 {
		subs = append(subs, Submission{Name: fmt.Sprint("pair", i), Data: receiptWithID(t, signer, fmt.Sprintf("abcdef02-0000-4000-8000-%012x", i), 30+i)})
	}
	bundle := readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww"))
	subs = append(subs, Submission{Name: "bundle", Data: bundle})
	out, err := l.Append(ctx, subs, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != ledger.StatusAppended {
			t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
		}
	}
	bev := out[len(out)-1].Event
	task := bev.Subject
	// A rollback after the bundle: the task's latest event, not its latest
	// bundle.
	rb := []byte(fmt.Sprintf(`{"kind":"rollback","task_id":%q,"restored_clean":true,"at":"2026-11-21T10:00:00Z"}`, task))
	if out, err := l.Append(ctx, []Submission{{Name: "rollback", Data: rb}}, Options{AllowUnsigned: true}); err != nil || out[0].Status != ledger.StatusAppended {
		t.Fatalf("rollback: %v %+v", err, out)
	}
	other := out[12].Event
	if other.ID != "12345678-0000-4000-8000-000000000001" {
		t.Fatalf("event %d is %s", other.Seq, other.ID)
	}
	digest := hex.EncodeToString(other.Digest[:])
	for _, tc := range []struct {
		name string
		ref  string
		seq  int64  // the event found, or -1
		err  error  // the error wanted instead
		cand int    // for an ambiguous prefix: the candidates listed
		more bool   // and whether there are more
		msg  string // in the error
	}{
		{"sequence number", "3", 3, nil, 0, false, ""},
		{"sequence number past the end", "999", -1, ledger.ErrNotFound, 0, false, "no event with this sequence number"},
		{"identity", other.ID, other.Seq, nil, 0, false, ""},
		{"identity in upper case", strings.ToUpper(other.ID), other.Seq, nil, 0, false, ""},
		{"bundle identity", bev.ID, bev.Seq, nil, 0, false, ""},
		{"task UUID: its latest bundle", task, bev.Seq, nil, 0, false, ""},
		{"task UUID in upper case", strings.ToUpper(task), bev.Seq, nil, 0, false, ""},
		{"unknown task UUID", "00000000-0000-4000-8000-000000000000", -1, ledger.ErrNotFound, 0, false, ""},
		{"identity prefix", "12345678", other.Seq, nil, 0, false, ""},
		{"exact identity sharing a prefix", "abcdef01-0000-4000-8000-0000000000ab", 11, nil, 0, false, ""},
		{"identity prefix, longer", "abcdef01-0000-4000-8000-0000000000a7", 7, nil, 0, false, ""},
		{"digest prefix", digest[:10], other.Seq, nil, 0, false, ""},
		{"digest prefix, odd length", digest[:11], other.Seq, nil, 0, false, ""},
		{"digest prefix with sha256:", "sha256:" + digest[:8], other.Seq, nil, 0, false, ""},
		{"digest prefix in upper case", strings.ToUpper(digest[:12]), other.Seq, nil, 0, false, ""},
		{"whole digest", "sha256:" + digest, other.Seq, nil, 0, false, ""},
		{"ambiguous prefix", "abcdef01", -1, ErrAmbiguous, 10, true, "names 10 or more documents"},
		{"ambiguous prefix, two", "abcdef02-0000", -1, ErrAmbiguous, 2, false, "names 2 documents"},
		{"short prefix", "abcdef0", -1, ledger.ErrShortPrefix, 0, false, "want at least 8"},
		{"short digest prefix", "sha256:abcdef0", -1, ledger.ErrShortPrefix, 0, false, "has 7 characters"},
		{"no such prefix", "ffffffff-ffff", -1, ledger.ErrNotFound, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := l.Resolve(tc.ref)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q) = %v, %v; want an error wrapping %v", tc.ref, ev, err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not say %q", err, tc.msg)
				}
				var ae *AmbiguousError
				if errors.As(err, &ae) {
					if len(ae.Candidates) != tc.cand || ae.More != tc.more {
						t.Errorf("%d candidates (more: %v), want %d (%v)", len(ae.Candidates), ae.More, tc.cand, tc.more)
					}
					for i, c := range ae.Candidates {
						if !strings.HasPrefix(c.ID, tc.ref) || i > 0 && c.Seq <= ae.Candidates[i-1].Seq {
							t.Errorf("candidate %d: %+v", i, c)
						}
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.ref, err)
			}
			if ev.Seq != tc.seq {
				t.Errorf("Resolve(%q) = event %d (%s), want %d", tc.ref, ev.Seq, ev.ID, tc.seq)
			}
		})
	}
}

// TestAgentChains appends chains of two agents (one named by agent_id,
// one by its first receipt), out of order and in several calls, and
// demands each agent's chains, first receipt first, in the order their
// first receipts were appended.
func TestAgentChains(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	a, b := testKey(1), testKey(2)
	calls := [][]Submission{
		{
			{Name: "x1", Data: receipt(t, a, 11, "agent-x", uuid4(10), 1)},
			{Name: "x0", Data: receipt(t, a, 10, "agent-x", "", 0)},
			{Name: "n0", Data: receipt(t, b, 30, "", "", 0)}, // a chain named by its first receipt
		},
		{
			{Name: "y0", Data: receipt(t, b, 20, "agent-x", "", 0)}, // agent-x's second chain
			{Name: "x2", Data: receipt(t, b, 12, "", uuid4(11), 2)}, // continues agent-x's first chain without agent_id
			{Name: "n1", Data: receipt(t, a, 31, "", uuid4(30), 1)},
			{Name: "lone", Data: receipt(t, a, 40, "agent-x", "", -1)}, // no chain fields: a chain of one
		},
		{
			{Name: "y1", Data: receipt(t, b, 21, "agent-x", uuid4(20), 1)},
		},
	}
	for _, c := range calls {
		out, err := l.Append(ctx, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
			}
		}
	}
	for _, tc := range []struct {
		agent string
		want  string // chains, receipt numbers in chain order
	}{
		{"agent-x", "[[10 11 12] [20 21] [40]]"},
		{uuid4(30), "[[30 31]]"},
	} {
		var chains [][]int
		err := l.AgentChains(ctx, tc.agent, func(ce ChainEvent) (bool, error) {
			if ce.Chain == len(chains) {
				chains = append(chains, nil)
				if ce.ID != ce.First {
					t.Errorf("chain %d starts with %s, its first receipt is %s", ce.Chain, ce.ID, ce.First)
				}
			}
			var n int
			if _, err := fmt.Sscanf(ce.ID[24:], "%x", &n); err != nil {
				t.Fatal(err)
			}
			chains[ce.Chain] = append(chains[ce.Chain], n)
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(chains); got != tc.want {
			t.Errorf("%s: chains %s, want %s", tc.agent, got, tc.want)
		}
	}
	// Stopping early stops.
	seen := 0
	if err := l.AgentChains(ctx, "agent-x", func(ChainEvent) (bool, error) { seen++; return seen < 4, nil }); err != nil || seen != 4 {
		t.Errorf("stopped after %d events (%v), want 4", seen, err)
	}
	if err := l.AgentChains(ctx, "nobody", func(ChainEvent) (bool, error) { return true, nil }); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an agent without receipts: %v, want ErrNotFound", err)
	}
}

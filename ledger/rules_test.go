package ledger

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/keys"
)

// TestRefusalsLeaveStoreUnchanged appends a valid base, then offers one
// document per refusal reason (replay detection, chains and tasks, trust)
// and checks each is refused with its reason and leaves every key of the
// store as it was.
func TestRefusalsLeaveStoreUnchanged(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, Options{})
	signer := testKey(1)
	other := testKey(2)
	r0 := receipt(t, signer, 100, "agent-a", "", 0)
	r1 := receipt(t, signer, 101, "", uuid4(100), 1)
	bundle := readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww"))
	out, err := l.Append(ctx, []Submission{{Name: "r1", Data: r1}, {Name: "r0", Data: r0}, {Name: "b", Data: bundle}}, hmacOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != StatusAppended {
			t.Fatalf("base: %+v", o)
		}
	}
	if out[1].Seq != 0 || out[0].Seq != 1 {
		t.Errorf("chain order: r0 at %d, r1 at %d; want 0 and 1", out[1].Seq, out[0].Seq)
	}
	unsignedBundleKey := keys.HMACKey{Name: "wrong", Secret: []byte("not the key")}

	for _, tc := range []struct {
		name   string
		data   []byte
		opts   AppendOptions
		status Status
		class  string
		reason string
	}{
		{"replay", r0, AppendOptions{}, StatusReplay, "", "already in the ledger"},
		{"conflict", []byte(strings.Replace(string(r0), "{\n", "{\n  ", 1)), AppendOptions{}, StatusConflict, "", "different document"},
		{"previous missing", receipt(t, signer, 102, "agent-a", uuid4(999), 2), AppendOptions{}, StatusRejected, RejectLink, "is not in the ledger"},
		{"position skip", receipt(t, signer, 103, "agent-a", uuid4(101), 5), AppendOptions{}, StatusRejected, RejectLink, "chain_position: 5, want 2"},
		{"agent mismatch", receipt(t, signer, 104, "agent-b", uuid4(101), 2), AppendOptions{}, StatusRejected, RejectLink, "a chain speaks for one agent"},
		{"fork", receipt(t, other, 105, "", uuid4(100), 1), AppendOptions{}, StatusRejected, RejectLink, "cannot fork"},
		{"unsigned", receipt(t, nil, 106, "agent-c", "", -1), AppendOptions{}, StatusRejected, RejectTrust, "unsigned"},
		{"untrusted signer", receipt(t, other, 107, "agent-c", "", -1), AppendOptions{TrustedSigners: map[string]bool{keys.SignerID(signer.Public().(ed25519.PublicKey)): true}}, StatusRejected, RejectTrust, "not in the trusted signers"},
		{"bundle no known key", readFile(t, "../testdata/rvww/valid_solved_approved_signed.rvww"), AppendOptions{}, StatusRejected, RejectInvalid, "no HMAC key"},
		{"replay needs no key", readFile(t, filepath.Join(vectors, "rvww/01_solved_autonomous_signed.rvww")), AppendOptions{}, StatusReplay, "", "already in the ledger as event 2"},
		{"bundle wrong key", readFile(t, filepath.Join("../testdata/rvww/valid_failed_approved_signed.rvww")), AppendOptions{HMACKeys: []keys.HMACKey{unsignedBundleKey}}, StatusRejected, RejectInvalid, "matches none of the 1 supplied keys"},
		{"malformed", []byte(`{"vrf_version": "1.0", "receipt_id": `), AppendOptions{}, StatusRejected, RejectMalformed, ""},
		{"invalid", readFile(t, filepath.Join(vectors, "vrf/90_tampered_verdict.json")), AppendOptions{}, StatusRejected, RejectInvalid, "content_hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dump(t, l)
			out, err := l.Append(ctx, []Submission{{Name: tc.name, Data: tc.data}}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			o := out[0]
			if o.Status != tc.status || o.Class != tc.class || !strings.Contains(o.Reason, tc.reason) {
				t.Errorf("outcome = %s/%s %q, want %s/%s containing %q", o.Status, o.Class, o.Reason, tc.status, tc.class, tc.reason)
			}
			if diff, ok := sameState(before, dump(t, l)); !ok {
				t.Errorf("store changed: %s", diff)
			}
		})
	}
}

func TestChainRules(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, Options{})
	a, b := testKey(1), testKey(2)
	// A chain without agent_id is named by its first receipt and may carry
	// several signers.
	docs := []Submission{
		{Name: "c2", Data: receipt(t, a, 3, "", uuid4(2), 2)},
		{Name: "c1", Data: receipt(t, b, 2, "", uuid4(1), 1)},
		{Name: "c0", Data: receipt(t, a, 1, "", "", 0)},
	}
	out, err := l.Append(ctx, docs, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != StatusAppended {
			t.Fatalf("%+v", o)
		}
		if o.Event.Subject != uuid4(1) {
			t.Errorf("%s: agent %q, want the chain's first receipt %s", o.Name, o.Event.Subject, uuid4(1))
		}
	}
	chain, err := l.Chain(uuid4(2))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range chain {
		ids = append(ids, ev.ID)
	}
	if strings.Join(ids, ",") != strings.Join([]string{uuid4(1), uuid4(2), uuid4(3)}, ",") {
		t.Errorf("chain = %v", ids)
	}
	// An explicit agent_id further down must match the chain's agent.
	bad := receipt(t, a, 4, "someone-else", uuid4(3), 3)
	good := receipt(t, a, 5, uuid4(1), uuid4(3), 3)
	out, err = l.Append(ctx, []Submission{{Name: "bad", Data: bad}, {Name: "good", Data: good}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != StatusRejected || out[1].Status != StatusAppended {
		t.Errorf("bad=%+v good=%+v", out[0], out[1])
	}
}

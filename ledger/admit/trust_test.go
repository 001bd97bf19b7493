package admit

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

// TestTrustedSignersSetting checks that the ledger's trusted signers
// restrict appends, that a per-call list overrides them, that AnySigner
// ignores them, and that without any the ledger admits every signer.
func TestTrustedSignersSetting(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	a, b := testKey(21), testKey(22)
	idOf := func(k ed25519.PrivateKey) string { return keys.SignerID(k.Public().(ed25519.PublicKey)) }
	n := 300
	try := func(k ed25519.PrivateKey, opts Options) ledger.Outcome {
		t.Helper()
		n++
		out, err := l.Append(ctx, []Submission{{Name: "r", Data: receipt(t, k, n, "", "", -1)}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	// No setting: any signer.
	if o := try(b, Options{}); o.Status != ledger.StatusAppended {
		t.Fatalf("no trusted signers, b: %+v", o)
	}
	if _, err := l.Registry().AddTrustedSigner(idOf(a)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    ed25519.PrivateKey
		opts   Options
		ok     bool
		reason string
	}{
		{"trusted by the ledger", a, Options{}, true, ""},
		{"not trusted by the ledger", b, Options{}, false, "is not in the ledger's trusted signers"},
		{"per-call list overrides the ledger's", b, Options{TrustedSigners: map[string]bool{idOf(b): true}}, true, ""},
		{"per-call list excludes the ledger's", a, Options{TrustedSigners: map[string]bool{idOf(b): true}}, false, "is not in the trusted signers"},
		{"any signer", b, Options{AnySigner: true}, true, ""},
	} {
		o := try(tc.key, tc.opts)
		if (o.Status == ledger.StatusAppended) != tc.ok || !tc.ok && (o.Class != ledger.RejectTrust || !strings.Contains(o.Reason, tc.reason)) {
			t.Errorf("%s: %s %s %q", tc.name, o.Status, o.Class, o.Reason)
		}
	}
	if _, err := l.Registry().RemoveTrustedSigner(idOf(a)); err != nil {
		t.Fatal(err)
	}
	if o := try(b, Options{}); o.Status != ledger.StatusAppended {
		t.Errorf("after the last trusted signer was removed, b: %+v", o)
	}
}

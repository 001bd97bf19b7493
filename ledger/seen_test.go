package ledger

import (
	"context"
	"testing"

	"github.com/proofledger/ledger/codec"
)

// TestSeen checks the bare replay check: present identities report their
// event, absent ones and other kinds do not.
func TestSeen(t *testing.T) {
	l := newLedger(t, Options{})
	out, err := l.Append(context.Background(), []*Entry{rawEntry(0), rawEntry(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Status != StatusAppended {
			t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
		}
	}
	for _, tc := range []struct {
		kind    codec.Kind
		id      string
		seq     int64
		present bool
	}{
		{codec.KindAVIRSpec, rawEntry(0).ID, 0, true},
		{codec.KindAVIRSpec, rawEntry(1).ID, 1, true},
		{codec.KindAVIRSpec, rawEntry(2).ID, -1, false},
		{codec.KindRVWW, rawEntry(0).ID, -1, false},
	} {
		seq, found, err := l.Seen(tc.kind, tc.id)
		if err != nil || found != tc.present || seq != tc.seq {
			t.Errorf("Seen(%s, %s) = %d, %v, %v; want %d, %v", tc.kind, tc.id, seq, found, err, tc.seq, tc.present)
		}
	}
}

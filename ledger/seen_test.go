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
	priv := testKey(1)
	subs := []Submission{
		{Name: "r0", Data: receipt(t, priv, 0, "agent-a", "", 0)},
		{Name: "r1", Data: receipt(t, priv, 1, "", uuid4(0), 1)},
	}
	out, err := l.Append(context.Background(), subs, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Status != StatusAppended {
			t.Fatalf("%s: %s %s", subs[i].Name, o.Status, o.Reason)
		}
	}
	for _, tc := range []struct {
		kind    codec.Kind
		id      string
		seq     int64
		present bool
	}{
		{codec.KindVRF, uuid4(0), 0, true},
		{codec.KindVRF, uuid4(1), 1, true},
		{codec.KindVRF, uuid4(2), -1, false},
		{codec.KindRVWW, uuid4(0), -1, false},
	} {
		seq, found, err := l.Seen(tc.kind, tc.id)
		if err != nil || found != tc.present || seq != tc.seq {
			t.Errorf("Seen(%s, %s) = %d, %v, %v; want %d, %v", tc.kind, tc.id, seq, found, err, tc.seq, tc.present)
		}
	}
}

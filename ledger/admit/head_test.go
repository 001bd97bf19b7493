package admit

import (
	"context"
	"crypto/ed25519"
	"maps"
	"testing"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

// TestAgentHead checks that AgentHead finds each agent's latest receipt,
// however the agent was decided (agent_id, a chain's first receipt, a
// continuation without agent_id, the signer), keeps agents whose names
// share a prefix apart, follows appends within one call, and reads the
// same after a rebuild.
func TestAgentHead(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, ledger.Options{})
	k := testKey(1)
	signer := keys.SignerID(k.Public().(ed25519.PublicKey))

	type want struct {
		id  string
		pos int64
	}
	check := func(step string, heads map[string]*want) {
		t.Helper()
		for agent, w := range heads {
			h, found, err := l.AgentHead(agent)
			if err != nil {
				t.Fatalf("%s: AgentHead(%q): %v", step, agent, err)
			}
			switch {
			case w == nil && found:
				t.Errorf("%s: AgentHead(%q) = %+v, want none", step, agent, h)
			case w != nil && !found:
				t.Errorf("%s: AgentHead(%q): none, want %s at %d", step, agent, w.id, w.pos)
			case w != nil && (h.ID != w.id || h.Position != w.pos):
				t.Errorf("%s: AgentHead(%q) = %s at %d, want %s at %d", step, agent, h.ID, h.Position, w.id, w.pos)
			}
		}
	}
	appendAll := func(subs ...Submission) {
		t.Helper()
		out, err := l.Append(ctx, subs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %+v", o.Name, o)
			}
		}
	}
	heads := map[string]*want{"a": nil, "a\x00b": nil, signer: nil}
	check("empty", heads)

	// Agent "a" by agent_id, with a chain; agent "a\x00b" shares its
	// prefix up to the NUL.
	appendAll(
		Submission{Name: "a0", Data: receipt(t, k, 1, "a", "", 0)},
		Submission{Name: "ab0", Data: receipt(t, k, 2, "a\x00b", "", 0)},
	)
	heads["a"], heads["a\x00b"] = &want{uuid4(1), 0}, &want{uuid4(2), 0}
	check("first receipts", heads)

	// Two receipts of "a" in one call, given out of order; the second
	// has no agent_id and speaks for "a" through its chain.
	appendAll(
		Submission{Name: "a2", Data: receipt(t, k, 4, "", uuid4(3), 2)},
		Submission{Name: "a1", Data: receipt(t, k, 3, "a", uuid4(1), 1)},
	)
	heads["a"] = &want{uuid4(4), 2}
	check("one call", heads)

	// A receipt without agent_id or chain fields speaks for its signer; a
	// chain without agent_id is named by its first receipt.
	appendAll(
		Submission{Name: "s", Data: receipt(t, k, 5, "", "", -1)},
		Submission{Name: "c0", Data: receipt(t, k, 6, "", "", 0)},
		Submission{Name: "c1", Data: receipt(t, k, 7, "", uuid4(6), 1)},
	)
	heads[signer], heads[uuid4(6)] = &want{uuid4(5), 0}, &want{uuid4(7), 1}
	check("signer and chain", heads)

	// Continuing a head at Position+1 is admitted; continuing it again is
	// a fork, refused.
	h, _, err := l.AgentHead("a")
	if err != nil {
		t.Fatal(err)
	}
	appendAll(Submission{Name: "a3", Data: receipt(t, k, 8, "a", h.ID, h.Position+1)})
	out, err := l.Append(ctx, []Submission{{Name: "fork", Data: receipt(t, k, 9, "a", h.ID, h.Position+1)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != ledger.StatusRejected || out[0].Class != ledger.RejectLink {
		t.Errorf("fork: %+v", out[0])
	}
	heads["a"] = &want{uuid4(8), 3}
	check("continued", heads)

	// A rebuild writes the same agent/ entries.
	before := dump(t, &l)
	if err := l.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after := dump(t, &l)
	if !maps.Equal(before, after) {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("after rebuild, %q = %x, before %x", k, after[k], v)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("after rebuild, %q is new", k)
			}
		}
	}
	check("rebuilt", heads)
	n := 0
	for k := range after {
		if len(k) > len(prefixAgent) && k[:len(prefixAgent)] == string(prefixAgent) {
			n++
		}
	}
	if n != 8 {
		t.Errorf("%d agent/ entries, want one per receipt (8)", n)
	}
}

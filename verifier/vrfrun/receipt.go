package vrfrun

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/vrf"
)

// ReceiptOptions are the receipt fields a verification does not decide.
type ReceiptOptions struct {
	// ReceiptID is a UUID v4; empty means a new random one.
	ReceiptID string
	// VerifiedAt is the verification time; zero means now.
	VerifiedAt time.Time
	// AgentID, when set, is written as the receipt's top-level agent_id.
	AgentID string
	// Chain, when set, links the receipt to the agent's previous one
	// (metadata.previous_receipt, metadata.chain_position).
	Chain *vrf.ChainLink
}

// Draft returns the receipt draft for the result.
func (r *Result) Draft(o ReceiptOptions) vrf.Draft {
	return vrf.Draft{
		ReceiptID:  o.ReceiptID,
		VerifiedAt: o.VerifiedAt,
		Tier:       r.Tier,
		Details:    r.Details,
		Hashes:     r.Hashes,
		Metadata: vrf.Metadata{
			VerifierVersion: r.VerifierVersion,
			ExecutionMS:     r.ExecutionMS,
			Sandboxed:       r.Sandboxed,
			Language:        r.Language,
			Runtime:         r.Runtime,
		},
		TaskID:   r.TaskID,
		TaskType: r.TaskType,
		AgentID:  o.AgentID,
		Chain:    o.Chain,
	}
}

// Receipt returns the unsigned receipt document in the reference form
// (codec/vrf's Draft.Build), with metadata.sandbox added when code ran.
func (r *Result) Receipt(o ReceiptOptions) (canonjson.Value, error) {
	doc, err := r.Draft(o).Build()
	if err != nil {
		return canonjson.Value{}, fmt.Errorf("vrfrun: receipt: %w", err)
	}
	if r.Sandbox != "" {
		md, _ := doc.Get("metadata")
		doc = doc.With("metadata", md.With("sandbox", canonjson.MakeString(r.Sandbox)))
	}
	return doc, nil
}

// Sign returns the receipt signed with key as the reference signs
// (codec/vrf.Sign): the JSON text of the signed receipt, as Python's
// json.dumps(indent=2) writes it.
func (r *Result) Sign(key ed25519.PrivateKey, o ReceiptOptions) ([]byte, error) {
	doc, err := r.Receipt(o)
	if err != nil {
		return nil, err
	}
	out, err := vrf.Sign(doc, key)
	if err != nil {
		return nil, fmt.Errorf("vrfrun: %w", err)
	}
	return out, nil
}

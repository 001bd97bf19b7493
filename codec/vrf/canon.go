package vrf

import (
	"github.com/proofledger/ledger/codec/canonjson"
)

// canonicalBody returns the canonical JSON (ensure_ascii=True) of the
// receipt root without its signature member, and that value (for the other
// canonical encoding). sizeHint sizes the output buffer.
func canonicalBody(root canonjson.Value, sizeHint int) ([]byte, canonjson.Value) {
	body := root.Without("signature")
	return canonjson.AppendCanonical(make([]byte, 0, sizeHint), body), body
}

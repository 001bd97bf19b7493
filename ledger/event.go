package ledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/proofledger/ledger/codec/rollback"
	"github.com/proofledger/ledger/proof"
)

// KindRollback is the kind of a rollback record (codec/rollback): a small
// JSON document saying whether a task's rollback restored a clean state.
const KindRollback = rollback.Kind

// Link relations (proof.RelPreviousReceipt, proof.RelTaskPrevious).
const (
	RelPreviousReceipt = proof.RelPreviousReceipt
	RelTaskPrevious    = proof.RelTaskPrevious
)

// Link points from an event to an earlier one.
type Link = proof.Link

// Event is one entry of the log: its Merkle leaf (package proof, which
// anyone can import to check leaves and proofs without this package) and,
// when loaded, its document. Everything but Data is committed by the leaf;
// Data is committed through the leaf's Digest and Size.
type Event struct {
	proof.Leaf
	// Data is the document's original bytes, when loaded.
	Data []byte
}

// formatTime writes t in UTC as RFC 3339 with nanoseconds, trailing zeros
// dropped (the leaf's time format).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ErrCorrupt is wrapped by every error about stored data that does not
// decode: the store was damaged or written by something else.
var ErrCorrupt = errors.New("corrupt store")

// parseLeafEvent decodes a leaf into an event.
func parseLeafEvent(p *proof.LeafParser, leaf []byte) (*Event, error) {
	l, err := p.Parse(leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &Event{Leaf: *l}, nil
}

// An event is stored under two keys, so that scans of the log (rebuild,
// audit's first pass, log listings) read leaves without documents:
//
//	e/<seq>  byte 1 (leaf format), then the leaf
//	p/<seq>  byte payload codec (0 raw, 1 zstd), then the document bytes
const (
	leafFormat  = 1
	payloadRaw  = 0
	payloadZstd = 1 // written by versions before 2026-11; read still
)

// encodePayload returns a document as stored under p/: the codec byte and
// the document. Documents are stored raw: compressing each one on the
// append path cost more CPU than verifying its signature, and Pebble
// compresses whole blocks of documents with zstd at the bottom of the LSM
// (see PebbleOptions), which also finds what similar documents share.
// Payloads written zstd-compressed by earlier versions still read.
func encodePayload(data []byte) []byte {
	out := make([]byte, 1+len(data))
	out[0] = payloadRaw
	copy(out[1:], data)
	return out
}

// encodeLeafValue is the value stored under e/.
func encodeLeafValue(leaf []byte) []byte {
	return append([]byte{leafFormat}, leaf...)
}

// leafOf returns the leaf of a value stored under e/.
func leafOf(v []byte) ([]byte, error) {
	if len(v) < 1 || v[0] != leafFormat {
		return nil, fmt.Errorf("%w: event leaf format %v", ErrCorrupt, v[:min(1, len(v))])
	}
	return v[1:], nil
}

// decodePayload returns the document of a value stored under p/.
func (l *Ledger) decodePayload(v []byte) ([]byte, error) {
	if len(v) < 1 {
		return nil, fmt.Errorf("%w: event payload missing", ErrCorrupt)
	}
	switch v[0] {
	case payloadRaw:
		return append([]byte(nil), v[1:]...), nil
	case payloadZstd:
		d, err := l.zdec.DecodeAll(v[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("%w: event payload: %v", ErrCorrupt, err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: event payload codec %d", ErrCorrupt, v[0])
}

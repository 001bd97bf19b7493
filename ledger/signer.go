package ledger

import (
	"crypto/ed25519"

	"golang.org/x/mod/sumdb/note"

	"github.com/proofledger/ledger/proof"
)

// noteSigner signs checkpoints with the log key under the origin's name.
type noteSigner struct {
	s    note.Signer
	vkey string
}

func newNoteSigner(origin string, priv ed25519.PrivateKey) (*noteSigner, error) {
	s, vkey, err := proof.NewSigner(origin, priv)
	if err != nil {
		return nil, err
	}
	return &noteSigner{s: s, vkey: vkey}, nil
}

func (s *noteSigner) sign(c proof.Checkpoint) ([]byte, error) { return proof.Sign(c, s.s) }

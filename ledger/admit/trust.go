package admit

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/proofledger/ledger/codec/keys"
)

// ReadTrustedSigners reads a trusted-signers list: one Ed25519 public key
// per line, in any spelling keys.ParsePublicKey accepts; blank lines and
// lines starting with # are skipped. It returns the set of signer ids
// ("ed25519:<hex>") for Options.TrustedSigners.
func ReadTrustedSigners(r io.Reader) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		pub, err := keys.ParsePublicKey(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out[keys.SignerID(pub)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

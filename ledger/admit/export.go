package admit

import (
	"context"
	"io"

	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
)

// Export writes the ledger's export archive (ledger.Ledger.Export): every
// event, every setting (registered policies, trusted signers, and any
// other), and the registered HMAC keys by name and key id, never their
// secrets (an import asks for them by id).
func (l *Ledger) Export(ctx context.Context, w io.Writer) (ledger.ExportStats, error) {
	return l.Ledger.Export(ctx, w, ledger.ExportOptions{SecretID: registry.SecretID})
}

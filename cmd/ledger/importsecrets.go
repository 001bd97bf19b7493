package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/registry"
)

// readImportSecrets reads import's --hmac-key and --hmac-key-dir into
// opts, and sets the prompt for a missing key when standard input is a
// terminal that the archive is not read from.
func readImportSecrets(c *cli.Context, e *env, path string, opts *admit.ImportOptions) error {
	for _, arg := range c.StringSlice("hmac-key") {
		name, file, ok := strings.Cut(arg, "=")
		if !ok || file == "" {
			return usageErrorf("--hmac-key %q: want NAME=FILE", arg)
		}
		if err := registry.ValidKeyName(name); err != nil {
			return usageErrorf("--hmac-key: %v", err)
		}
		if _, dup := opts.HMACSecrets[name]; dup {
			return usageErrorf("--hmac-key %q is given twice", name)
		}
		k, err := keys.LoadHMACKey(file)
		if err != nil {
			return usageErrorf("--hmac-key %s: %v", arg, pathless(err))
		}
		if opts.HMACSecrets == nil {
			opts.HMACSecrets = map[string][]byte{}
		}
		opts.HMACSecrets[name] = k.Secret
	}
	keyDir := c.String("hmac-key-dir")
	if keyDir != "" {
		if st, err := os.Stat(keyDir); err != nil || !st.IsDir() {
			return usageErrorf("--hmac-key-dir %s: not a directory", keyDir)
		}
	}
	prompt := path != "-" && stdinIsTerminal(e)
	if keyDir == "" && !prompt {
		return nil
	}
	opts.SecretFor = func(name, id string) ([]byte, error) {
		if keyDir != "" {
			k, err := keys.LoadHMACKey(filepath.Join(keyDir, name))
			switch {
			case err == nil:
				return k.Secret, nil
			case !errors.Is(err, os.ErrNotExist):
				return nil, fmt.Errorf("--hmac-key-dir: key %q: %w", name, pathless(err))
			}
		}
		if !prompt {
			return nil, fmt.Errorf("%w: no file %s", admit.ErrMissingSecret, filepath.Join(keyDir, name))
		}
		return askSecret(e, name, id)
	}
	return nil
}

// stdinIsTerminal reports whether the command's standard input is a terminal.
func stdinIsTerminal(e *env) bool {
	f, ok := e.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// askSecret asks the terminal for an HMAC key without echoing it: the
// key's bytes as typed or, when that is not the key, the bytes its hex
// spells. An empty answer leaves the key missing.
func askSecret(e *env, name, id string) ([]byte, error) {
	f := e.stdin.(*os.File)
	_, _ = fmt.Fprintf(e.stderr, "HMAC key %q (%s) for the import (not echoed; empty to skip): ", name, id)
	typed, err := term.ReadPassword(int(f.Fd()))
	_, _ = fmt.Fprintln(e.stderr)
	if err != nil {
		return nil, fmt.Errorf("read HMAC key %q from the terminal: %w", name, err)
	}
	if len(typed) == 0 {
		return nil, fmt.Errorf("%w: none typed", admit.ErrMissingSecret)
	}
	if registry.KeyID(typed) != id {
		if b, err := hex.DecodeString(strings.TrimSpace(string(typed))); err == nil && len(b) > 0 && registry.KeyID(b) == id {
			return b, nil
		}
	}
	return typed, nil
}

// exportedSettings says what settings an export carried.
func exportedSettings(st ledger.ExportStats) string {
	if st.Settings == 0 && st.Secrets == 0 {
		return ""
	}
	return fmt.Sprintf(", with %s and %s (name and key id, not the secret)", quantity(st.Settings, "setting"), quantity(st.Secrets, "HMAC key"))
}

// importedSettings says what settings an import restored.
func importedSettings(st admit.ImportStats) string {
	if st.Settings == 0 && st.HMACKeys == 0 {
		return ""
	}
	return fmt.Sprintf("; %s and %s restored", quantity(st.Settings, "setting"), quantity(st.HMACKeys, "HMAC key"))
}

// quantity writes "1 setting", "2 settings".
func quantity(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

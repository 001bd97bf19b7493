package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write every event to a zstd-compressed JSON Lines archive",
		ArgsUsage: "FILE | -",
		Description: "The archive starts with the signed checkpoint of its size, then the ledger's settings: every\n" +
			"setting (registered policies, trusted signers, and any other) with its bytes, and the registered\n" +
			"HMAC keys by name and key id, never their secrets (import asks for them); the log key signs the\n" +
			"settings with the archive's size and root. Every document is checked against its leaf and every\n" +
			"leaf against the signed tree as it is written; an altered event stops the export with an error\n" +
			"naming it (exit 7) and no archive is left behind. FILE must not exist; - writes to standard output.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the file, events, tree root and settings exported as one JSON object (not with -)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("export takes one FILE (or - for standard output)")
			}
			path := c.Args().First()
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			if path == "-" {
				if c.Bool("json") {
					return usageErrorf("export -: --json would mix with the archive on standard output")
				}
				if _, err := exportWithProgress(c.Context, e, l, e.stdout); err != nil {
					return exitf(exitInternal, "export: %w", err)
				}
				return nil
			}
			if fileExists(path) {
				return usageErrorf("export %s: the file exists; choose a new name", path)
			}
			st, err := writeAtomically(e, path, func(w io.Writer) (ledger.ExportStats, error) { return exportWithProgress(c.Context, e, l, w) })
			if err != nil {
				return exitf(exitInternal, "export %s: %w", path, err)
			}
			if c.Bool("json") {
				return writeJSONLine(e.stdout, exportJSON{File: path, Events: st.Events, Root: b64(st.Root[:]), Settings: st.Settings, HMACKeys: st.Secrets})
			}
			_, _ = fmt.Fprintf(e.stdout, "exported %d events to %s (tree root %s, signed)%s\n", st.Events, path, b64(st.Root[:]), exportedSettings(st))
			return nil
		},
	}
}

// writeAtomically writes path through a temporary file beside it, synced
// and renamed into place only when write succeeds: a failed or killed
// write leaves no partial file under path.
func writeAtomically[T any](e *env, path string, write func(io.Writer) (T, error)) (T, error) {
	var zero T
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return zero, err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return zero, pathless(err)
	}
	// Removing tmp is best effort (the process is ending on a store
	// failure): a leftover has a hidden name and is never mistaken for path.
	e.cleanups = append(e.cleanups, func() { _ = os.Remove(tmp) })
	res, err := write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path) // fails if path appeared meanwhile
	}
	// Best effort: on success path is a link to the same file; on failure
	// err is the error to report.
	_ = os.Remove(tmp)
	if err != nil {
		return zero, err
	}
	return res, nil
}

func importCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "re-create a ledger from an export archive, atomically",
		ArgsUsage: "FILE | -",
		Description: "Each document is decoded and verified again and appended with its original arrival time into a\n" +
			"staging directory beside --dir, which replaces --dir only when every event was re-created\n" +
			"identically, the tree root equals the archive's and the archive's signed checkpoint (and settings)\n" +
			"verify. A failed or interrupted import leaves --dir as it was. --dir must be an empty ledger (its\n" +
			"key, origin and settings are kept) or not exist (a new ledger with the archive's origin and a new key).\n\n" +
			"The archive's settings are restored. Its registered HMAC keys travel by name and key id only: give\n" +
			"each secret with --hmac-key NAME=FILE or --hmac-key-dir DIR (DIR/NAME), or a --hmac-key-file\n" +
			"with the same key id; when standard input is a terminal and the archive is not read from it,\n" +
			"import asks for a missing one (not echoed; the key's bytes, or its hex). A key still missing fails\n" +
			"the import before anything is written, naming each key and its id (exit 2); a secret whose key id\n" +
			"is not the archive's (exit 4) and a setting or key of the target ledger that differs from the\n" +
			"archive's under the same name (exit 4) fail it too.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for RVWW bundles, besides registered keys (repeatable); restores an archived key with the same key id"},
			&cli.StringSliceFlag{Name: "hmac-key", Usage: "the secret of the archive's HMAC key `NAME=FILE` (repeatable); its key id must be the archive's"},
			&cli.StringFlag{Name: "hmac-key-dir", Usage: "directory holding a key file per archived HMAC key, named as the key (`DIR`/NAME)"},
			&cli.StringFlag{Name: "archive-key", Usage: "the verifier key (or a file holding it) the archive's checkpoint must verify under; default: the key the archive names"},
			&cli.BoolFlag{Name: "json", Usage: "print the archive, directory, events, tree root and signer as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("import takes one FILE (or - for standard input)")
			}
			var opts admit.ImportOptions
			for _, p := range c.StringSlice("hmac-key-file") {
				k, err := keys.LoadHMACKey(p)
				if err != nil {
					return usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
				}
				opts.HMACKeys = append(opts.HMACKeys, k)
			}
			if k := c.String("archive-key"); k != "" {
				vkey, err := readVerifierKey(k)
				if err != nil {
					return usageErrorf("--archive-key: %v", err)
				}
				opts.VerifierKey = vkey
			}
			path := c.Args().First()
			if err := readImportSecrets(c, e, path, &opts); err != nil {
				return err
			}
			var r io.Reader = e.stdin
			if path != "-" {
				f, err := openRegular(path)
				if err != nil {
					return usageErrorf("import %s: %v", path, pathless(err))
				}
				defer func() { _ = f.Close() }() // read-only: nothing to lose
				r = f
			}
			opts.Logger, opts.Projectors = e.log, ledgerProjectors()
			wait, err := waitOf(c)
			if err != nil {
				return err
			}
			opts.Wait = wait
			dir := c.String("dir")
			bar := e.newImportProgress(path)
			opts.Progress = bar.set
			st, err := admit.Import(c.Context, dir, r, opts)
			bar.done()
			switch {
			case errors.Is(err, ledger.ErrNotLedger):
				return usageErrorf("import into %s: %v", dir, err)
			case errors.Is(err, admit.ErrMissingSecret):
				return usageErrorf("import %s: %v; give each with --hmac-key NAME=FILE or --hmac-key-dir DIR (%s was left as it was)", path, err, dir)
			case errors.Is(err, admit.ErrWrongSecret):
				return exitf(exitInvalid, "import %s: %v (%s was left as it was)", path, err, dir)
			case errors.Is(err, ledger.ErrImport):
				return exitf(exitInvalid, "import %s: %v (%s was left as it was)", path, err, dir)
			case err != nil:
				return exitf(exitInternal, "import %s: %w (%s was left as it was)", path, err, dir)
			}
			if c.Bool("json") {
				rep := importJSON{File: path, Dir: dir, Events: st.Events, Root: b64(st.Root[:])}
				if st.Signer != "" {
					rep.Signer = &st.Signer
				}
				return writeJSONLine(e.stdout, rep)
			}
			signed := ""
			if st.Signer != "" {
				signed = "; its signed checkpoint verifies under " + st.Signer
			}
			_, _ = fmt.Fprintf(e.stdout, "imported %d events into %s; tree root %s matches the archive%s%s\n", st.Events, dir, b64(st.Root[:]), signed, importedSettings(st))
			return nil
		},
	}
}

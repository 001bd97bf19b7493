package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

func initCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create a ledger: the store, the log key and the checkpoint origin",
		Description: "Creates the ledger directory (--dir, LEDGER_DIR, default ./ledger-data) with a Pebble store,\n" +
			"an Ed25519 log key (log.key, mode 0600; generated unless --key names a PKCS#8 PEM or hex seed file)\n" +
			"and its signed-note verifier key (log.pub), which `ledger verify-proof --key` takes.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "origin", Usage: "checkpoint origin (the log's name)", Value: "ledger.local"},
			&cli.StringFlag{Name: "key", Usage: "use this Ed25519 private key file as the log key"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("init takes no arguments")
			}
			opts := ledger.InitOptions{Origin: c.String("origin"), Logger: e.log}
			if p := c.String("key"); p != "" {
				k, err := keys.LoadPrivateKey(p)
				if err != nil {
					return usageErrorf("--key: %v", pathless(err))
				}
				opts.Key = k
			}
			dir := c.String("dir")
			wait, err := waitOf(c)
			if err != nil {
				return err
			}
			opts.Wait = wait
			if err := ledger.InitContext(c.Context, dir, opts); err != nil {
				if errors.Is(err, ledger.ErrExists) {
					return usageErrorf("%v", err)
				}
				return exitf(exitInternal, "init %s: %w", dir, err)
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			_, _ = fmt.Fprintf(e.stdout, "initialized ledger in %s\n  origin        %s\n  log key       %s (0600)\n  verifier key  %s\n",
				dir, l.Origin(), filepath.Join(dir, "log.key"), l.VerifierKey())
			return nil
		},
	}
}

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger/registry"
)

func keyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "key",
		Usage: "manage keys the ledger uses to verify documents",
		Subcommands: []*cli.Command{
			{
				Name:      "add-hmac",
				Usage:     "register a raw HMAC key for RVWW witness bundles",
				ArgsUsage: "NAME FILE",
				Flags:     []cli.Flag{dirFlag()},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usageErrorf("key add-hmac takes NAME and FILE")
					}
					k, err := keys.LoadHMACKey(c.Args().Get(1))
					if err != nil {
						return usageErrorf("%s: %v", c.Args().Get(1), pathless(err))
					}
					k.Name = c.Args().Get(0)
					if err := registry.ValidKeyName(k.Name); err != nil {
						return usageErrorf("%v", err)
					}
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					added, err := l.Registry().AddHMACKey(k)
					if err != nil {
						return usageErrorf("%v", err)
					}
					if !added {
						_, _ = fmt.Fprintf(e.stdout, "HMAC key %q (%s) is already registered\n", k.Name, registry.KeyID(k.Secret))
						return nil
					}
					_, _ = fmt.Fprintf(e.stdout, "registered HMAC key %q (%s)\n", k.Name, registry.KeyID(k.Secret))
					return nil
				},
			},
		},
	}
}

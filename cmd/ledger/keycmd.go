package main

import (
	"fmt"
	"io"

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
				ArgsUsage: "NAME FILE|-",
				Description: "Registers the key in FILE (every byte of it is the key; - reads it from standard input,\n" +
					"so a secret need not touch the disk: printf %s \"$SECRET\" | ledger key add-hmac NAME -) under NAME.\n" +
					"Registering the same key under the same name again says so and exits 0; another key under a\n" +
					"registered name is refused (exit 2).",
				Flags: []cli.Flag{
					dirFlag(),
					&cli.BoolFlag{Name: "json", Usage: "print the name, key id and whether it was added as one JSON object"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usageErrorf("key add-hmac takes NAME and FILE (- for standard input)")
					}
					k, err := loadHMACKeyArg(c.Args().Get(1), e)
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
					if c.Bool("json") {
						return writeJSONLine(e.stdout, hmacKeyJSON{Name: k.Name, KeyID: registry.KeyID(k.Secret), Added: added})
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

// loadHMACKeyArg reads an HMAC key from a file (keys.LoadHMACKey) or, for
// "-", from standard input with the same rules: every byte is the key,
// at most keys.MaxHMACKeySize of them, at least one.
func loadHMACKeyArg(name string, e *env) (keys.HMACKey, error) {
	if name != "-" {
		return keys.LoadHMACKey(name)
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, keys.MaxHMACKeySize+1))
	if err != nil {
		return keys.HMACKey{}, fmt.Errorf("standard input: %w", err)
	}
	if len(data) > keys.MaxHMACKeySize {
		return keys.HMACKey{}, fmt.Errorf("%w: HMAC key on standard input is more than %d bytes", keys.ErrKey, keys.MaxHMACKeySize)
	}
	if len(data) < keys.MinHMACKeySize {
		return keys.HMACKey{}, fmt.Errorf("%w: empty HMAC key on standard input", keys.ErrKey)
	}
	return keys.HMACKey{Name: "-", Secret: data}, nil
}

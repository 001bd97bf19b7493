package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write every event to a zstd-compressed JSON Lines archive",
		ArgsUsage: "FILE",
		Flags:     []cli.Flag{dirFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("export takes one FILE")
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer l.Close()
			path := c.Args().First()
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return usageErrorf("export %s: %v", path, pathless(err))
			}
			n, err := l.Export(c.Context, f)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return exitf(exitInternal, "export %s: %v", path, err)
			}
			fmt.Fprintf(e.stdout, "exported %d events to %s\n", n, path)
			return nil
		},
	}
}

func importCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "re-verify and append every event of an export archive into an empty ledger",
		ArgsUsage: "FILE",
		Description: "Each document is decoded and verified again and appended with its original arrival time;\n" +
			"the import fails unless every event is re-created identically and the tree root matches the archive's.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for RVWW bundles, besides registered keys (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("import takes one FILE")
			}
			var opts ledger.AppendOptions
			for _, p := range c.StringSlice("hmac-key-file") {
				k, err := keys.LoadHMACKey(p)
				if err != nil {
					return usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
				}
				opts.HMACKeys = append(opts.HMACKeys, k)
			}
			path := c.Args().First()
			f, err := os.Open(path)
			if err != nil {
				return usageErrorf("import %s: %v", path, pathless(err))
			}
			defer f.Close()
			l, err := openLedger(c, e, false)
			if err != nil {
				return err
			}
			defer l.Close()
			st, err := l.Import(c.Context, f, opts)
			if err != nil {
				return exitf(exitInvalid, "import %s: %v", path, err)
			}
			fmt.Fprintf(e.stdout, "imported %d events; tree root %s matches the archive\n", st.Events, b64(st.Root[:]))
			return nil
		},
	}
}

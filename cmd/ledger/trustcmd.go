package main

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/ledger/admit"
)

// maxTrustFile bounds a trusted-signers file read by trust add.
const maxTrustFile = 1 << 20

func trustCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "trust",
		Usage: "manage the ledger's trusted signers: the Ed25519 keys it admits signed documents from",
		Description: "The trusted signers are a ledger setting. While there are none, append admits any Ed25519\n" +
			"signer (as it did before the setting existed); once there are, a document signed by another key\n" +
			"is rejected (exit 4). append --trusted-signers FILE overrides the setting for one call. The\n" +
			"setting travels in export archives and import restores it.",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "trust the keys of a trusted-signers file (one public key per line, any spelling)",
				ArgsUsage: "FILE | -",
				Description: "Reads one Ed25519 public key per line (ed25519:<hex>, hex, base64 of the key or of its DER\n" +
					"SubjectPublicKeyInfo; blank lines and lines starting with # are skipped), the format of\n" +
					"append --trusted-signers, and adds each to the trusted signers. Keys already trusted are\n" +
					"reported and left alone. Exit code 3 when the file cannot be read or a line is not a key\n" +
					"(then nothing is added). --json prints one object per key: {\"signer\", \"changed\"} (changed: it was\n" +
					"not trusted before).",
				Flags: []cli.Flag{dirFlag(), &cli.BoolFlag{Name: "json", Usage: "print one JSON object per key: signer and changed"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErrorf("trust add takes one FILE (or - for standard input)")
					}
					path := c.Args().First()
					data, err := loadBounded(path, e.stdin, maxTrustFile)
					if err != nil {
						return exitf(exitMalformed, "%s: %v", path, pathless(err))
					}
					set, err := admit.ReadTrustedSigners(bytes.NewReader(data))
					if err != nil {
						return exitf(exitMalformed, "%s: %v", path, err)
					}
					if len(set) == 0 {
						return exitf(exitMalformed, "%s: no public key in it", path)
					}
					ids := make([]string, 0, len(set))
					for id := range set {
						ids = append(ids, id)
					}
					sort.Strings(ids)
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					for _, id := range ids {
						added, err := l.Registry().AddTrustedSigner(id)
						if err != nil {
							return exitf(exitInternal, "trust %s: %w", id, err)
						}
						if c.Bool("json") {
							if err := writeJSONLine(e.stdout, trustChangeJSON{Signer: id, Changed: added}); err != nil {
								return err
							}
							continue
						}
						if added {
							_, _ = fmt.Fprintf(e.stdout, "trusted %s\n", id)
						} else {
							_, _ = fmt.Fprintf(e.stdout, "%s is already trusted\n", id)
						}
					}
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "list the trusted signers",
				Description: "Prints one signer id per line, or says that any signer is admitted when there are none.\n" +
					"--json prints one object: {\"restricted\": bool, \"signers\": [\"ed25519:<hex>\", ...]}.",
				Flags: []cli.Flag{
					dirFlag(),
					&cli.BoolFlag{Name: "json", Usage: "print one JSON object: restricted and signers"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return usageErrorf("trust list takes no arguments")
					}
					l, err := openLedger(c, e, true)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					ids, err := l.Registry().TrustedSignerList()
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if c.Bool("json") {
						return writeJSONLine(e.stdout, trustJSON{Restricted: len(ids) > 0, Signers: ids})
					}
					if len(ids) == 0 {
						_, _ = fmt.Fprintln(e.stdout, "no trusted signers: any Ed25519 signer is admitted (ledger trust add FILE restricts them)")
						return nil
					}
					for _, id := range ids {
						_, _ = fmt.Fprintln(e.stdout, id)
					}
					return nil
				},
			},
			{
				Name:      "remove",
				Usage:     "stop trusting a key",
				ArgsUsage: "KEY",
				Description: "KEY is the public key in any spelling trust add accepts. Removing a key that is not trusted\n" +
					"changes nothing and says so; removing the last one admits any signer again. --json prints one\n" +
					"object: {\"signer\", \"changed\"} (changed: it was trusted and is removed).",
				Flags: []cli.Flag{dirFlag(), &cli.BoolFlag{Name: "json", Usage: "print one JSON object: signer and changed"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErrorf("trust remove takes one KEY")
					}
					pub, err := keys.ParsePublicKey(c.Args().First())
					if err != nil {
						return usageErrorf("trust remove: %v", err)
					}
					id := keys.SignerID(pub)
					l, err := openLedger(c, e, false)
					if err != nil {
						return err
					}
					defer closeLedger(l)
					removed, err := l.Registry().RemoveTrustedSigner(id)
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if c.Bool("json") {
						return writeJSONLine(e.stdout, trustChangeJSON{Signer: id, Changed: removed})
					}
					if !removed {
						_, _ = fmt.Fprintf(e.stdout, "%s is not trusted: nothing removed\n", id)
						return nil
					}
					_, _ = fmt.Fprintf(e.stdout, "no longer trusted: %s\n", id)
					left, err := l.Registry().TrustedSignerList()
					if err != nil {
						return exitf(exitInternal, "%w", err)
					}
					if len(left) == 0 {
						_, _ = fmt.Fprintln(e.stdout, "no trusted signers left: any Ed25519 signer is admitted")
					}
					return nil
				},
			},
		},
	}
}

// trustJSON is the --json shape of trust list.
type trustJSON struct {
	// Restricted is false when any signer is admitted.
	Restricted bool     `json:"restricted"`
	Signers    []string `json:"signers"`
}

// trustChangeJSON is trust add's (per key) and trust remove's report:
// Changed is false when the key was already trusted (add) or was not
// trusted (remove).
type trustChangeJSON struct {
	Signer  string `json:"signer"`
	Changed bool   `json:"changed"`
}

package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/ledger"
)

func initCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create a ledger: the store, the log key and the checkpoint origin",
		Description: "Creates the ledger directory (--dir, LEDGER_DIR, default ./ledger-data) with a Pebble store,\n" +
			"an Ed25519 log key (log.key, mode 0600; generated unless --key names a PKCS#8 PEM or hex seed file)\n" +
			"and its signed-note verifier key (log.pub), which `ledger verify-proof --key` takes.\n\n" +
			"Idempotent: on a ledger that already exists with the same origin (and, when --key is given, the\n" +
			"same log key) init says so and exits 0; with another origin or key it exits 2 and says what differs.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "origin", Usage: "checkpoint origin (the log's name)", Value: "ledger.local"},
			&cli.StringFlag{Name: "key", Usage: "use this Ed25519 private key file as the log key (- for standard input)"},
			&cli.BoolFlag{Name: "json", Usage: "print the ledger's directory, origin, log key file and verifier key as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("init takes no arguments")
			}
			origin := c.String("origin")
			if !validOriginArg(origin) {
				return usageErrorf("--origin %q: must be non-empty printable text without spaces or '+'", origin)
			}
			opts := ledger.InitOptions{Origin: origin, Logger: e.log}
			if p := c.String("key"); p != "" {
				k, err := loadPrivateKeyArg(p, e)
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
			created := true
			if err := ledger.InitContext(c.Context, dir, opts); err != nil {
				if errors.Is(err, ledger.ErrBusy) {
					return exitf(exitBusy, "init %s: %w", dir, err)
				}
				if !errors.Is(err, ledger.ErrExists) {
					return exitf(exitInternal, "init %s: %w", dir, err)
				}
				if err := sameLedger(c, e, dir, opts); err != nil {
					return err
				}
				created = false
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			rep := initJSON{Dir: dir, Created: created, Origin: l.Origin(), LogKey: filepath.Join(dir, "log.key"), VerifierKey: l.VerifierKey()}
			if c.Bool("json") {
				return writeJSONLine(e.stdout, rep)
			}
			head := "initialized ledger in " + dir
			if !created {
				head = "ledger in " + dir + " already exists with this origin and key: nothing to do"
				if opts.Key == nil {
					head = "ledger in " + dir + " already exists with this origin: nothing to do"
				}
			}
			_, _ = fmt.Fprintf(e.stdout, "%s\n  origin        %s\n  log key       %s (0600)\n  verifier key  %s\n",
				head, rep.Origin, rep.LogKey, rep.VerifierKey)
			return nil
		},
	}
}

// sameLedger checks that the ledger already in dir is the one init was
// asked for: the same origin and, when a key was given, the same log key.
// A difference is a usage error naming it.
func sameLedger(c *cli.Context, e *env, dir string, want ledger.InitOptions) error {
	l, err := openLedger(c, e, true)
	if err != nil {
		return usageErrorf("%s: a ledger already exists there and cannot be opened: %v", dir, err)
	}
	origin, vkey := l.Origin(), l.VerifierKey()
	closeLedger(l)
	var diffs []string
	if origin != want.Origin {
		diffs = append(diffs, fmt.Sprintf("origin %q, not %q", origin, want.Origin))
	}
	if want.Key != nil {
		have, err := ledger.LogKey(dir)
		if err != nil {
			return exitf(exitInternal, "%s: log key: %w", dir, err)
		}
		if !have.Public().(ed25519.PublicKey).Equal(want.Key.Public()) {
			diffs = append(diffs, fmt.Sprintf("another log key (verifier key %s)", vkey))
		}
	}
	if len(diffs) > 0 {
		return usageErrorf("%s: a ledger already exists there with %s; choose another --dir", dir, strings.Join(diffs, " and "))
	}
	return nil
}

// validOriginArg is ledger.Init's rule for an origin (non-empty, no space,
// control character or '+'), checked first so that a bad --origin is a
// usage error.
func validOriginArg(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '+' || r == 0x7f })
}

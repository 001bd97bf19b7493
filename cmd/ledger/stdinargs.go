package main

import (
	"crypto/ed25519"
	"fmt"

	"os"
	"strings"

	"github.com/proofledger/ledger/codec/keys"
)

// maxKeyFile bounds an Ed25519 private key read from standard input (a
// PKCS#8 PEM file is about 120 bytes).
const maxKeyFile = 64 << 10

// loadPrivateKeyArg reads an Ed25519 private key from a file
// (keys.LoadPrivateKey) or, for "-", from standard input.
func loadPrivateKeyArg(name string, e *env) (ed25519.PrivateKey, error) {
	if name != "-" {
		return keys.LoadPrivateKey(name)
	}
	data, err := loadBounded("-", e.stdin, maxKeyFile)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	priv, err := keys.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return priv, nil
}

// readFileArg reads a file named by a flag (os.ReadFile) or, for "-",
// standard input, at most max bytes of it.
func readFileArg(name string, e *env, max int64) ([]byte, error) {
	if name != "-" {
		return os.ReadFile(name)
	}
	return loadBounded("-", e.stdin, max)
}

// oneStdin checks that standard input is given (as "-") to at most one of
// the places that may read it; places maps each place ("--spec", "an
// input") to its values.
func oneStdin(places [][2]string) error {
	var claims []string
	for _, p := range places {
		if p[1] == "-" {
			claims = append(claims, p[0])
		}
	}
	if len(claims) > 1 {
		return usageErrorf("standard input (-) is given to %s: it can be read once", strings.Join(claims, " and "))
	}
	return nil
}

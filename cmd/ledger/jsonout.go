package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/proofledger/ledger/proof"
)

// The --json shapes of init, checkpoint, prove, verify-proof, export,
// import, key add-hmac, policy add, rebuild and audit. Every --json output
// is one JSON object per line; docs/CLI.md shows each shape (generated
// from these types by reflection, see clidoc.go).

// initJSON is init's report. Created is false when the ledger already
// existed with the same origin (and key).
type initJSON struct {
	Dir         string `json:"dir"`
	Created     bool   `json:"created"`
	Origin      string `json:"origin"`
	LogKey      string `json:"log_key"`
	VerifierKey string `json:"verifier_key"`
}

// signatureJSON is one signature line of a signed note.
type signatureJSON struct {
	// Name is the signer's name (the log's origin for the log's own).
	Name string `json:"name"`
	// KeyHash is the 4-byte key hash that starts the signature, in hex.
	KeyHash string `json:"key_hash"`
	// Signature is the rest, base64.
	Signature string `json:"signature"`
}

// checkpointJSON is checkpoint's report: the note's fields and the note.
type checkpointJSON struct {
	Origin      string          `json:"origin"`
	Size        int64           `json:"size"`
	Root        string          `json:"root"`
	VerifierKey string          `json:"verifier_key"`
	Signatures  []signatureJSON `json:"signatures"`
	// Note is the signed checkpoint, as `ledger checkpoint` prints it.
	Note string `json:"note"`
}

// noteSignatures reads the signature lines of a signed note ("— name
// base64"); lines that are not signatures are skipped.
func noteSignatures(signed []byte) []signatureJSON {
	out := []signatureJSON{}
	_, sigs, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return out
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(sigs), "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "— ")
		if !ok {
			continue
		}
		name, b64sig, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(b64sig)
		if err != nil || len(raw) < 4 {
			continue
		}
		out = append(out, signatureJSON{Name: name, KeyHash: hex.EncodeToString(raw[:4]), Signature: base64.StdEncoding.EncodeToString(raw[4:])})
	}
	return out
}

func toCheckpointJSON(ck proof.Checkpoint, vkey string, signed []byte) checkpointJSON {
	return checkpointJSON{Origin: ck.Origin, Size: ck.Size, Root: b64(ck.Root[:]), VerifierKey: vkey,
		Signatures: noteSignatures(signed), Note: string(signed)}
}

// proveJSON is prove's report: the proof's fields, and the proof's text as
// prove writes it. Inclusion proofs fill seq, kind, id and leaf;
// consistency proofs old_size and old_root; the rest are null for the
// other type. file is where -o wrote the proof (null on standard output).
type proveJSON struct {
	Type    string          `json:"type"`
	Seq     *int64          `json:"seq"`
	Kind    *string         `json:"kind"`
	ID      *string         `json:"id"`
	Leaf    json.RawMessage `json:"leaf"`
	OldSize *int64          `json:"old_size"`
	OldRoot *string         `json:"old_root"`
	// Size, Root and Origin are the signed checkpoint's tree.
	Size   int64    `json:"size"`
	Root   string   `json:"root"`
	Origin string   `json:"origin"`
	Hashes []string `json:"hashes"`
	// Checkpoint is the signed checkpoint note the proof ends with.
	Checkpoint string  `json:"checkpoint"`
	Proof      string  `json:"proof"`
	File       *string `json:"file"`
}

func hashesB64(hs []tlog.Hash) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, b64(h[:]))
	}
	return out
}

// verifyJSON is verify-proof's report. On failure ok is false and error
// says why; fields the proof did not establish are null.
type verifyJSON struct {
	File    string  `json:"file"`
	OK      bool    `json:"ok"`
	Type    *string `json:"type"`
	Seq     *int64  `json:"seq"`
	Kind    *string `json:"kind"`
	ID      *string `json:"id"`
	OldSize *int64  `json:"old_size"`
	OldRoot *string `json:"old_root"`
	Size    *int64  `json:"size"`
	Root    *string `json:"root"`
	Origin  *string `json:"origin"`
	// DocumentChecked: --doc was given and matches the leaf's digest.
	DocumentChecked bool    `json:"document_checked"`
	Error           *string `json:"error"`
}

// exportJSON is export's report.
type exportJSON struct {
	File   string `json:"file"`
	Events int64  `json:"events"`
	// Root is the tree root of the archive's signed checkpoint.
	Root string `json:"root"`
	// Settings and HMACKeys count the settings and the HMAC keys (by name
	// and key id, never the secret) the archive carries.
	Settings int `json:"settings"`
	HMACKeys int `json:"hmac_keys"`
}

// importJSON is import's report. Signer is the verifier key the archive's
// checkpoint verified under (null for a version-1 archive).
type importJSON struct {
	File   string  `json:"file"`
	Dir    string  `json:"dir"`
	Events int64   `json:"events"`
	Root   string  `json:"root"`
	Signer *string `json:"signer"`
}

// hmacKeyJSON is key add-hmac's report. Added is false when the same key
// was already registered under the name.
type hmacKeyJSON struct {
	Name  string `json:"name"`
	KeyID string `json:"key_id"`
	Added bool   `json:"added"`
}

// policyAddJSON is policy add's report: the policy (policy list's shape),
// whether it was added now, and the file. Source is "default" for one of
// the three default policies, which are never registered.
type policyAddJSON struct {
	File string `json:"file"`
	policyJSON
	Added bool `json:"added"`
}

// rebuildJSON is rebuild's report.
type rebuildJSON struct {
	Events          int64   `json:"events"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
}

func ptr[T any](v T) *T { return &v }

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/ledgertest"
)

// runInProcess runs the CLI in this process, as main does, with stdin
// as standard input, and returns stdout, stderr and the exit code. It is
// safe to call from parallel tests: every call has its own env and app.
func runInProcess(stdin []byte, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	e := &env{stdin: bytes.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" }}
	code := runEnv(context.Background(), append([]string{"ledger"}, args...), e)
	return out.String(), errb.String(), code
}

// mustRunIn runs the CLI in process and fails unless it exits with code.
func mustRunIn(t testing.TB, code int, args ...string) string {
	t.Helper()
	stdout, stderr, got := runInProcess(nil, args...)
	if got != code {
		t.Fatalf("ledger %s: exit %d, want %d\nstderr: %s\nstdout: %.2000s", strings.Join(args, " "), got, code, stderr, stdout)
	}
	return stdout
}

// sweepLedger is a ledger the read sweep runs commands on, with the
// references its arguments and flag values are drawn from.
type sweepLedger struct {
	name string
	dir  string
	// size is the number of events; root the checkpoint's root hash.
	size int
	root string
	// seq is an event in the middle; receipt, receiptPrefix a receipt's
	// id and a unique prefix of it; task a task UUID with bundles; bundle
	// a bundle's id; agent an agent with receipt chains; subject a
	// system ("name vversion") with attestations.
	seq                             int
	receipt, receiptPrefix          string
	task, bundle, agent, subject    string
	pub, proof, consProof, ckptFile string // log.pub, an inclusion and a consistency proof, a saved checkpoint
	doc                             string // the proven event's document (for verify-proof --doc)
}

// sweepCorpus is the generated part of the big ledger: 30,000 receipts of
// 32 agents in chains (some unchained), 18,000 witness bundles (compact
// text; tasks re-run, a few breaking their policy), 2,000 attestations of
// 12 system versions and their specifications: 50,012 documents, whose
// arrival times spread over the 30 days before yesterday.
func sweepCorpus(now time.Time) ledgertest.Config {
	return ledgertest.Config{
		Seed: 10, Receipts: 30_000, Bundles: 18_000, Attestations: 2_000, Specs: true, TextScale: 0.05,
		Start: now.UTC().Truncate(24 * time.Hour).Add(-31 * 24 * time.Hour), Span: 30 * 24 * time.Hour,
	}
}

// buildBigLedger makes the sweep's large ledger in dir through the public
// paths: `ledger init`, `key add-hmac` (the corpus's HMAC key), `policy
// add` (a custom policy), `trust add` (the corpus's signers) in process,
// then the generated corpus through admit.Append in batches of 2,048 (as
// `ledger append` does, with the same projections), then refusals for the
// journal: replays of corpus documents, a conflict-free untrusted receipt,
// a malformed file, a receipt whose predecessor is unknown.
func buildBigLedger(t testing.TB, dir, work string) *sweepLedger {
	t.Helper()
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := sweepCorpus(time.Now())
	corpus, err := ledgertest.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustRunIn(t, 0, "init", "--dir", dir, "--origin", "sweep.test/big")
	keyFile := filepath.Join(work, "hmac.key")
	writeFileT(t, keyFile, corpus.Keys.HMAC.Secret)
	mustRunIn(t, 0, "key", "add-hmac", "--dir", dir, ledgertest.HMACKeyName, keyFile)
	mustRunIn(t, 0, "policy", "add", "--dir", dir, repoPath("testdata/rvww/policies/custom_read_grep.json"))
	signers := filepath.Join(work, "signers.txt")
	writeFileT(t, signers, []byte(strings.Join(corpus.Keys.Signers(), "\n")+"\n"))
	mustRunIn(t, 0, "trust", "add", "--dir", dir, signers)

	l, err := admit.Open(dir, ledger.Options{Projectors: ledgerProjectors()})
	if err != nil {
		t.Fatal(err)
	}
	const batch = 2048
	for i := 0; i < len(corpus.Docs); i += batch {
		docs := corpus.Docs[i:min(i+batch, len(corpus.Docs))]
		subs := make([]admit.Submission, len(docs))
		for j, d := range docs {
			subs[j] = admit.Submission{Name: d.Name, Data: d.Data, Arrival: d.Arrival}
		}
		outs, err := l.Append(context.Background(), subs, admit.Options{Submitter: "sweep-test"})
		if err != nil {
			t.Fatal(err)
		}
		for j, o := range outs {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %s (%s)", docs[j].Name, o.Status, o.Reason)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	sl := &sweepLedger{name: "big", dir: dir}
	// References, from the corpus: a receipt of a chain in the middle, a
	// task with several bundles, an attestation's system.
	tasks := map[string]int{}
	for _, d := range corpus.Docs {
		switch d.Kind {
		case codec.KindVRF:
			if sl.receipt == "" && d.Index > len(corpus.Docs)/2 && d.Subject != "" {
				sl.receipt, sl.agent = d.ID, d.Subject
			}
		case codec.KindRVWW:
			tasks[d.Subject]++
			if tasks[d.Subject] == 3 && sl.task == "" {
				sl.task, sl.bundle = d.Subject, d.ID
			}
		case codec.KindAVIRAttestation:
			sl.subject = d.Subject
		}
	}
	// Refusals for the journal (exit 4: the untrusted and the unlinked
	// receipts; 3: the malformed file; 5: the replays).
	var refused []string
	for _, d := range corpus.Docs[:5] {
		p := filepath.Join(work, filepath.Base(d.Name))
		writeFileT(t, p, d.Data)
		refused = append(refused, p)
	}
	bad := filepath.Join(work, "malformed.json")
	writeFileT(t, bad, []byte(`{"vrf_version": `))
	refused = append(refused, bad, repoPath("testdata/vectors/vrf/01_tier0_pass.json"), repoPath("testdata/vrf/chain_2.json"))
	if _, stderr, code := runInProcess(nil, append([]string{"append", "--dir", dir}, refused...)...); code != exitMalformed {
		t.Fatalf("append of refused documents: exit %d: %s", code, stderr)
	}
	sl.fill(t, work)
	return sl
}

// buildSmallLedger makes a ledger of four events (a receipt chain, a
// receipt, a signed bundle) with no trusted signers and no registered key.
func buildSmallLedger(t testing.TB, dir, work string) *sweepLedger {
	t.Helper()
	mustRunIn(t, 0, "init", "--dir", dir, "--origin", "sweep.test/small")
	mustRunIn(t, 0, "append", "--dir", dir, "--hmac-key-file", repoPath("testdata/vectors/rvww/hmac_key.txt"),
		repoPath("testdata/vrf/chain_1.json"), repoPath("testdata/vrf/chain_2.json"), repoPath("testdata/vectors/vrf/01_tier0_pass.json"),
		repoPath("testdata/vectors/rvww/01_solved_autonomous_signed.rvww"))
	sl := &sweepLedger{name: "small", dir: dir}
	var ev struct {
		ID      string `json:"id"`
		Subject string `json:"subject"`
	}
	if err := json.Unmarshal([]byte(mustRunIn(t, 0, "get", "--dir", dir, "--json", "3")), &ev); err != nil {
		t.Fatal(err)
	}
	sl.task, sl.bundle = ev.Subject, ev.ID
	if err := json.Unmarshal([]byte(mustRunIn(t, 0, "get", "--dir", dir, "--json", "1")), &ev); err != nil {
		t.Fatal(err)
	}
	sl.receipt, sl.agent, sl.subject = ev.ID, ev.Subject, "nobody v0"
	sl.fill(t, work)
	return sl
}

// fill completes sl's references: size and root, a middle event, a
// receipt id prefix, the proofs and the saved checkpoint (in work).
func (sl *sweepLedger) fill(t testing.TB, work string) {
	t.Helper()
	sl.size, sl.root = checkpointOf(t, sl.dir)
	sl.seq = sl.size / 2
	sl.receiptPrefix = sl.receipt[:13]
	sl.pub = filepath.Join(sl.dir, "log.pub")
	sl.proof = filepath.Join(work, sl.name+".proof")
	mustRunIn(t, 0, "prove", "--dir", sl.dir, strconv.Itoa(sl.seq), "-o", sl.proof)
	sl.consProof = filepath.Join(work, sl.name+".cproof")
	mustRunIn(t, 0, "prove", "--dir", sl.dir, "--consistency", "1", strconv.Itoa(sl.size), "-o", sl.consProof)
	sl.doc = filepath.Join(work, sl.name+".doc")
	writeFileT(t, sl.doc, []byte(mustRunIn(t, 0, "get", "--dir", sl.dir, "--raw", strconv.Itoa(sl.seq))))
	sl.ckptFile = filepath.Join(work, sl.name+".checkpoint")
	writeFileT(t, sl.ckptFile, []byte(mustRunIn(t, 0, "checkpoint", "--dir", sl.dir)))
}

// checkpointOf returns the size and root of the ledger's checkpoint.
func checkpointOf(t testing.TB, dir string) (int, string) {
	t.Helper()
	var ck struct {
		Size int    `json:"size"`
		Root string `json:"root"`
	}
	if err := json.Unmarshal([]byte(mustRunIn(t, 0, "checkpoint", "--dir", dir, "--json")), &ck); err != nil {
		t.Fatal(err)
	}
	return ck.Size, ck.Root
}

// repoPath names a file of the repository (tests run in cmd/ledger).
func repoPath(p string) string {
	abs, err := filepath.Abs(filepath.Join("../..", p))
	if err != nil {
		panic(err)
	}
	return abs
}

func writeFileT(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/proof"
	"github.com/proofledger/ledger/verifier/sandbox"
	"github.com/proofledger/ledger/verifier/vrfrun"
)

// exitNotPass is `run --fail-unless-pass`'s code when a verdict is not
// pass (the code scorecard uses for an unmet acceptance criterion).
const exitNotPass = 6

// noCodeRan is metadata.sandbox of a receipt whose checks ran no code (a
// tier-1 request without expr constraints): every receipt `run vrf`
// signs says what its code ran in.
const noCodeRan = "none: no code ran"

const runExitHelp = "Exit codes:\n" +
	"   0  every receipt (or attestation) was signed and appended, whatever its verdict\n" +
	"   1  internal error, or the sandbox failed to run a request's code (nothing appended for it)\n" +
	"   2  usage error; also: this host refuses the sandbox's namespaces and --sandbox none was not given\n" +
	"   3  some request or specification could not be read, is malformed, or needs a runtime this host lacks\n" +
	"      (nothing appended for it; the other requests still run)\n" +
	"   4  (run avir) a benchmark was not measured: the verdict is INVALID and nothing was signed\n" +
	"   5  the ledger refused an append as a replay or conflict\n" +
	"   6  (--fail-unless-pass) some verdict is not pass (VERIFIED for run avir)\n" +
	"   7  the ledger is damaged\n" +
	"   When several apply, the lowest is returned."

func runCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "verify submitted work in the sandbox, sign the result with the log key and append it",
		Subcommands: []*cli.Command{
			runVRFCommand(e),
			runAVIRCommand(e),
		},
	}
}

// sandboxFlag is --sandbox, shared by the run commands.
func sandboxFlag() cli.Flag {
	return &cli.StringFlag{Name: "sandbox", Value: "namespaces",
		Usage: "namespaces (Linux namespaces, seccomp, Landlock, limits; docs/SANDBOX.md) or none: run submitted code " +
			"as a plain child process, with no isolation; only where the kernel refuses namespaces, and only when asked"}
}

// signingKeyFlag is --key, shared by the run commands.
func signingKeyFlag() cli.Flag {
	return &cli.StringFlag{Name: "key", Usage: "sign with this Ed25519 private key file (PKCS#8 PEM or 64-hex seed) instead of the ledger's log key"}
}

func runVRFCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "vrf",
		Usage:     "decide VRF verification requests as the reference verifier does, sign the receipts and append them",
		ArgsUsage: "REQUEST.json... | DIR | -",
		Description: "Takes the request bodies the reference verifier (POST /verify, POST /verify/schema) takes:\n" +
			"tier 0 test suites (python by default; other languages as programs on stdin/stdout) and tier 1\n" +
			"schema and constraint checks (../shared/specs/VERIFY-REQUESTS.md). Each request's code runs in the\n" +
			"sandbox; the verdict, counts, per-test statuses and hashes are the reference's (verifier/vrfrun).\n" +
			"Each receipt is signed in the reference form with the ledger's log key (or --key) and appended\n" +
			"through the normal append path; it records the sandbox its code ran in (metadata.sandboxed,\n" +
			"metadata.sandbox). Requests run concurrently, --jobs tests at a time in all; receipts are signed\n" +
			"and appended in request order once every request is decided, in one locked append.\n\n" +
			"With --agent ID every receipt carries agent_id ID and continues that agent's receipt chain:\n" +
			"the first names the agent's latest receipt in the ledger as metadata.previous_receipt at the next\n" +
			"metadata.chain_position (0 when the agent has none), each following one the receipt before it.\n\n" +
			"--json prints one line per request, in request order:\n" +
			"   {\"file\": F, \"status\": \"appended\", \"seq\": N, \"receipt\": {the receipt as stored}}\n" +
			"   {\"file\": F, \"status\": S, \"seq\": null, \"reason\": R, \"receipt\": null} where S is unreadable,\n" +
			"   malformed or unsupported (exit 3), failed (the sandbox could not run it, exit 1), or rejected,\n" +
			"   replay or conflict (the ledger refused the receipt; seq is the stored event's for a replay).\n\n" +
			runExitHelp,
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per request per line"},
			&cli.IntFlag{Name: "jobs", Usage: "tests run at once, over all requests (default: the number of cores)"},
			signingKeyFlag(),
			&cli.StringFlag{Name: "agent", Usage: "write agent_id ID into every receipt and continue that agent's receipt chain"},
			&cli.BoolFlag{Name: "fail-unless-pass", Usage: "exit 6 when some verdict is not pass"},
			&cli.BoolFlag{Name: "schema", Usage: "read every request as POST /verify/schema does: tier 1 whatever the body says"},
			sandboxFlag(),
		},
		Action: func(c *cli.Context) error { return runVRF(c, e) },
	}
}

// vrfJob is one request on its way to a receipt.
type vrfJob struct {
	name   string
	req    *vrfrun.Request
	res    *vrfrun.Result
	at     time.Time // when its verification ended: the receipt's verified_at
	status string    // set when it ends without a receipt
	reason string
	code   int
}

// runVRFLine is the --json shape of one request.
type runVRFLine struct {
	File    string          `json:"file"`
	Status  string          `json:"status"`
	Seq     *int64          `json:"seq"`
	Reason  string          `json:"reason,omitempty"`
	Receipt json.RawMessage `json:"receipt"`
}

func runVRF(c *cli.Context, e *env) error {
	jobs := c.Int("jobs")
	if jobs < 0 {
		return usageErrorf("--jobs must not be negative")
	}
	if jobs == 0 {
		jobs = runtime.NumCPU()
	}
	agent := c.String("agent")
	if c.IsSet("agent") && agent == "" {
		return usageErrorf("--agent: empty agent id")
	}
	if _, err := sandbox.ParseMode(c.String("sandbox")); err != nil {
		return usageErrorf("--sandbox: want namespaces or none, got %q", c.String("sandbox"))
	}
	refs, err := expandInputs(c.Args().Slice())
	if err != nil {
		return err
	}
	key, hidden, err := runPrepare(c, e)
	if err != nil {
		return err
	}
	// Read and parse every request first: a malformed one is reported and
	// skipped, the others run.
	list := make([]*vrfJob, len(refs))
	var stdin []byte
	var stdinErr error
	stdinRead := false
	runnable := 0
	for i, r := range refs {
		j := &vrfJob{name: r.name}
		list[i] = j
		var body []byte
		switch {
		case r.err != nil:
			err = r.err
		case r.name == "-":
			if !stdinRead {
				stdin, stdinErr = loadInput("-", e.stdin)
				stdinRead = true
			}
			body, err = stdin, stdinErr
		default:
			body, err = loadInput(r.name, e.stdin)
		}
		if err != nil {
			j.status, j.reason, j.code = "unreadable", "cannot read: "+err.Error(), exitMalformed
			continue
		}
		j.req, err = vrfrun.ParseRequest(body, vrfrun.ParseOptions{Schema: c.Bool("schema")})
		if err != nil {
			j.status, j.reason, j.code = "malformed", err.Error(), exitMalformed
			continue
		}
		runnable++
	}
	if runnable > 0 {
		if err := verifyAll(c, e, list, jobs, hidden); err != nil {
			return err
		}
	}
	return appendReceipts(c, e, list, key, agent)
}

// runPrepare checks the ledger before anything runs (it exists, is not
// damaged, its derived entries are current: a write open does that) and
// loads the signing key. hidden are the paths the sandbox must never
// show: the ledger's directory and the key file.
func runPrepare(c *cli.Context, e *env) (ed25519.PrivateKey, []string, error) {
	l, err := openLedger(c, e, false)
	if err != nil {
		return nil, nil, err
	}
	dir := l.Dir()
	closeLedger(l)
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, exitf(exitInternal, "%w", err)
	}
	hidden := []string{absDir}
	if p := c.String("key"); p != "" {
		k, err := keys.LoadPrivateKey(p)
		if err != nil {
			return nil, nil, usageErrorf("--key %s: %v", p, pathless(err))
		}
		if abs, err := filepath.Abs(p); err == nil {
			hidden = append(hidden, abs)
		}
		return k, hidden, nil
	}
	k, err := ledger.LogKey(dir)
	if err != nil {
		return nil, nil, exitf(exitInternal, "the ledger's log key: %w", err)
	}
	return k, hidden, nil
}

// newRunner starts the sandbox --sandbox names. Where the kernel refuses
// namespaces, it refuses to run submitted code unless --sandbox none was
// given explicitly.
func newRunner(c *cli.Context, e *env, pool int, hidden []string) (*sandbox.Runner, error) {
	mode, err := sandbox.ParseMode(c.String("sandbox"))
	if err != nil {
		return nil, usageErrorf("--sandbox: want namespaces or none, got %q", c.String("sandbox"))
	}
	cfg := sandbox.Config{Mode: mode, Hidden: hidden, Logger: e.log}
	if mode == sandbox.ModeNamespaces {
		cfg.Pool = pool
	}
	r, err := sandbox.New(cfg)
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		return nil, usageErrorf("%v: submitted code is never run outside the sandbox unless asked; "+
			"give --sandbox none to run it as a plain child process, with no isolation (receipts then record sandboxed: false, sandbox: none)", err)
	case err != nil:
		return nil, exitf(exitInternal, "sandbox: %w", err)
	}
	if mode == sandbox.ModeNone {
		_, _ = fmt.Fprintln(e.stderr, "ledger: warning: --sandbox none: submitted code runs as a plain child process, with the network and the file system in reach")
	}
	return r, nil
}

// limitedRunner bounds the sandboxes running at once, over every request
// of a call, to --jobs.
type limitedRunner struct {
	*sandbox.Runner
	tokens chan struct{}
}

// Run implements vrfrun.Runner: it waits for a token, then runs cmd.
func (l limitedRunner) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	select {
	case l.tokens <- struct{}{}:
	case <-ctx.Done():
		return sandbox.Result{}, ctx.Err()
	}
	defer func() { <-l.tokens }()
	return l.Runner.Run(ctx, cmd)
}

// verifyAll decides every parsed request, up to jobs at once (each runs
// its tests through the shared runner, jobs sandboxes at a time in all).
// A request that cannot be decided is marked; the call fails only when
// ctx ends (an interrupt: nothing is appended).
func verifyAll(c *cli.Context, e *env, list []*vrfJob, jobs int, hidden []string) error {
	r, err := newRunner(c, e, jobs, hidden)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // stops the pool; nothing to lose
	v, err := vrfrun.New(limitedRunner{Runner: r, tokens: make(chan struct{}, jobs)}, vrfrun.Options{Jobs: jobs, Logger: e.log})
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	ctx := c.Context
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for _, j := range list {
		if j.req == nil {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := v.Verify(ctx, j.req)
			j.at = time.Now()
			switch {
			case err == nil:
				j.res = res
				e.log.Debug("run vrf: verified", "file", j.name, "verdict", res.Verdict, "counts", res.Counts.String())
			case errors.Is(err, vrfrun.ErrLanguage):
				j.status, j.reason, j.code = "unsupported", err.Error(), exitMalformed
			default:
				j.status, j.reason, j.code = "failed", err.Error(), exitInternal
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return exitf(exitInternal, "interrupted before every request was decided: nothing appended (%w)", err)
	}
	return nil
}

// appendReceipts signs the decided requests' receipts in request order
// and appends them, under the ledger's write lock: the agent's chain head
// is read after the lock is taken and carried forward receipt by
// receipt, so that concurrent runs never fork a chain. Then it reports
// every request, in order.
func appendReceipts(c *cli.Context, e *env, list []*vrfJob, key ed25519.PrivateKey, agent string) error {
	var l *admit.Ledger
	outcomes := make([]*ledger.Outcome, len(list))
	stored := make([][]byte, len(list))
	if hasReceipt(list) {
		var err error
		if l, err = openLedger(c, e, false); err != nil {
			return err
		}
		defer closeLedger(l)
		var link *vrf.ChainLink
		if agent != "" {
			h, found, err := l.AgentHead(agent)
			if err != nil {
				return exitf(exitInternal, "the chain head of agent %q: %w", agent, err)
			}
			link = &vrf.ChainLink{}
			if found {
				link = &vrf.ChainLink{PreviousReceipt: h.ID, Position: h.Position + 1}
			}
		}
		// Chunks bound one durable batch (as append does); a chunk's
		// receipts chain on each other, and the rules place them in
		// order.
		const maxChunk = 1024
		var subs []admit.Submission
		var idx []int
		flush := func() error {
			if len(subs) == 0 {
				return nil
			}
			out, err := l.AppendWithRetry(c.Context, subs, admit.Options{})
			if err != nil {
				return exitf(exitInternal, "append: %w", err)
			}
			for k, o := range out {
				o := o
				outcomes[idx[k]] = &o
			}
			subs, idx = subs[:0], idx[:0]
			return nil
		}
		for i, j := range list {
			if j.res == nil {
				continue
			}
			if j.res.Sandbox == "" {
				j.res.Sandbox = noCodeRan
			}
			id := uuid.NewString()
			data, err := j.res.Sign(key, vrfrun.ReceiptOptions{ReceiptID: id, VerifiedAt: j.at, AgentID: agent, Chain: link})
			if err != nil {
				return exitf(exitInternal, "%s: sign the receipt: %w", j.name, err)
			}
			if link != nil {
				link = &vrf.ChainLink{PreviousReceipt: id, Position: link.Position + 1}
			}
			stored[i] = data
			subs = append(subs, admit.Submission{Name: j.name, Data: data})
			idx = append(idx, i)
			if len(subs) == maxChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	worst := exitOK
	notPass := false
	asJSON := c.Bool("json")
	for i, j := range list {
		o := outcomes[i]
		code := j.code
		if o != nil {
			code = outcomeExit(*o)
			if o.Status == ledger.StatusAppended && j.res.Verdict != vrf.VerdictPass {
				notPass = true
			}
		}
		worst = worse(worst, code)
		if err := writeRunVRF(e, asJSON, j, o, stored[i], agent); err != nil {
			return err
		}
	}
	if notPass && c.Bool("fail-unless-pass") {
		worst = worse(worst, exitNotPass)
	}
	if worst != exitOK {
		return &exitError{code: worst}
	}
	return nil
}

func hasReceipt(list []*vrfJob) bool {
	for _, j := range list {
		if j.res != nil {
			return true
		}
	}
	return false
}

func writeRunVRF(e *env, asJSON bool, j *vrfJob, o *ledger.Outcome, data []byte, agent string) error {
	if asJSON {
		line := runVRFLine{File: j.name, Status: j.status, Reason: j.reason, Receipt: json.RawMessage("null")}
		if o != nil {
			line.Status, line.Reason = string(o.Status), o.Reason
			if o.Seq >= 0 {
				s := o.Seq
				line.Seq = &s
			}
			if o.Status == ledger.StatusAppended {
				line.Receipt = data
			}
		}
		return encodeLine(e, line)
	}
	if o == nil {
		_, _ = fmt.Fprintf(e.stdout, "%s: %s: %s\n", j.name, j.status, j.reason)
		return nil
	}
	res := j.res
	if o.Status != ledger.StatusAppended {
		_, _ = fmt.Fprintf(e.stdout, "%s: %s, but the receipt was not appended: %s (%s)\n", j.name, res.Verdict, o.Status, o.Reason)
		return nil
	}
	sandboxed := "sandboxed"
	switch {
	case res.Sandbox == noCodeRan:
		sandboxed = "no code ran"
	case !res.Sandboxed:
		sandboxed = "NOT sandboxed: " + res.Sandbox
	}
	chain := ""
	if agent != "" && o.Event != nil {
		chain = fmt.Sprintf(", agent %s at chain position %d", agent, o.Event.Position)
		if prev := linkTo(o.Event); prev != "" {
			chain += " after " + prev
		}
	}
	_, _ = fmt.Fprintf(e.stdout, "%s: %s (tier %d: %d passed, %d failed, %d errors; %s): receipt %s appended as event %d%s\n",
		j.name, res.Verdict, res.Tier, res.Counts.Passed, res.Counts.Failed, res.Counts.Errors, sandboxed, o.ID, o.Seq, chain)
	return nil
}

// linkTo is the receipt an event continues, "" for none.
func linkTo(ev *ledger.Event) string {
	for _, lk := range ev.Links {
		if lk.Rel == proof.RelPreviousReceipt {
			return lk.ID
		}
	}
	return ""
}

// encodeLine writes one --json line (no HTML escaping, as everywhere).
func encodeLine(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/avir"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/inspect"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/codec/vrf"
	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/index/attrs"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
	"github.com/proofledger/ledger/ledger/registry"
	"github.com/proofledger/ledger/proof"
	"github.com/proofledger/ledger/replay"
)

// ledger replay: the command line over package replay. It finds the
// document (a file, or an event of the ledger as get and prove resolve
// it), supplies what only the ledger knows (the HMAC key a bundle was
// admitted under, the policies, an attestation's specification, a
// receipt's chain and its agent's standing), and renders the library's
// reports. Everything it prints comes from the document and the ledger's
// state: no clock, no map order, no path but the one given.

// chainContext is how many receipts of a chain replay shows on each side
// of the one replayed.
const chainContext = 3

func replayCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay a witness bundle, VRF receipt or AVIR attestation: each claim beside what is recomputed",
		ArgsUsage: "TASK_UUID|SEQ|ID|PREFIX|FILE|-",
		Description: "The argument is read, in this order of precedence, as:\n" +
			"   1. - : a document on standard input, replayed outside the ledger;\n" +
			"   2. the path of an existing file: a document replayed outside the ledger (the output says so);\n" +
			"      a ledger's registered keys and policies are used when --dir (or LEDGER_DIR) names one or\n" +
			"      ./ledger-data exists;\n" +
			"   3. otherwise an event of the ledger, as get and prove resolve it: a sequence number, a document\n" +
			"      id, a task UUID (the task's latest witness bundle), or a unique prefix of at least 8 characters\n" +
			"      of a document id or digest.\n" +
			"A witness bundle (ADR-035 section 5): its HMAC is verified with the key whose id the ledger recorded\n" +
			"(registered keys, then --hmac-key-file; a key the ledger does not have is reported as \"signature not\n" +
			"checked: key <id> not registered\", which is not a pass); its calls are judged by the policy the\n" +
			"ledger evaluated it against (a default policy or one registered, by the hash in its header; unknown:\n" +
			"the recorded decisions are shown, not recomputed); then the spec, the plan, the trace one call at a\n" +
			"time (recorded and recomputed decision, running cost and call count against the policy's budgets),\n" +
			"the diff (coloured on a terminal), the test log, the runner's counts and the outcome check\n" +
			"(matches, contradicts or inconclusive). For a task with several bundles the latest (or the one\n" +
			"named) is replayed and the others are listed after it; --all replays each, oldest first.\n" +
			"A VRF receipt: re-verified, each count and the verdict recomputed from its details; from the ledger,\n" +
			"its chain around it (3 receipts each side) with its stated link checked, and its agent's standing\n" +
			"at that point: computed only from the agent's receipts up to this event (receipts, pass, fail,\n" +
			"partial and error counts, pass rate, chains, the length of this chain so far).\n" +
			"An AVIR attestation: each benchmark verdict, the summary and the overall verdict recomputed from its\n" +
			"statistics, field by field; checked against its specification when the ledger holds it.\n" +
			"The output is the same bytes on every run over the same ledger.\n\n" +
			"--json: one object per document replayed: the source (\"source\" ledger or file, \"seq\", \"file\")\n" +
			"and package replay's report of its kind (\"kind\" rvww, vrf or avir-attestation), whose keys are\n" +
			"listed below; a bundle's has \"outcome_check\", \"outcome_reason\" and \"tests\" (the runner\n" +
			"recognised and the counts parsed).\n\n" +
			"Exit codes: 0 replayed: the outcome matches the test log or the log is not conclusive, every claim\n" +
			"agrees; 2 usage error, or nothing of that name; 3 the document cannot be read or decoded; 4 the\n" +
			"outcome contradicts the test log, a signature did not verify or was not checked, a recorded\n" +
			"decision or header total disagrees with its recomputation, or a receipt's or attestation's claim\n" +
			"disagrees with its recomputation (or fails its verification); 7 the ledger is damaged.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringSliceFlag{Name: "hmac-key-file", Usage: "raw HMAC key for witness bundles, besides the keys registered in the ledger (repeatable)"},
			&cli.BoolFlag{Name: "all", Usage: "replay every witness bundle of the task, oldest first"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per document replayed"},
		},
		Action: func(c *cli.Context) error { return runReplay(c, e) },
	}
}

// replaySource says where a replayed document came from.
type replaySource struct {
	// Source is "ledger" or "file" (standard input included).
	Source string `json:"source"`
	// Seq is the ledger event, null for a file.
	Seq *int64 `json:"seq"`
	// File is the file as named ("-": standard input), null for an event.
	File *string `json:"file"`
}

// replayBundleJSON is the --json shape of a replayed witness bundle.
type replayBundleJSON struct {
	replaySource
	*replay.BundleReport
	// OtherBundles are the task's other bundles, when one was replayed
	// without --all.
	OtherBundles []taskBundleJSON `json:"other_bundles,omitempty"`
}

// taskBundleJSON is one of a task's other bundles.
type taskBundleJSON struct {
	Seq     int64  `json:"seq"`
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
}

// replayReceiptJSON is the --json shape of a replayed VRF receipt.
type replayReceiptJSON struct {
	replaySource
	*replay.ReceiptReport
	// ChainContext and Standing are null for a file.
	ChainContext *chainContextJSON `json:"chain_context"`
	Standing     *standingJSON     `json:"standing"`
}

// chainContextJSON is the receipt's chain around it, in the ledger now.
type chainContextJSON struct {
	// First is the id of the chain's first receipt, Length the chain's
	// receipts, Index the receipt's place in it (from 0).
	First  string `json:"first"`
	Length int    `json:"length"`
	Index  int    `json:"index"`
	// Receipts are up to 3 receipts each side of it, and it.
	Receipts []chainRowJSON `json:"receipts"`
}

// chainRowJSON is one receipt of a chain.
type chainRowJSON struct {
	Seq      int64  `json:"seq"`
	ID       string `json:"id"`
	Position int64  `json:"position"`
	Verdict  string `json:"verdict"`
	This     bool   `json:"this"`
}

// standingJSON is an agent's standing at a receipt: counted from the
// agent's receipts with sequence numbers up to the receipt's only.
type standingJSON struct {
	Agent    string `json:"agent"`
	AtSeq    int64  `json:"at_seq"`
	Receipts int64  `json:"receipts"`
	Pass     int64  `json:"pass"`
	Fail     int64  `json:"fail"`
	Partial  int64  `json:"partial"`
	Error    int64  `json:"error"`
	// PassRate is Pass / Receipts (0 with no receipts).
	PassRate float64 `json:"pass_rate"`
	// Chains are the agent's chains begun by then; ChainLength the
	// receipts of this receipt's chain up to it, it included.
	Chains      int64 `json:"chains"`
	ChainLength int64 `json:"chain_length"`
}

// replayAttestationJSON is the --json shape of a replayed attestation.
type replayAttestationJSON struct {
	replaySource
	*replay.AttestationReport
	// SpecSeq is the ledger event of the specification the attestation
	// was checked against, null when none was found.
	SpecSeq *int64 `json:"spec_seq"`
}

// replayer holds one replay command's settings.
type replayer struct {
	c        *cli.Context
	e        *env
	asJSON   bool
	all      bool
	color    bool
	fileKeys []keys.HMACKey
	ins      *inspect.Inspector
	l        *admit.Ledger // nil: a file replayed without a ledger
}

func runReplay(c *cli.Context, e *env) error {
	if c.NArg() != 1 {
		return usageErrorf("replay takes one TASK_UUID, SEQ, ID, PREFIX or FILE")
	}
	ref := c.Args().First()
	if ref == "" {
		return usageErrorf("replay: empty argument: want a TASK_UUID, SEQ, ID, PREFIX or FILE")
	}
	r := &replayer{c: c, e: e, asJSON: c.Bool("json"), all: c.Bool("all")}
	r.color = !r.asJSON && e.painter(e.stdout).on
	for _, p := range c.StringSlice("hmac-key-file") {
		k, err := keys.LoadHMACKey(p)
		if err != nil {
			return usageErrorf("--hmac-key-file %s: %v", p, pathless(err))
		}
		r.fileKeys = append(r.fileKeys, k)
	}
	ins, err := inspect.New()
	if err != nil {
		return exitf(exitInternal, "%w", err)
	}
	r.ins = ins

	isFile, err := fileArg(ref)
	if err != nil {
		return err
	}
	if isFile {
		if r.all {
			return usageErrorf("replay --all replays the witness bundles of a task in the ledger, not a file")
		}
		if c.IsSet("dir") || dirExists(c.String("dir")) {
			if r.l, err = openLedger(c, e, true); err != nil {
				return err
			}
			defer closeLedger(r.l)
		}
		data, err := loadInput(ref, e.stdin)
		if err != nil {
			return exitf(exitMalformed, "%s: cannot read: %v", inputName(ref), err)
		}
		name := ref
		return r.finish(r.document(replaySource{Source: "file", File: &name}, nil, data))
	}

	if r.l, err = openLedger(c, e, true); err != nil {
		return err
	}
	defer closeLedger(r.l)
	ev, err := resolveArg(e, r.l, ref)
	if errors.Is(err, ledger.ErrNotFound) {
		return exitf(exitUsage, "%s: no such file, and no such event or document in the ledger", ref)
	}
	if err != nil {
		return err
	}
	if r.all && ev.Kind != codec.KindRVWW {
		return usageErrorf("replay --all: %s is %s, not a witness bundle of a task", ref, kindName(ev.Kind))
	}
	if ev.Kind == codec.KindRVWW {
		return r.finish(r.task(ev))
	}
	return r.finish(r.event(ev, nil))
}

// finish turns the worst exit code into the command's error.
func (r *replayer) finish(code int, err error) error {
	if err != nil {
		return err
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// fileArg reports whether ref names a document outside the ledger: "-" or
// an existing file. A directory is a usage error.
func fileArg(ref string) (bool, error) {
	if ref == "-" {
		return true, nil
	}
	st, err := os.Stat(ref)
	if err != nil {
		return false, nil
	}
	if st.IsDir() {
		return false, usageErrorf("replay %s: a directory: replay takes one document", ref)
	}
	return true, nil
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

func inputName(ref string) string {
	if ref == "-" {
		return "standard input"
	}
	return ref
}

// kindName names a kind of document for people, with its article.
func kindName(k codec.Kind) string {
	switch k {
	case codec.KindVRF:
		return "a VRF receipt"
	case codec.KindAVIRAttestation:
		return "an AVIR attestation"
	case codec.KindAVIRSpec:
		return "an AVIR specification"
	case codec.KindRVWW:
		return "a witness bundle"
	case ledger.KindRollback:
		return "a rollback record"
	}
	return "a document of kind " + string(k)
}

// task replays a bundle of the ledger: with --all every bundle of its
// task, oldest first; else it, with the task's other bundles listed.
func (r *replayer) task(ev *ledger.Event) (int, error) {
	hist, err := r.l.TaskHistory(ev.Subject)
	if err != nil {
		return 0, staleErr(err)
	}
	var bundles []*ledger.Event
	for _, h := range hist {
		if h.Kind == codec.KindRVWW {
			bundles = append(bundles, h)
		}
	}
	if !r.all {
		var others []*ledger.Event
		for _, b := range bundles {
			if b.Seq != ev.Seq {
				others = append(others, b)
			}
		}
		return r.event(ev, others)
	}
	worst := exitOK
	for i, b := range bundles {
		if i > 0 && !r.asJSON {
			_, _ = fmt.Fprintln(r.e.stdout)
		}
		code, err := r.event(b, nil)
		if err != nil {
			return 0, err
		}
		worst = worse(worst, code)
	}
	return worst, nil
}

// event replays one event of the ledger, its document checked against
// its leaf and the signed tree first.
func (r *replayer) event(ev *ledger.Event, others []*ledger.Event) (int, error) {
	full, err := r.l.VerifiedEvent(ev.Seq, true)
	if err != nil {
		return 0, exitf(exitInternal, "%w", err)
	}
	seq := ev.Seq
	return r.document(replaySource{Source: "ledger", Seq: &seq}, full, full.Data, others...)
}

// document replays one document; ev is its event (nil for a file), others
// the other bundles of its task.
func (r *replayer) document(src replaySource, ev *ledger.Event, data []byte, others ...*ledger.Event) (int, error) {
	res := r.ins.Inspect(data, inspect.Options{})
	var name string
	if ev != nil {
		name = "event " + strconv.FormatInt(ev.Seq, 10)
	} else {
		name = inputName(*src.File)
	}
	if res.Status == inspect.Malformed {
		reason := "not a document"
		if len(res.Findings) > 0 {
			reason = res.Findings[0].String()
		}
		return 0, exitf(exitMalformed, "%s: %s", name, oneLine(reason))
	}
	if res.Bundle == nil && res.Receipt == nil && res.Attestation == nil {
		return 0, usageErrorf("replay %s: %s: nothing to replay (replay takes a witness bundle, a VRF receipt or an AVIR attestation)", name, kindName(res.Kind))
	}
	if !r.asJSON {
		if ev != nil {
			_, _ = fmt.Fprintf(r.e.stdout, "replay of ledger event %d\n", ev.Seq)
		} else {
			_, _ = fmt.Fprintf(r.e.stdout, "replay of %s: a document outside the ledger\n", name)
		}
	}
	switch {
	case res.Bundle != nil:
		return r.bundle(src, ev, res.Bundle, others)
	case res.Receipt != nil:
		return r.receipt(src, ev, res.Receipt)
	}
	return r.attestation(src, res.Attestation)
}

// text writes a report for people, after a blank line.
func (r *replayer) text(write func(io.Writer, replay.TextOptions) error) error {
	_, _ = fmt.Fprintln(r.e.stdout)
	return write(r.e.stdout, replay.TextOptions{Color: r.color})
}

// hmacKeys are the keys a bundle may be checked with, each named by its
// key id (registry.KeyID): the ledger's registered keys, then the
// --hmac-key-file keys (and their forms without a trailing newline).
func (r *replayer) hmacKeys() ([]rvww.Key, error) {
	var all []keys.HMACKey
	if r.l != nil {
		reg, err := r.l.Registry().HMACKeys()
		if err != nil {
			return nil, exitf(exitInternal, "%w", err)
		}
		all = append(all, reg...)
	}
	all = append(all, r.fileKeys...)
	var out []rvww.Key
	seen := map[string]bool{}
	for _, k := range all {
		for _, c := range k.Candidates() {
			id := registry.KeyID(c.Secret)
			if !seen[id] {
				seen[id] = true
				out = append(out, rvww.Key{Name: id, Secret: c.Secret})
			}
		}
	}
	return out, nil
}

// policies are the governance policies the ledger knows besides the
// defaults (none without a ledger).
func (r *replayer) policies() ([]governance.Policy, error) {
	if r.l == nil {
		return nil, nil
	}
	ps, err := r.l.Registry().Policies()
	if err != nil {
		return nil, exitf(exitInternal, "%w", err)
	}
	return ps, nil
}

func (r *replayer) bundle(src replaySource, ev *ledger.Event, b *rvww.Bundle, others []*ledger.Event) (int, error) {
	ks, err := r.hmacKeys()
	if err != nil {
		return 0, err
	}
	var opts replay.BundleOptions
	if b.Signed() {
		opts = bundleSignature(b, ev, ks, len(r.fileKeys) > 0)
	}
	pols, err := r.policies()
	if err != nil {
		return 0, err
	}
	if p, ok := inspect.PolicyByHash(b.Header.PolicyHash, pols); ok {
		opts.Policy = &p
	}
	rep, err := replay.Bundle(b, opts)
	if err != nil {
		return 0, exitf(exitInternal, "%w", err)
	}
	if rep.Signature.Status == replay.SignatureNotVerified {
		rep.Signature.Detail = fmt.Sprintf("none of the %d keys it could be checked with verifies it", len(ks))
		if len(ks) == 1 {
			rep.Signature.Detail = "the one key it could be checked with does not verify it"
		}
		if ev != nil && strings.HasPrefix(ev.Signer, "hmac:") {
			rep.Signature.Detail = fmt.Sprintf("key %s, which the ledger recorded, does not verify it", ev.Signer)
		}
	}
	problems := bundleProblems(rep)
	code := problemsExit(problems)
	var list []taskBundleJSON
	for _, o := range others {
		list = append(list, taskBundleJSON{Seq: o.Seq, ID: o.ID, Outcome: leafOutcome(o)})
	}
	if r.asJSON {
		return code, writeJSONLine(r.e.stdout, replayBundleJSON{replaySource: src, BundleReport: rep, OtherBundles: list})
	}
	if err := r.text(rep.WriteText); err != nil {
		return 0, err
	}
	if len(list) > 0 {
		w := r.e.stdout
		_, _ = fmt.Fprintf(w, "\nother witness bundles of task %s (%d; replay them all, oldest first, with --all)\n", ev.Subject, len(list))
		_, _ = fmt.Fprintf(w, "  %6s  %-9s  %s\n", "seq", "outcome", "id")
		for _, o := range list {
			note := ""
			if o.Seq > ev.Seq {
				note = "  (later)"
			}
			_, _ = fmt.Fprintf(w, "  %6d  %-9s  %s%s\n", o.Seq, o.Outcome, o.ID, note)
		}
	}
	r.writeResult(problems)
	return code, nil
}

// bundleSignature checks a signed bundle's HMAC. A bundle of the ledger is
// checked with the key whose id the ledger recorded as its signer; one
// the command has no secret for is not checked. A file is checked with
// every key known.
func bundleSignature(b *rvww.Bundle, ev *ledger.Event, ks []rvww.Key, givenKeys bool) replay.BundleOptions {
	if ev != nil && strings.HasPrefix(ev.Signer, "hmac:") {
		var match []rvww.Key
		for _, k := range ks {
			if k.Name == ev.Signer {
				match = append(match, k)
			}
		}
		if len(match) == 0 {
			why := fmt.Sprintf("key %s not registered", ev.Signer)
			if givenKeys {
				why += " (nor given with --hmac-key-file)"
			}
			return replay.BundleOptions{KeyID: ev.Signer, NotChecked: why}
		}
		ks = match
	}
	if len(ks) == 0 {
		return replay.BundleOptions{NotChecked: "no HMAC key registered in a ledger or given with --hmac-key-file"}
	}
	_ = b.Verify(ks) // its findings are the report's: header totals, signature
	if id := b.VerifiedKey(); id != "" {
		return replay.BundleOptions{SignatureVerified: true, KeyID: id}
	}
	return replay.BundleOptions{}
}

// bundleProblems are what makes a bundle replay exit 4: the outcome
// contradicts the test log, the signature is not verified (or not
// checked), a recorded decision disagrees with the policy's or a header
// total with the trace's.
func bundleProblems(r *replay.BundleReport) []string {
	var out []string
	if r.OutcomeCheck == replay.Contradicts {
		out = append(out, "the claimed outcome contradicts the test log")
	}
	switch r.Signature.Status {
	case replay.SignatureNotVerified:
		out = append(out, "the signature did not verify")
	case replay.SignatureNotChecked:
		out = append(out, "the signature was not checked")
	}
	if len(r.GovernanceFindings) > 0 {
		out = append(out, "the recorded governance disagrees with the policy")
	}
	if !r.Totals.Agree {
		out = append(out, "the header's totals disagree with the trace")
	}
	return out
}

// documentProblems are what makes a receipt or attestation replay exit
// 4: findings of its verification, a signature that did not verify, a
// claim that disagrees with its recomputation.
func documentProblems(valid bool, findings int, sig replay.Signature, claims []replay.Claim) []string {
	var out []string
	if !valid {
		out = append(out, "its verification found "+plural(findings, "problem", "problems"))
	}
	if sig.Status == replay.SignatureNotVerified {
		out = append(out, "the signature did not verify")
	}
	n := 0
	for _, c := range claims {
		if c.Agrees != nil && !*c.Agrees {
			n++
		}
	}
	if n > 0 {
		out = append(out, plural(n, "claim disagrees", "claims disagree")+" with the recomputation")
	}
	return out
}

// problemsExit is the exit code of a replay with these problems.
func problemsExit(problems []string) int {
	if len(problems) > 0 {
		return exitInvalid
	}
	return exitOK
}

// writeResult ends a replay's text: a pass, or what stops it being one.
func (r *replayer) writeResult(problems []string) {
	p := r.e.painter(r.e.stdout)
	res := p.paint(toneGood, "pass")
	if len(problems) > 0 {
		res = p.paint(toneBad, "NOT A PASS") + ": " + strings.Join(problems, "; ")
	}
	_, _ = fmt.Fprintf(r.e.stdout, "\nresult: %s\n", res)
}

// leafOutcome is a bundle event's outcome, from its leaf.
func leafOutcome(ev *ledger.Event) string {
	var a attrs.Bundle
	if err := a.Decode(ev.Attrs); err != nil {
		return "?"
	}
	return a.Outcome.String()
}

// leafVerdict is a receipt event's verdict, from its leaf.
func leafVerdict(ev *ledger.Event) string {
	var a attrs.Receipt
	if err := a.Decode(ev.Attrs); err != nil {
		return "?"
	}
	return a.Verdict
}

func (r *replayer) receipt(src replaySource, ev *ledger.Event, rc *vrf.Receipt) (int, error) {
	rep, err := replay.Receipt(rc)
	if err != nil {
		return 0, exitf(exitInternal, "%w", err)
	}
	out := replayReceiptJSON{replaySource: src, ReceiptReport: rep}
	if ev != nil {
		if out.ChainContext, out.Standing, err = r.chainAndStanding(ev, rep); err != nil {
			return 0, err
		}
	}
	problems := documentProblems(rep.Valid, len(rep.Findings), rep.Signature, rep.Claims)
	code := problemsExit(problems)
	if r.asJSON {
		return code, writeJSONLine(r.e.stdout, out)
	}
	if err := r.text(rep.WriteText); err != nil {
		return 0, err
	}
	writeChainContext(r.e.stdout, out.ChainContext)
	writeStanding(r.e.stdout, out.Standing, ev)
	r.writeResult(problems)
	return code, nil
}

// chainAndStanding reads a receipt's chain around it, checks the link it
// states against the chain, and computes its agent's standing at it.
func (r *replayer) chainAndStanding(ev *ledger.Event, rep *replay.ReceiptReport) (*chainContextJSON, *standingJSON, error) {
	chain, err := r.l.Chain(ev.ID)
	if err != nil {
		return nil, nil, staleErr(err)
	}
	at := -1
	for i, c := range chain {
		if c.Seq == ev.Seq {
			at = i
		}
	}
	if at < 0 {
		return nil, nil, exitf(exitDamaged, "%w: receipt %s (event %d) is not in the chain the ledger returns for it", ledger.ErrCorrupt, ev.ID, ev.Seq)
	}
	cc := &chainContextJSON{First: chain[0].ID, Length: len(chain), Index: at, Receipts: []chainRowJSON{}}
	for i := max(0, at-chainContext); i < min(len(chain), at+chainContext+1); i++ {
		c := chain[i]
		cc.Receipts = append(cc.Receipts, chainRowJSON{Seq: c.Seq, ID: c.ID, Position: c.Position, Verdict: leafVerdict(c), This: i == at})
	}
	// The link the receipt states is the chain's, as the ledger admitted it.
	link := rep.Chain
	switch {
	case at == 0:
		rep.Chain.Checked = link.PreviousReceipt == "" && (link.Position == nil || *link.Position == 0)
	default:
		prev := chain[at-1]
		rep.Chain.Checked = link.PreviousReceipt == prev.ID && link.Position != nil && *link.Position == prev.Position+1
	}

	agent := ev.Subject
	if agent == "" {
		return cc, nil, nil
	}
	st := &standingJSON{Agent: agent, AtSeq: ev.Seq, ChainLength: int64(at + 1)}
	s := r.l.Snapshot()
	defer func() { _ = s.Close() }() // a read snapshot: nothing to lose
	sel := index.Selection{Agent: agent, Kinds: []codec.Kind{codec.KindVRF}}
	err = index.Events(s, sel, 0, ev.Seq+1, func(seq int64) (bool, error) {
		x, err := s.Event(seq, false)
		if err != nil {
			return false, err
		}
		if x.Subject != agent {
			return true, nil // a receipt the agent signed for another
		}
		var a attrs.Receipt
		if err := a.Decode(x.Attrs); err != nil {
			return false, fmt.Errorf("leaf of event %d: %w", x.Seq, err)
		}
		st.Receipts++
		switch a.Verdict {
		case "pass":
			st.Pass++
		case "fail":
			st.Fail++
		case "partial":
			st.Partial++
		default:
			st.Error++
		}
		if !hasLink(x, proof.RelPreviousReceipt) {
			st.Chains++
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, staleErr(err)
	}
	if st.Receipts > 0 {
		st.PassRate = float64(st.Pass) / float64(st.Receipts)
	}
	return cc, st, nil
}

func hasLink(ev *ledger.Event, rel string) bool {
	for _, l := range ev.Links {
		if l.Rel == rel {
			return true
		}
	}
	return false
}

func writeChainContext(w io.Writer, cc *chainContextJSON) {
	if cc == nil {
		return
	}
	_, _ = fmt.Fprintf(w, "\nchain in the ledger: %s, this receipt is number %d of %d\n", plural(cc.Length, "receipt", "receipts"), cc.Index+1, cc.Length)
	if before := cc.Index - chainContext; before > 0 {
		_, _ = fmt.Fprintf(w, "  (%s before)\n", plural(before, "receipt", "receipts"))
	}
	_, _ = fmt.Fprintf(w, "     %6s  %8s  %-7s  %s\n", "seq", "position", "verdict", "id")
	for _, c := range cc.Receipts {
		mark := "   "
		if c.This {
			mark = "-> "
		}
		_, _ = fmt.Fprintf(w, "  %s%6d  %8d  %-7s  %s\n", mark, c.Seq, c.Position, c.Verdict, c.ID)
	}
	if after := cc.Length - 1 - cc.Index - chainContext; after > 0 {
		_, _ = fmt.Fprintf(w, "  (%s after)\n", plural(after, "receipt", "receipts"))
	}
}

func writeStanding(w io.Writer, st *standingJSON, ev *ledger.Event) {
	if ev == nil {
		_, _ = fmt.Fprintf(w, "\nchain and standing: not shown (a document outside the ledger)\n")
		return
	}
	if st == nil {
		_, _ = fmt.Fprintf(w, "\nstanding: the receipt speaks for no agent\n")
		return
	}
	_, _ = fmt.Fprintf(w, "\nstanding of agent %s at event %d (its receipts up to this one)\n", st.Agent, st.AtSeq)
	_, _ = fmt.Fprintf(w, "  %-17s %d: %d pass, %d fail, %d partial, %d error\n", "receipts", st.Receipts, st.Pass, st.Fail, st.Partial, st.Error)
	_, _ = fmt.Fprintf(w, "  %-17s %s (%d of %d)\n", "pass rate", percent(st.PassRate), st.Pass, st.Receipts)
	_, _ = fmt.Fprintf(w, "  %-17s %d begun; this one %s long so far\n", "chains", st.Chains, plural(int(st.ChainLength), "receipt", "receipts"))
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func (r *replayer) attestation(src replaySource, a *avir.Attestation) (int, error) {
	var opts avir.VerifyOptions
	var specSeq *int64
	if h := a.SpecHash(); h != "" && r.l != nil {
		sev, err := r.l.LookupKind(codec.KindAVIRSpec, h)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
		case err != nil:
			return 0, staleErr(err)
		default:
			full, err := r.l.VerifiedEvent(sev.Seq, true)
			if err != nil {
				return 0, exitf(exitInternal, "%w", err)
			}
			spec, err := r.ins.ParseSpec(full.Data)
			if err != nil {
				return 0, exitf(exitDamaged, "%w: the specification in event %d does not parse: %v", ledger.ErrCorrupt, sev.Seq, err)
			}
			opts.Spec = spec
			seq := sev.Seq
			specSeq = &seq
		}
	}
	rep, err := replay.Attestation(a, opts)
	if err != nil {
		return 0, exitf(exitInternal, "%w", err)
	}
	problems := documentProblems(rep.Valid, len(rep.Findings), rep.Signature, rep.Claims)
	code := problemsExit(problems)
	if r.asJSON {
		return code, writeJSONLine(r.e.stdout, replayAttestationJSON{replaySource: src, AttestationReport: rep, SpecSeq: specSeq})
	}
	if specSeq != nil {
		_, _ = fmt.Fprintf(r.e.stdout, "checked against the specification in ledger event %d\n", *specSeq)
	} else if r.l != nil {
		_, _ = fmt.Fprintf(r.e.stdout, "no specification checked: the ledger holds none with its spec_hash\n")
	} else {
		_, _ = fmt.Fprintf(r.e.stdout, "no specification checked: no ledger to find it in\n")
	}
	if err := r.text(rep.WriteText); err != nil {
		return 0, err
	}
	r.writeResult(problems)
	return code, nil
}

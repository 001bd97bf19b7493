package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/index"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/admit"
)

// What --agent, --subject and --task mean, for the usage texts.
const (
	agentMeaning = "only events agent ID acted in: a receipt's agent (its agent_id, else its chain's agent, else its signer) " +
		"and its signer (the verifier); an attestation's signer (the replicator's key); a bundle's or rollback's signer " +
		"(the harness's HMAC key id hmac:…, or ed25519:…)"
	subjectMeaning = "only events about S (their subject): a receipt's agent, an attestation's or specification's system " +
		"(\"<name> v<version>\"), a bundle's or rollback's task UUID"
	taskMeaning = "only the witness bundles and rollback records of task T (a UUID)"
)

// selectionFlags are log's --agent, --subject and --task.
func selectionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "agent", Usage: agentMeaning},
		&cli.StringFlag{Name: "subject", Usage: subjectMeaning},
		&cli.StringFlag{Name: "task", Usage: taskMeaning},
	}
}

// selection reads --agent, --subject and --task; nil when none is given.
func selection(c *cli.Context) (*index.Selection, error) {
	sel := index.Selection{Agent: c.String("agent"), Subject: c.String("subject")}
	for _, f := range []string{"agent", "subject", "task"} {
		if c.IsSet(f) && c.String(f) == "" {
			return nil, usageErrorf("--%s: empty", f)
		}
	}
	if t := c.String("task"); t != "" {
		task, ok := taskUUID(t)
		if !ok {
			return nil, usageErrorf("--task %.60q: want a task UUID (8-4-4-4-12 hex digits)", t)
		}
		sel.Task = task
	}
	if sel.Agent == "" && sel.Subject == "" && sel.Task == "" {
		return nil, nil
	}
	return &sel, nil
}

// taskUUID normalizes a task UUID to lower case.
func taskUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		hexDigit := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		if (i == 8 || i == 13 || i == 18 || i == 23) != (c == '-') || c != '-' && !hexDigit {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// staleErr maps ledger.ErrStale to its advice.
func staleErr(err error) error {
	if errors.Is(err, ledger.ErrStale) {
		return exitf(exitInternal, "%v: run ledger rebuild", ledger.ErrStale)
	}
	return exitf(exitInternal, "%w", err)
}

// resolveArg resolves get's and prove's argument (admit.Resolve): a
// sequence number, a document id, a task UUID (its latest bundle) or a
// unique prefix of at least 8 characters of a document id or digest. An
// ambiguous prefix is reported on stderr with up to 10 candidates (exit
// 2), a short one is a usage error; not found is returned as
// ledger.ErrNotFound for the command to word.
func resolveArg(e *env, l *admit.Ledger, ref string) (*ledger.Event, error) {
	ev, err := l.Resolve(ref)
	var ae *admit.AmbiguousError
	switch {
	case err == nil, errors.Is(err, ledger.ErrNotFound):
		return ev, err
	case errors.As(err, &ae):
		more := ""
		if ae.More {
			more = " or more"
		}
		_, _ = fmt.Fprintf(e.stderr, "ledger: %s: ambiguous prefix: it names %d%s documents; give more of it:\n", ref, len(ae.Candidates), more)
		for _, m := range ae.Candidates {
			_, _ = fmt.Fprintf(e.stderr, "  %6d  %-16s  %s  sha256:%s\n", m.Seq, m.Kind, m.ID, hex.EncodeToString(m.Digest[:]))
		}
		if ae.More {
			_, _ = fmt.Fprintln(e.stderr, "  …")
		}
		return nil, &exitError{code: exitUsage}
	case errors.Is(err, ledger.ErrShortPrefix):
		return nil, usageErrorf("%v (a prefix of a document id or digest needs at least %d characters)", err, ledger.MinPrefix)
	}
	return nil, staleErr(err)
}

// submitter names who runs the command, for the refusal journal.
func submitter() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "uid " + strconv.Itoa(os.Getuid())
	}
	return "cli:" + name
}

// chainEventJSON is the --json shape of a receipt of `chain --agent`: the
// event and the id of its chain's first receipt.
type chainEventJSON struct {
	Chain string `json:"chain"`
	eventJSON
}

// agentChains prints every receipt chain of an agent (chain --agent).
func agentChains(c *cli.Context, e *env, l *admit.Ledger, agent string) error {
	asJSON := c.Bool("json")
	err := l.AgentChains(c.Context, agent, func(ce admit.ChainEvent) (bool, error) {
		if asJSON {
			return true, writeJSONLine(e.stdout, chainEventJSON{Chain: ce.First, eventJSON: toEventJSON(ce.Event)})
		}
		if ce.ID == ce.First {
			_, _ = fmt.Fprintf(e.stdout, "chain %s\n", ce.First)
		}
		writeChainLine(e, ce.Event)
		return true, nil
	})
	if errors.Is(err, ledger.ErrNotFound) {
		return exitf(exitUsage, "agent %q: no receipt chain in the ledger", agent)
	}
	if err != nil {
		return staleErr(err)
	}
	return nil
}

func writeChainLine(e *env, ev *ledger.Event) {
	pos := ""
	if ev.Position >= 0 {
		pos = fmt.Sprintf("  position %d", ev.Position)
	}
	_, _ = fmt.Fprintf(e.stdout, "%6d  %s  %s  %s%s\n", ev.Seq, formatTime(ev.Time), ev.Kind, ev.ID, pos)
}

// refusalJSON is the --json shape of a refusal journal record.
type refusalJSON struct {
	N         int64  `json:"n"`
	Time      string `json:"time"`
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	Digest    string `json:"digest"`
	Status    string `json:"status"`
	Class     string `json:"class"`
	Reason    string `json:"reason"`
	Detail    string `json:"detail"`
	Agent     string `json:"agent"`
	Submitter string `json:"submitter"`
	Event     *int64 `json:"event"`
}

func toRefusalJSON(r *ledger.RefusalRecord) refusalJSON {
	j := refusalJSON{N: r.N, Time: formatTime(r.Time), Kind: string(r.Kind), ID: r.ID, Digest: "sha256:" + hex.EncodeToString(r.Digest[:]),
		Status: string(r.Status), Class: r.Class, Reason: r.Reason, Detail: r.Detail, Agent: r.Agent, Submitter: r.Submitter}
	if r.Event >= 0 {
		ev := r.Event
		j.Event = &ev
	}
	return j
}

func refusalsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "refusals",
		Usage: "list the refusal journal: every refused append (replay, conflict, rejected, stale), oldest first",
		Description: "The refusal journal records each refused append: when (its arrival), the document's kind, id and\n" +
			"digest, the status (replay, conflict, rejected, stale) and reason code (replay, conflict,\n" +
			"malformed, invalid, trust, link, stale, future), the reason's text, the agent the document speaks for and who submitted it\n" +
			"(cli:<user> for this command line). The agent is recorded only for documents that verified and\n" +
			"were trusted (replays, conflicts, stale, chain and task refusals): a refused document's unverified claim\n" +
			"is not attributed to anyone. The journal is not evidence: it is not in the Merkle log, the audit\n" +
			"does not check it and rebuild leaves it alone. It keeps the newest records only (--keep, default\n" +
			"100,000); per-agent counts by reason outlive the trimming (ledger reputation AGENT shows them).\n\n" +
			"Text: one line per record: n, time, reason, kind, id, agent, submitter, reason text.\n" +
			"--json: one object per record per line: {\"n\", \"time\", \"kind\", \"id\", \"digest\", \"status\",\n" +
			"\"class\", \"reason\", \"detail\", \"agent\", \"submitter\", \"event\" (the event a replay or conflict\n" +
			"collided with, else null)}.",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "agent", Usage: "only refusals of documents of agent ID (as the refusal journal names it: a receipt's agent, another document's signer)"},
			sinceFlag("refusals"),
			untilFlag("refusals"),
			&cli.StringFlag{Name: "reason", Usage: "only refusals for reason R: " + strings.Join(ledger.RefusalReasons, ", ")},
			&cli.IntFlag{Name: "limit", Usage: "at most N records (0: all)"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per record per line"},
			&cli.Int64Flag{Name: "keep", Usage: fmt.Sprintf("set how many records the journal keeps (a ledger setting; default %d; 0 keeps only the counts) and exit; the next refusal trims the journal", ledger.DefaultRefusalLimit)},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("refusals takes no arguments")
			}
			if c.IsSet("keep") {
				return setRefusalLimit(c, e)
			}
			since, until, err := parseWindow(c, time.Now())
			if err != nil {
				return err
			}
			q := ledger.RefusalQuery{Agent: c.String("agent"), Reason: c.String("reason"), Since: since, Until: until, Limit: c.Int("limit")}
			if err := q.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			asJSON := c.Bool("json")
			err = l.Refusals(c.Context, q, func(r *ledger.RefusalRecord) (bool, error) {
				if asJSON {
					return true, writeJSONLine(e.stdout, toRefusalJSON(r))
				}
				dash := func(s string) string {
					if s == "" {
						return "-"
					}
					return s
				}
				_, _ = fmt.Fprintf(e.stdout, "%6d  %s  %-9s  %-16s  %s  %s  %s  %s\n", r.N, r.Time.UTC().Format("2006-01-02T15:04:05Z"), r.Reason,
					dash(string(r.Kind)), dash(r.ID), dash(r.Agent), dash(r.Submitter), strings.ReplaceAll(r.Detail, "\n", " "))
				return true, nil
			})
			if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			return nil
		},
	}
}

func setRefusalLimit(c *cli.Context, e *env) error {
	for _, f := range []string{"agent", "since", "until", "reason", "limit", "json"} {
		if c.IsSet(f) {
			return usageErrorf("--keep sets the journal's bound and lists nothing: it takes no --%s", f)
		}
	}
	n := c.Int64("keep")
	if n < 0 || n > ledger.MaxRefusalLimit {
		return usageErrorf("--keep %d: want 0 to %d", n, ledger.MaxRefusalLimit)
	}
	l, err := openLedger(c, e, false)
	if err != nil {
		return err
	}
	defer closeLedger(l)
	was := l.RefusalLimit()
	if err := l.SetRefusalLimit(n); err != nil {
		return exitf(exitInternal, "%w", err)
	}
	_, _ = fmt.Fprintf(e.stdout, "the refusal journal keeps the newest %s records (was %s)\n", thousands(n), thousands(was))
	return nil
}

// refusalCounts is the --json shape of an agent's refusal counts, from
// the refusal journal: replay and conflict always, other reasons when
// counted.
type refusalCounts map[string]int64

// journalCounts reads an agent's refusal counts.
func journalCounts(snap *ledger.Snapshot, agent string) (refusalCounts, error) {
	m, err := snap.RefusalCounts(agent)
	if err != nil {
		return nil, err
	}
	out := refusalCounts{ledger.ReasonReplay: 0, ledger.ReasonConflict: 0}
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// String writes the counts for a reputation page: "3 replays, 1
// conflict, 2 link".
func (rc refusalCounts) String() string {
	plural := func(n int64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return thousands(n) + " " + many
	}
	parts := []string{plural(rc[ledger.ReasonReplay], "replay", "replays"), plural(rc[ledger.ReasonConflict], "conflict", "conflicts")}
	var others []string
	for r, n := range rc {
		if r != ledger.ReasonReplay && r != ledger.ReasonConflict && n > 0 {
			others = append(others, r)
		}
	}
	sort.Strings(others)
	for _, r := range others {
		parts = append(parts, thousands(rc[r])+" "+r)
	}
	return strings.Join(parts, ", ")
}

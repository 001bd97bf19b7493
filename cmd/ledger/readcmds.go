package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/ledger"
)

// eventJSON is the --json shape of an event.
type eventJSON struct {
	Seq        int64           `json:"seq"`
	AppendedAt string          `json:"appended_at"`
	Kind       string          `json:"kind"`
	ID         string          `json:"id"`
	Subject    string          `json:"subject,omitempty"`
	Signer     string          `json:"signer,omitempty"`
	Time       string          `json:"time,omitempty"`
	Position   *int64          `json:"position,omitempty"`
	Links      []linkJSON      `json:"links,omitempty"`
	Digest     string          `json:"digest"`
	Size       int64           `json:"size"`
	Attrs      json.RawMessage `json:"attrs,omitempty"`
}

type linkJSON struct {
	Rel string `json:"rel"`
	ID  string `json:"id"`
	Seq int64  `json:"seq"`
}

func toEventJSON(ev *ledger.Event) eventJSON {
	j := eventJSON{Seq: ev.Seq, AppendedAt: formatTime(ev.AppendedAt), Kind: string(ev.Kind), ID: ev.ID, Subject: ev.Subject,
		Signer: ev.Signer, Time: formatTime(ev.Time), Digest: "sha256:" + hex.EncodeToString(ev.Digest[:]), Size: ev.Size}
	if ev.Position >= 0 {
		p := ev.Position
		j.Position = &p
	}
	for _, l := range ev.Links {
		j.Links = append(j.Links, linkJSON{Rel: l.Rel, ID: l.ID, Seq: l.Seq})
	}
	if ev.Attrs.Len() > 0 {
		j.Attrs = json.RawMessage(canonicalJSON(ev.Attrs))
	}
	return j
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func writeEventLine(w io.Writer, ev *ledger.Event) {
	subject := ev.Subject
	if subject == "" {
		subject = "-"
	}
	_, _ = fmt.Fprintf(w, "%6d  %s  %-16s  %s  %s\n", ev.Seq, ev.AppendedAt.UTC().Format("2006-01-02T15:04:05Z"), ev.Kind, ev.ID, subject)
}

func getCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "show one event, or with --raw write its original document bytes",
		ArgsUsage: "SEQ|ID|TASK_UUID|PREFIX",
		Description: "The event is named by its sequence number, its document id, a task UUID (the task's latest witness\n" +
			"bundle) or a prefix of at least 8 characters of a document id or digest (sha256:… or bare hex) that\n" +
			"names one document; an ambiguous prefix lists up to 10 candidates on stderr (exit 2).",
		Flags: []cli.Flag{
			dirFlag(),
			&cli.BoolFlag{Name: "raw", Usage: "write the document's original bytes, byte for byte"},
			&cli.BoolFlag{Name: "json", Usage: "print the event as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("get takes one SEQ or ID")
			}
			if c.Bool("raw") && c.Bool("json") {
				return usageErrorf("get: --raw writes the document's bytes, --json the event as JSON: not both")
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			ev, err := resolveArg(e, l, c.Args().First())
			if errors.Is(err, ledger.ErrNotFound) {
				return exitf(exitUsage, "%s: no such event or document in the ledger", c.Args().First())
			}
			if err != nil {
				return err
			}
			if c.Bool("raw") {
				// The document, checked against its leaf, and the leaf
				// proven in the signed tree: altered bytes are an error.
				full, err := l.VerifiedEvent(ev.Seq, true)
				if err != nil {
					return exitf(exitInternal, "%w", err)
				}
				_, err = e.stdout.Write(full.Data)
				return err
			}
			if c.Bool("json") {
				return writeJSONLine(e.stdout, toEventJSON(ev))
			}
			j := toEventJSON(ev)
			row := func(label, value string) {
				if value != "" {
					_, _ = fmt.Fprintf(e.stdout, "%-12s %s\n", label, value)
				}
			}
			row("seq", fmt.Sprint(j.Seq))
			row("appended", j.AppendedAt)
			row("kind", j.Kind)
			row("id", j.ID)
			row("subject", j.Subject)
			row("signer", j.Signer)
			row("time", j.Time)
			if j.Position != nil {
				row("position", fmt.Sprint(*j.Position))
			}
			for _, lk := range j.Links {
				row("link", fmt.Sprintf("%s → event %d (%s)", lk.Rel, lk.Seq, lk.ID))
			}
			row("digest", j.Digest)
			row("size", fmt.Sprintf("%d bytes", j.Size))
			if j.Attrs != nil {
				row("attrs", string(j.Attrs))
			}
			return nil
		},
	}
}

func logCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "list events in log order",
		Description: "Filters combine. --agent, --subject and --task read the investigation indexes (x/agent-event/,\n" +
			"x/subject-event/), not the whole log: \"everything agent X did\" is `ledger log --agent X`.\n" +
			"An agent acts in a receipt as its agent (agent_id, else the chain's agent, else its signer) or as its\n" +
			"signer (the verifier); in an attestation as its signer (the replicator); in a bundle or rollback as\n" +
			"its signer (the harness's key: bundles name no agent, select them by --task). A subject is what an\n" +
			"event is about: a receipt's agent, an attestation's or specification's system, a bundle's task.\n" +
			"Text: seq, appended_at, kind, id, subject. --json: one object per event per line (as get --json).\n" +
			"--summary prints counts instead: the events selected (by kind) and the refusal journal's records in\n" +
			"the window (of --kind, and for --agent of that agent as the journal names it), by reason code, and\n" +
			"how many were stale (freshness rules); --json: one object {\"since\", \"until\", \"events\",\n" +
			"\"by_kind\", \"refused\", \"refused_by_reason\", \"stale\"}.",
		Flags: append([]cli.Flag{
			dirFlag(),
			&cli.StringFlag{Name: "since", Usage: "only events appended at or after T (date, RFC 3339, or 24h/7d/2w back)"},
			&cli.StringFlag{Name: "until", Usage: "only events appended before T"},
			&cli.StringFlag{Name: "kind", Usage: "only events of kind K (vrf, avir-attestation, avir-spec, rvww, rollback)"},
			&cli.IntFlag{Name: "limit", Usage: "at most N events (0: all)"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per event per line"},
			&cli.BoolFlag{Name: "summary", Usage: "print only counts: the events selected in the window by kind, and the refusal journal's records in it by reason, stale ones among them (--json: one object)"},
		}, selectionFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("log takes no arguments")
			}
			since, until, err := parseWindow(c, time.Now())
			if err != nil {
				return err
			}
			q := ledger.Query{Since: since, Until: until, Limit: c.Int("limit")}
			if k := c.String("kind"); k != "" {
				if q.Kind, err = ledger.ParseKind(k); err != nil {
					return usageErrorf("--kind: %v", err)
				}
			}
			if err := q.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			sel, err := selection(c)
			if err != nil {
				return err
			}
			if sel != nil {
				q.Select = sel.Selector()
			}
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			if c.Bool("summary") {
				return logSummary(c, e, l, q)
			}
			err = l.Log(c.Context, q, func(ev *ledger.Event) (bool, error) {
				if c.Bool("json") {
					return true, writeJSONLine(e.stdout, toEventJSON(ev))
				}
				writeEventLine(e.stdout, ev)
				return true, nil
			})
			if err != nil {
				return staleErr(err)
			}
			return nil
		},
	}
}

func chainCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "chain",
		Usage:     "print a receipt chain, or a task's history, oldest first; with --agent, every receipt chain of an agent",
		ArgsUsage: "RECEIPT_ID | TASK_UUID | BUNDLE_ID | --agent ID",
		Description: "With --agent: every receipt chain whose receipts speak for the agent, each from its first receipt\n" +
			"to its latest, the chains in the order their first receipts were appended. Text: a line \"chain <first\n" +
			"receipt id>\" before each chain's receipts; --json: one object per receipt per line (as get --json)\n" +
			"with \"chain\": the id of its chain's first receipt.",
		Flags: []cli.Flag{dirFlag(), &cli.BoolFlag{Name: "json", Usage: "one JSON object per event per line"},
			&cli.StringFlag{Name: "agent", Usage: "print every receipt chain of agent ID instead"}},
		Action: func(c *cli.Context) error {
			if c.IsSet("agent") {
				if c.NArg() != 0 || c.String("agent") == "" {
					return usageErrorf("chain --agent takes an agent id and no other argument")
				}
				l, err := openLedger(c, e, true)
				if err != nil {
					return err
				}
				defer closeLedger(l)
				return agentChains(c, e, l, c.String("agent"))
			}
			if c.NArg() != 1 {
				return usageErrorf("chain takes one receipt id, task id or bundle id")
			}
			ref := c.Args().First()
			l, err := openLedger(c, e, true)
			if err != nil {
				return err
			}
			defer closeLedger(l)
			events, err := l.Chain(ref)
			if errors.Is(err, ledger.ErrNotFound) {
				task := ref
				if ev, err := l.LookupKind(codec.KindRVWW, ref); err == nil {
					task = ev.Subject
				}
				events, err = l.TaskHistory(task)
				if err != nil {
					return exitf(exitInternal, "%w", err)
				}
				// Oldest first in task time; log order breaks ties.
				sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
			} else if err != nil {
				return exitf(exitInternal, "%w", err)
			}
			if len(events) == 0 {
				return exitf(exitUsage, "%s: no receipt chain or task history with this id", ref)
			}
			for _, ev := range events {
				if c.Bool("json") {
					if err := writeJSONLine(e.stdout, toEventJSON(ev)); err != nil {
						return err
					}
					continue
				}
				writeChainLine(e, ev)
			}
			return nil
		},
	}
}

func canonicalJSON(v canonjson.Value) []byte { return canonjson.Canonical(v) }

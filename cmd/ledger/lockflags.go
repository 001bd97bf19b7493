package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/ledger"
)

// exitBusy: another process held the ledger's lock for longer than --wait.
const exitBusy = 8

// defaultWait is how long a command waits for another process's lock.
const defaultWait = 5 * time.Second

const waitUsage = "wait up to DURATION for another process holding the ledger (a writer; 0: fail at once with exit 8)"

// waitGlobalFlag is --wait before the command (`ledger --wait 30s append …`),
// also set by LEDGER_WAIT.
func waitGlobalFlag() cli.Flag {
	return &cli.DurationFlag{Name: "wait", Usage: waitUsage, EnvVars: []string{"LEDGER_WAIT"}, Value: defaultWait}
}

// addWaitFlags gives every command that opens a ledger (it has --dir) its
// own --wait, so that the flag may follow the command like --dir does.
func addWaitFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		addWaitFlags(cmd.Subcommands)
		has := false
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				has = has || n == "dir"
			}
		}
		if has {
			cmd.Flags = append(cmd.Flags, &cli.DurationFlag{Name: "wait", Usage: waitUsage + "; also LEDGER_WAIT", Value: defaultWait})
		}
	}
}

// waitOf is the command's --wait: given after the command, else before it
// or in LEDGER_WAIT, else 5s.
func waitOf(c *cli.Context) (time.Duration, error) {
	lineage := c.Lineage()
	d := defaultWait
	for _, x := range lineage {
		if x.IsSet("wait") {
			d = x.Duration("wait")
			break
		}
	}
	if d < 0 {
		return 0, usageErrorf("--wait %s: must not be negative", d)
	}
	return d, nil
}

// noteReadCopy says on stderr, in one line, that the command reads a read
// copy behind a writer's appends.
func noteReadCopy(e *env, l *ledger.Ledger) {
	src := l.Source()
	if !src.Behind() {
		return
	}
	who := "a writer"
	if w := src.Writer; w != nil {
		who = fmt.Sprintf("a writer (pid %d: %s)", w.PID, strings.TrimSpace(w.Command))
	}
	_, _ = fmt.Fprintf(e.stderr, "ledger: reading the ledger as of size %d (%d signed): %s holds it\n", src.Size, src.Latest, who)
}

package main

import (
	"os"
	"strings"
	"testing"
)

// cliDocPath is docs/CLI.md, relative to this package.
const cliDocPath = "../../docs/CLI.md"

// TestCLIDoc: docs/CLI.md is what cliDoc generates from the command
// definitions; -update rewrites it.
func TestCLIDoc(t *testing.T) {
	got := cliDoc(newApp(&env{}))
	if *update {
		if err := os.WriteFile(cliDocPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./cmd/ledger -run TestCLIDoc -update)", err)
	}
	if string(want) != got {
		t.Errorf("docs/CLI.md is stale: regenerate it with go test ./cmd/ledger -run TestCLIDoc -update")
	}
	// What the page must cover: every command, flag and environment
	// variable, every exit code.
	for _, dc := range allCommands(newApp(&env{})) {
		if !strings.Contains(got, "\n### ledger "+dc.path+"\n") {
			t.Errorf("no section for ledger %s", dc.path)
		}
		for _, f := range dc.cmd.Flags {
			name := "--" + f.Names()[0]
			if len(f.Names()[0]) == 1 {
				name = "-" + f.Names()[0]
			}
			if !strings.Contains(got, "`"+name+"`") && !strings.Contains(got, "`"+name+",") {
				t.Errorf("ledger %s: flag %s not documented", dc.path, name)
			}
		}
	}
	for _, v := range []string{"LEDGER_DIR", envVerbose, envNoProgress, "NO_COLOR"} {
		if !strings.Contains(got, "| `"+v+"` |") {
			t.Errorf("environment variable %s not documented", v)
		}
	}
	for _, c := range exitCodes {
		if !strings.Contains(got, "\n| "+string(rune('0'+c.code))+" | ") {
			t.Errorf("exit code %d not documented", c.code)
		}
	}
}

// TestGlobalFlagsHaveEnv: every global flag but --version (an action, not
// a setting) has a LEDGER_* environment variable.
func TestGlobalFlagsHaveEnv(t *testing.T) {
	for _, f := range globalFlags() {
		name := f.Names()[0]
		if name == "version" {
			continue
		}
		d, ok := f.(interface{ GetEnvVars() []string })
		if !ok || len(d.GetEnvVars()) == 0 || !strings.HasPrefix(d.GetEnvVars()[0], "LEDGER_") {
			t.Errorf("global flag --%s has no LEDGER_* environment variable", name)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// completionScript runs `ledger completion SHELL` and saves the script.
func completionScript(t *testing.T, shell string) (string, string) {
	t.Helper()
	script, stderr, code := runLedgerEnv(t, nil, nil, "completion", shell)
	if code != 0 || stderr != "" || script == "" {
		t.Fatalf("completion %s: exit %d, stderr %q", shell, code, stderr)
	}
	path := filepath.Join(t.TempDir(), "ledger."+shell)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return script, path
}

// TestCompletionScripts: each shell's script names every command,
// subcommand and flag, and parses in its shell where that shell is
// installed.
func TestCompletionScripts(t *testing.T) {
	root := completionModel(newApp(&env{}))
	var words []string
	root.walk(func(c *complCmd) {
		if c.name != "" {
			words = append(words, c.name)
		}
		for _, f := range c.flags {
			words = append(words, f.long)
		}
	})
	sort.Strings(words)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script, path := completionScript(t, shell)
			for _, w := range words {
				if !strings.Contains(script, w) {
					t.Errorf("the %s script does not mention %q", shell, w)
				}
			}
			bin, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed: the script's syntax is not checked", shell)
			}
			if out, err := exec.Command(bin, "-n", path).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

// TestBashCompletion runs the bash script's completion function on a
// table of command lines.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	_, path := completionScript(t, "bash")
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "ledger-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "ledger-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line    string // the words typed; the last is being completed
		want    []string
		exactly bool
	}{
		{"ledger ", []string{"init", "append", "key", "policy", "version", "completion", "help"}, false},
		{"ledger ke", []string{"key"}, true},
		{"ledger key ", []string{"add-hmac"}, true},
		{"ledger policy l", []string{"list"}, true},
		{"ledger key add-hmac --", []string{"--dir", "--json", "--help", "--verbose"}, false},
		{"ledger --verbose pol", []string{"policy"}, true},
		{"ledger --no-progress key add-hmac --j", []string{"--json"}, true},
		{"ledger trend --by ", []string{"day", "week", "month"}, true},
		{"ledger trend --by=", []string{"day", "week", "month"}, true},
		{"ledger log --kind r", []string{"rvww", "rollback"}, true},
		{"ledger scorecard --mode a", []string{"approved", "autonomous"}, true},
		{"ledger completion ", []string{"bash", "zsh", "fish"}, true},
		{"ledger help ke", []string{"key"}, true},
		{"ledger prove --o", []string{"--out"}, true},
		{"ledger init --dir ledger-", []string{"ledger-dir"}, true},
		{"ledger append --dir ledger-dir ledger-", []string{"ledger-dir", "ledger-file"}, true},
		{"ledger verify-proof --key ledger-f", []string{"ledger-file"}, true},
	}
	for _, tt := range tests {
		words := strings.Split(tt.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		// bash splits "--by=" into "--by" "=" itself (COMP_WORDBREAKS).
		if strings.HasSuffix(tt.line, "=") {
			last := words[len(words)-1]
			quoted = append(quoted[:len(quoted)-1], "'"+strings.TrimSuffix(last, "=")+"'", "'='", "''")
		}
		script := "source " + path + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=$((${#COMP_WORDS[@]}-1))\n" +
			"_ledger\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tt.line, err, out)
			continue
		}
		got := strings.Fields(string(out))
		sort.Strings(got)
		for _, w := range tt.want {
			if !contains(got, w) {
				t.Errorf("%q completes to %v, without %q", tt.line, got, w)
			}
		}
		if tt.exactly && len(got) != len(tt.want) {
			t.Errorf("%q completes to %v, want exactly %v", tt.line, got, tt.want)
		}
	}
}

func contains(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// TestFishCompletion asks fish itself what the script completes.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed")
	}
	_, path := completionScript(t, "fish")
	tests := []struct {
		line string
		want []string
		not  []string
	}{
		{"ledger ", []string{"init", "key", "policy", "completion"}, []string{"add-hmac"}},
		{"ledger key ", []string{"add-hmac"}, []string{"init"}},
		{"ledger policy ", []string{"add", "list"}, []string{"add-hmac"}},
		{"ledger key add-hmac --", []string{"--dir", "--json", "--verbose"}, []string{"--raw"}},
		{"ledger trend --by ", []string{"day", "week", "month"}, nil},
		{"ledger completion ", []string{"bash", "zsh", "fish"}, nil},
	}
	for _, tt := range tests {
		out, err := exec.Command(fish, "--no-config", "-c", "source "+path+"; complete -C '"+tt.line+"'").CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tt.line, err, out)
			continue
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		for _, w := range tt.want {
			if !contains(got, w) {
				t.Errorf("%q completes to %v, without %q", tt.line, got, w)
			}
		}
		for _, w := range tt.not {
			if contains(got, w) {
				t.Errorf("%q completes to %v, with %q", tt.line, got, w)
			}
		}
	}
}

// TestZshCompletionLoads sources the zsh script after compinit: it must
// define the completion function and register it for ledger.
func TestZshCompletionLoads(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed")
	}
	_, path := completionScript(t, "zsh")
	home := t.TempDir()
	cmd := exec.Command(zsh, "-f", "-c", "autoload -Uz compinit && compinit -u -d "+filepath.Join(home, "zcompdump")+
		" && source "+path+" && print -r -- ${_comps[ledger]} && whence -w _ledger_key_add_hmac")
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "_ledger\n") || !strings.Contains(string(out), "_ledger_key_add_hmac: function") {
		t.Errorf("zsh: %v\n%s", err, out)
	}
}

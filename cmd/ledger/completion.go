package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion: `ledger completion bash|zsh|fish` prints a static
// script, generated from the command definitions, that completes every
// command, subcommand and flag, the values of flags that take one of a few
// words (--by, --kind, --mode), directories for --dir, and file names
// elsewhere.

func completionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Prints a script that completes every command, subcommand and flag of ledger. To load it:\n" +
			"   bash: source <(ledger completion bash)          (or save it in /etc/bash_completion.d/ledger)\n" +
			"   zsh:  ledger completion zsh > \"${fpath[1]}/_ledger\"   (then restart zsh; needs compinit)\n" +
			"   fish: ledger completion fish > ~/.config/fish/completions/ledger.fish",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("completion takes one shell: bash, zsh or fish")
			}
			root := completionModel(newApp(&env{}))
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion(root)
			case "zsh":
				script = zshCompletion(root)
			case "fish":
				script = fishCompletion(root)
			default:
				return usageErrorf("completion: unknown shell %q: want bash, zsh or fish", shell)
			}
			_, err := io.WriteString(e.stdout, script)
			return err
		},
	}
}

// complCmd is a command as completion sees it.
type complCmd struct {
	path  string // "key add-hmac"; "" for ledger itself
	name  string
	usage string
	subs  []*complCmd
	flags []complFlag
	// args is what positional arguments complete to: "files", "shells",
	// "commands", or "" (nothing to offer).
	args string
}

// complFlag is a flag as completion sees it.
type complFlag struct {
	long   string // without dashes
	short  string // "" or one letter
	usage  string
	value  string // "" (no value), "dir", "file", or words to choose from
	repeat bool
}

// flagValueWords are the words the value of a flag with this name is one of.
func flagValueWords(name string) string {
	switch name {
	case "by":
		return "day week month"
	case "kind":
		return "vrf avir-attestation avir-spec rvww rollback"
	case "mode":
		return "restricted approved autonomous"
	}
	return ""
}

// completionModel builds the command tree of app for completion.
func completionModel(app *cli.App) *complCmd {
	root := &complCmd{flags: complFlags(app.Flags)}
	for _, c := range app.Commands {
		if !c.Hidden {
			root.subs = append(root.subs, complCommand(c, ""))
		}
	}
	root.subs = append(root.subs, &complCmd{path: "help", name: "help", usage: "show the help of a command or subcommand", args: "commands",
		flags: []complFlag{}})
	return root
}

func complCommand(c *cli.Command, parent string) *complCmd {
	path := strings.TrimSpace(parent + " " + c.Name)
	cc := &complCmd{path: path, name: c.Name, usage: c.Usage, flags: complFlags(c.Flags)}
	for _, s := range c.Subcommands {
		if !s.Hidden && s.Name != "help" {
			cc.subs = append(cc.subs, complCommand(s, path))
		}
	}
	switch {
	case path == "completion":
		cc.args = "shells"
	case strings.Contains(c.ArgsUsage, "FILE") || strings.Contains(c.ArgsUsage, "DIR") || strings.Contains(c.ArgsUsage, "PROOF"):
		cc.args = "files"
	}
	return cc
}

func complFlags(flags []cli.Flag) []complFlag {
	out := []complFlag{}
	for _, f := range flags {
		names := f.Names()
		cf := complFlag{long: names[0]}
		for _, n := range names[1:] {
			if len(n) == 1 {
				cf.short = n
			}
		}
		if d, ok := f.(cli.DocGenerationFlag); ok {
			cf.usage = d.GetUsage()
			if d.TakesValue() {
				cf.value = "file"
				if w := flagValueWords(cf.long); w != "" {
					cf.value = w
				} else if cf.long == "dir" {
					cf.value = "dir"
				}
			}
		}
		if _, ok := f.(*cli.StringSliceFlag); ok {
			cf.repeat = true
		}
		out = append(out, cf)
	}
	return append(out, complFlag{long: "help", short: "h", usage: "show help"})
}

// walk visits c and every command below it, parents first.
func (c *complCmd) walk(fn func(*complCmd)) {
	fn(c)
	for _, s := range c.subs {
		s.walk(fn)
	}
}

func (c *complCmd) subNames() []string {
	var out []string
	for _, s := range c.subs {
		out = append(out, s.name)
	}
	return out
}

// flagWords lists a command's flags as typed: --long and -s.
func (c *complCmd) flagWords(root *complCmd) []string {
	var out []string
	add := func(fs []complFlag) {
		for _, f := range fs {
			if !slices.Contains(out, "--"+f.long) {
				out = append(out, "--"+f.long)
			}
			if f.short != "" && !slices.Contains(out, "-"+f.short) {
				out = append(out, "-"+f.short)
			}
		}
	}
	add(c.flags)
	if c != root {
		add(root.flags) // global flags may follow the command
	}
	return out
}

func shellWords(ws []string) string { return strings.Join(ws, " ") }

// bashCompletion is the bash script: a table of commands, flags and flag
// values per command path, and one function that walks the words typed.
func bashCompletion(root *complCmd) string {
	var b strings.Builder
	b.WriteString(`# bash completion for ledger; generated by ` + "`ledger completion bash`" + `.
# Load it with: source <(ledger completion bash)

# _ledger_subcommands PATH: the subcommands of the command PATH ("" is ledger).
_ledger_subcommands() {
    case "$1" in
`)
	root.walk(func(c *complCmd) {
		if len(c.subs) > 0 {
			fmt.Fprintf(&b, "        %q) echo %q ;;\n", c.path, shellWords(c.subNames()))
		}
	})
	b.WriteString(`    esac
}

# _ledger_flags PATH: the flags of the command PATH.
_ledger_flags() {
    case "$1" in
`)
	root.walk(func(c *complCmd) {
		fmt.Fprintf(&b, "        %q) echo %q ;;\n", c.path, shellWords(c.flagWords(root)))
	})
	b.WriteString(`    esac
}

# _ledger_flag_value PATH FLAG: what the flag's value is ("dir", "file", or
# the words to choose from); nothing for a flag without a value.
_ledger_flag_value() {
    case "$1 $2" in
`)
	root.walk(func(c *complCmd) {
		fs := c.flags
		if c != root {
			fs = append(slices.Clone(fs), root.flags...)
		}
		for _, f := range fs {
			if f.value == "" {
				continue
			}
			names := []string{fmt.Sprintf("%q", c.path+" --"+f.long)}
			if f.short != "" {
				names = append(names, fmt.Sprintf("%q", c.path+" -"+f.short))
			}
			fmt.Fprintf(&b, "        %s) echo %q ;;\n", strings.Join(names, "|"), f.value)
		}
	})
	b.WriteString(`    esac
}

# _ledger_args PATH: what the command's arguments are: files, shells, commands.
_ledger_args() {
    case "$1" in
`)
	root.walk(func(c *complCmd) {
		if c.args != "" {
			fmt.Fprintf(&b, "        %q) echo %q ;;\n", c.path, c.args)
		}
	})
	b.WriteString(`    esac
}

_ledger() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" i w subs value
    COMPREPLY=()
    # --flag=value is split at "=" by bash's COMP_WORDBREAKS.
    if [[ "$cur" == "=" ]]; then
        prev="${COMP_WORDS[COMP_CWORD-1]}"
        cur=""
    elif [[ $COMP_CWORD -ge 2 && "${COMP_WORDS[COMP_CWORD-1]}" == "=" ]]; then
        prev="${COMP_WORDS[COMP_CWORD-2]}"
    elif [[ $COMP_CWORD -ge 1 ]]; then
        prev="${COMP_WORDS[COMP_CWORD-1]}"
    fi
    # The command path: the words naming commands, skipping flags and the
    # values of flags that take one.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        case "$w" in
            --) break ;;
            =) ;;
            -*)
                if [[ "${COMP_WORDS[i+1]}" != "=" && -n "$(_ledger_flag_value "$path" "$w")" ]]; then
                    ((i++))
                fi
                ;;
            *)
                subs=" $(_ledger_subcommands "$path") "
                if [[ "$subs" == *" $w "* ]]; then
                    path="${path:+$path }$w"
                fi
                ;;
        esac
    done
    if [[ "$prev" == -* ]]; then
        value="$(_ledger_flag_value "$path" "$prev")"
        case "$value" in
            "") ;;
            dir) COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
            file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
            *) COMPREPLY=($(compgen -W "$value" -- "$cur")); return 0 ;;
        esac
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_ledger_flags "$path")" -- "$cur"))
        return 0
    fi
    subs="$(_ledger_subcommands "$path")"
    if [[ -n "$subs" ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return 0
    fi
    case "$(_ledger_args "$path")" in
        files) COMPREPLY=($(compgen -f -- "$cur")) ;;
        shells) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
        commands) COMPREPLY=($(compgen -W "$(_ledger_subcommands "")" -- "$cur")) ;;
    esac
    return 0
}

complete -o filenames -o bashdefault -F _ledger ledger
`)
	return b.String()
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// zshDesc makes s safe inside an _arguments [description].
func zshDesc(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, "\n", " ")
	return zshQuote(r.Replace(s))
}

// zshFunc is the name of the zsh function completing the command at path.
func zshFunc(path string) string {
	if path == "" {
		return "_ledger"
	}
	return "_ledger_" + strings.NewReplacer(" ", "_", "-", "_").Replace(path)
}

// zshCompletion is the zsh script: one _arguments function per command.
func zshCompletion(root *complCmd) string {
	var b strings.Builder
	b.WriteString("#compdef ledger\n# zsh completion for ledger; generated by `ledger completion zsh`.\n" +
		"# Save it as _ledger in a directory of $fpath (before compinit runs).\n\n")
	root.walk(func(c *complCmd) {
		fmt.Fprintf(&b, "%s() {\n", zshFunc(c.path))
		if len(c.subs) > 0 {
			b.WriteString("    local curcontext=\"$curcontext\" state line\n    typeset -A opt_args\n")
		}
		b.WriteString("    _arguments -s -S")
		if len(c.subs) > 0 {
			b.WriteString(" -C")
		}
		fs := c.flags
		if c != root {
			fs = append(slices.Clone(fs), root.flags...)
		}
		seen := map[string]bool{}
		for _, f := range fs {
			if seen[f.long] {
				continue
			}
			seen[f.long] = true
			b.WriteString(" \\\n        ")
			b.WriteString(zshFlagSpec(f))
		}
		switch {
		case len(c.subs) > 0:
			b.WriteString(" \\\n        '1: :->cmds' \\\n        '*:: :->args'\n")
			b.WriteString("    case $state in\n        cmds)\n            local -a cmds\n            cmds=(\n")
			for _, s := range c.subs {
				fmt.Fprintf(&b, "                '%s:%s'\n", s.name, zshQuote(strings.ReplaceAll(s.usage, "\n", " ")))
			}
			b.WriteString("            )\n            _describe -t commands 'ledger command' cmds\n            ;;\n        args)\n            case $words[1] in\n")
			for _, s := range c.subs {
				fmt.Fprintf(&b, "                %s) %s ;;\n", s.name, zshFunc(s.path))
			}
			b.WriteString("            esac\n            ;;\n    esac\n")
		case c.args == "files":
			b.WriteString(" \\\n        '*:file:_files'\n")
		case c.args == "shells":
			b.WriteString(" \\\n        '1:shell:(bash zsh fish)'\n")
		case c.args == "commands":
			b.WriteString(" \\\n        '*:command:(" + shellWords(root.subNames()) + ")'\n")
		default:
			b.WriteString("\n")
		}
		b.WriteString("}\n\n")
	})
	// Autoloaded from $fpath, the file is _ledger's body: run it; sourced,
	// register it.
	b.WriteString("if [ \"$funcstack[1]\" = \"_ledger\" ]; then\n    _ledger \"$@\"\nelse\n    compdef _ledger ledger\nfi\n")
	return b.String()
}

// zshFlagSpec is one _arguments option spec.
func zshFlagSpec(f complFlag) string {
	desc := "[" + zshDesc(f.usage) + "]"
	var action string
	switch f.value {
	case "":
	case "dir":
		action = ":directory:_files -/"
	case "file":
		action = ":" + f.long + ":_files"
	default:
		action = ":" + f.long + ":(" + f.value + ")"
	}
	eq := ""
	if f.value != "" {
		eq = "="
	}
	rep := ""
	if f.repeat {
		rep = "*"
	}
	if f.short == "" {
		return "'" + rep + "--" + f.long + eq + desc + action + "'"
	}
	excl := "(-" + f.short + " --" + f.long + ")"
	if f.repeat {
		excl = ""
	}
	return "'" + excl + rep + "'{-" + f.short + ",--" + f.long + eq + "}'" + desc + action + "'"
}

// fishQuote quotes s for a single-quoted fish word.
func fishQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", " ").Replace(s)
}

// fishCompletion is the fish script: helper functions that find the
// command path typed so far, and one `complete` line per command and flag.
func fishCompletion(root *complCmd) string {
	var b strings.Builder
	b.WriteString("# fish completion for ledger; generated by `ledger completion fish`.\n" +
		"# Save it as ~/.config/fish/completions/ledger.fish\n\n" +
		"# __ledger_subcommands PATH: the subcommands of the command PATH (\"\" is ledger).\n" +
		"function __ledger_subcommands\n    switch \"$argv[1]\"\n")
	root.walk(func(c *complCmd) {
		if len(c.subs) > 0 {
			fmt.Fprintf(&b, "        case '%s'\n            echo %s\n", c.path, shellWords(c.subNames()))
		}
	})
	b.WriteString("    end\nend\n\n" +
		"# __ledger_path: the command path typed so far, e.g. \"key add-hmac\".\n" +
		"function __ledger_path\n" +
		"    set -l path\n" +
		"    set -l subs (string split ' ' -- (__ledger_subcommands ''))\n" +
		"    for tok in (commandline -opc)[2..-1]\n" +
		"        if contains -- $tok $subs\n" +
		"            set path $path $tok\n" +
		"            set subs (string split ' ' -- (__ledger_subcommands \"$path\"))\n" +
		"        end\n" +
		"    end\n" +
		"    echo \"$path\"\n" +
		"end\n\n" +
		"# __ledger_at PATH: true when the command path typed so far is PATH.\n" +
		"function __ledger_at\n    test (__ledger_path) = \"$argv[1]\"\nend\n\n" +
		"complete -c ledger -f\n")
	root.walk(func(c *complCmd) {
		cond := fmt.Sprintf("__ledger_at '%s'", c.path)
		fmt.Fprintf(&b, "\n# %s\n", strings.TrimSpace("ledger "+c.path))
		for _, s := range c.subs {
			fmt.Fprintf(&b, "complete -c ledger -n \"%s\" -a '%s' -d '%s'\n", cond, s.name, fishQuote(s.usage))
		}
		fs := c.flags
		if c != root {
			fs = append(slices.Clone(fs), root.flags...)
		}
		seen := map[string]bool{}
		for _, f := range fs {
			if seen[f.long] {
				continue
			}
			seen[f.long] = true
			line := fmt.Sprintf("complete -c ledger -n \"%s\" -l '%s'", cond, f.long)
			if f.short != "" {
				line += fmt.Sprintf(" -s '%s'", f.short)
			}
			switch f.value {
			case "":
			case "dir":
				line += " -r -f -a '(__fish_complete_directories)'"
			case "file":
				line += " -r -F"
			default:
				line += fmt.Sprintf(" -r -f -a '%s'", f.value)
			}
			fmt.Fprintf(&b, "%s -d '%s'\n", line, fishQuote(f.usage))
		}
		switch c.args {
		case "files":
			fmt.Fprintf(&b, "complete -c ledger -n \"%s\" -F\n", cond)
		case "shells":
			fmt.Fprintf(&b, "complete -c ledger -n \"%s\" -a 'bash zsh fish'\n", cond)
		case "commands":
			fmt.Fprintf(&b, "complete -c ledger -n \"%s\" -a '%s'\n", cond, shellWords(root.subNames()))
		}
	})
	return b.String()
}

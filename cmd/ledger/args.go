package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags ahead of its positional arguments,
// so that `ledger get 12 --raw` and `ledger verify-proof p --key K` work
// as documented: urfave/cli v2 stops parsing flags at the first positional
// argument. A global flag given after the command (`ledger audit
// --verbose`) moves before it, unless the command has a flag of that
// name. Tokens after "--" are left alone.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags before the command name stay where they are.
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" {
		if takesValue(app.Flags, rest[i]) && !strings.Contains(rest[i], "=") && i+1 < len(rest) {
			i++
		}
		i++
	}
	out = append(out, rest[:i]...)
	rest = rest[i:]
	cmds := app.Commands
	var flags []cli.Flag
	found := false
	for len(rest) > 0 {
		cmd := findCommand(cmds, rest[0])
		if cmd == nil {
			break
		}
		out = append(out, rest[0])
		rest = rest[1:]
		flags, found = cmd.Flags, true
		if len(cmd.Subcommands) == 0 {
			break
		}
		cmds = cmd.Subcommands
	}
	if !found {
		return append(out, rest...)
	}
	var fl, pos, global []string
	for j := 0; j < len(rest); j++ {
		tok := rest[j]
		if tok == "--" {
			pos = append(pos, rest[j:]...)
			break
		}
		if strings.HasPrefix(tok, "-") && tok != "-" {
			if !hasFlag(flags, tok) && hasFlag(app.Flags, tok) {
				global = append(global, tok)
				if takesValue(app.Flags, tok) && !strings.Contains(tok, "=") && j+1 < len(rest) {
					j++
					global = append(global, rest[j])
				}
				continue
			}
			fl = append(fl, tok)
			if takesValue(flags, tok) && !strings.Contains(tok, "=") && j+1 < len(rest) {
				j++
				fl = append(fl, rest[j])
			}
			continue
		}
		pos = append(pos, tok)
	}
	if len(global) > 0 {
		// Before the command's name, after the global flags already there.
		out = append(out[:1+i], append(global, out[1+i:]...)...)
	}
	out = append(out, fl...)
	return append(out, pos...)
}

// hasFlag reports whether the flag token (-x, --name, --name=value) names
// one of flags.
func hasFlag(flags []cli.Flag, tok string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
		for _, a := range c.Aliases {
			if a == name {
				return c
			}
		}
	}
	return nil
}

// takesValue reports whether the flag token names a flag that takes a value.
func takesValue(flags []cli.Flag, tok string) bool {
	name := strings.TrimLeft(tok, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, isBool := f.(*cli.BoolFlag); isBool {
				return false
			}
			return true
		}
	}
	return false
}

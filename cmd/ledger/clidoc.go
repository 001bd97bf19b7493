package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/proofledger/ledger/scorecard"
)

// docs/CLI.md is generated from the command definitions: every command
// and subcommand with its usage, description and flags (with environment
// variables and defaults), the global flags, the environment, the exit
// codes, and the --json shapes, which come from the Go types the commands
// encode (by reflection), so that the page cannot drift from the binary.
// TestCLIDoc regenerates it with -update and fails when it is stale.

// jsonShape documents one command's --json output.
type jsonShape struct {
	// v is a value of the type encoded.
	v any
	// lines says how many objects are printed.
	lines string
}

// altShape is another object a command prints besides its jsonShape:
// when, and a value of it.
type altShape struct {
	when string
	v    any
}

// jsonAltShapes are the commands' other --json objects, by command path.
func jsonAltShapes() map[string][]altShape {
	return map[string][]altShape{
		"replay": {{"for a VRF receipt", replayReceiptJSON{}}, {"for an AVIR attestation", replayAttestationJSON{}}},
	}
}

// jsonShapes are the --json outputs, by command path. Every command with
// a --json flag has one (TestJSONShapesComplete).
func jsonShapes() map[string]jsonShape {
	return map[string]jsonShape{
		"init":          {initJSON{}, "one object"},
		"inspect":       {inspectLine{}, "one object per input"},
		"append":        {appendLine{}, "one object per input, as its batch is acknowledged"},
		"get":           {eventJSON{}, "one object"},
		"log":           {eventJSON{}, "one object per event; with --summary, one object of counts (see log --help)"},
		"chain":         {eventJSON{}, "one object per event, oldest first"},
		"checkpoint":    {checkpointJSON{}, "one object"},
		"prove":         {proveJSON{}, "one object"},
		"verify-proof":  {verifyJSON{}, "one object, also when the proof does not verify (ok false, error set; exit 3 or 4)"},
		"key add-hmac":  {hmacKeyJSON{}, "one object"},
		"export":        {exportJSON{}, "one object"},
		"import":        {importJSON{}, "one object"},
		"scorecard":     {scorecardJSON{}, "one object"},
		"trend":         {scorecard.Row{}, "one object per period"},
		"reputation":    {repJSON{}, "one object per ranked agent or signer; with AGENT, one object with task_types"},
		"systems":       {systemsJSON{}, "one object"},
		"policy add":    {policyAddJSON{}, "one object"},
		"policy list":   {policyJSON{}, "one object per policy"},
		"rebuild":       {rebuildJSON{}, "one object"},
		"audit":         {auditReportJSON{}, "one object"},
		"refusals":      {refusalJSON{}, "one object per record, oldest first"},
		"trust add":     {trustChangeJSON{}, "one object per key, in signer order"},
		"run vrf":       {runVRFLine{}, "one object per request, in the order given"},
		"run avir":      {runAVIRLine{}, "one object"},
		"witness build": {witnessLine{}, "one object"},
		"trust list":    {trustJSON{}, "one object"},
		"trust remove":  {trustChangeJSON{}, "one object"},
		"version":       {versionJSON{}, "one object"},
		"replay":        {replayBundleJSON{}, "one object per document replayed; for a witness bundle (with --all, one per bundle, oldest first)"},

		// ledger freshness
		"freshness set":   {freshnessJSON{}, "one object: the setting as it now is"},
		"freshness show":  {freshnessJSON{}, "one object"},
		"freshness clear": {freshnessJSON{}, "one object: the setting as it now is"},
	}
}

// docCommand is a command with its full path ("key add-hmac").
type docCommand struct {
	path string
	cmd  *cli.Command
}

// allCommands lists app's commands and subcommands, depth first, in their
// order of definition; `help` (urfave's) is left out.
func allCommands(app *cli.App) []docCommand {
	var out []docCommand
	var walk func(cmds []*cli.Command, parent string)
	walk = func(cmds []*cli.Command, parent string) {
		for _, c := range cmds {
			if c.Hidden || c.Name == "help" {
				continue
			}
			path := strings.TrimSpace(parent + " " + c.Name)
			out = append(out, docCommand{path, c})
			walk(c.Subcommands, path)
		}
	}
	walk(app.Commands, "")
	return out
}

// cliDoc renders docs/CLI.md from app's definitions.
func cliDoc(app *cli.App) string {
	var b strings.Builder
	cmds := allCommands(app)
	shapes := jsonShapes()
	b.WriteString("# The ledger command line\n\n" +
		"<!-- Generated from the command definitions (cmd/ledger/clidoc.go) by\n" +
		"     go test ./cmd/ledger -run TestCLIDoc -update\n" +
		"     Do not edit by hand. -->\n\n" +
		"```\nledger [global options] COMMAND [SUBCOMMAND] [options] [arguments]\n```\n\n" +
		app.Usage + ".\n\n")
	b.WriteString("## Conventions\n\n" +
		"- **Help**: `ledger help COMMAND [SUBCOMMAND]`, `ledger COMMAND [SUBCOMMAND] --help` (or `-h`), `ledger --help`.\n" +
		"- **Version**: `ledger --version` or `ledger version` (`--json` for one object): the module version, the VCS\n" +
		"  revision, time and modified state the binary was built from (`runtime/debug.ReadBuildInfo`), the Go version.\n" +
		"- **Flags** may follow arguments (`ledger get 12 --raw`); global options may follow the command\n" +
		"  (`ledger audit --verbose`). `--` ends the flags.\n" +
		"- **`-`** is standard input where a command reads a file (documents, proofs, `--doc`, archives, keys,\n" +
		"  policies) and standard output where it writes one (`prove -o -`, `export -`, `trend --plot -`).\n" +
		"- **`--json`**: one JSON object per line, on every command that reports (shapes below: `T | null` may be\n" +
		"  null, a key marked `?` is left out when empty, times are RFC 3339 strings in UTC).\n" +
		"- **Usage errors** (an unknown command, subcommand or flag, a bad flag value, missing or extra\n" +
		"  arguments, a missing required flag) exit with 2 and one line on stderr that explains them, at\n" +
		"  every level of the command tree. Every error is one line on stderr, `ledger: ...`; a panic too\n" +
		"  (`ledger: internal error: ...`, exit 1; its stack only with `--verbose`).\n" +
		"- **Progress bars** on stderr for long work (append, import, export, audit, rebuild), only when\n" +
		"  stderr is a terminal; never in pipes or tests. `--no-progress` or `LEDGER_NO_PROGRESS=1` turns them off.\n" +
		"- **Colour** only on a terminal, never when `NO_COLOR` is set (https://no-color.org), and only on\n" +
		"  verdict words (`met`/`NOT MET`, `sound`, `OK`).\n" +
		"- **Completion**: `ledger completion bash|zsh|fish` prints a script completing every command,\n" +
		"  subcommand and flag.\n\n")

	b.WriteString("## Global options\n\n")
	writeFlagTable(&b, app.Flags)

	b.WriteString("\n## Environment\n\n| variable | meaning |\n|---|---|\n")
	seen := map[string]bool{}
	addEnv := func(f cli.Flag, where string) {
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			return
		}
		for _, ev := range d.GetEnvVars() {
			if seen[ev] {
				continue
			}
			seen[ev] = true
			fmt.Fprintf(&b, "| `%s` | `--%s` %s: %s |\n", ev, f.Names()[0], where, mdCell(d.GetUsage()))
		}
	}
	for _, f := range app.Flags {
		addEnv(f, "(global)")
	}
	for _, dc := range cmds {
		for _, f := range dc.cmd.Flags {
			addEnv(f, "of every command that has it")
		}
	}
	for _, n := range environmentNotes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", n[0], mdCell(n[1]))
	}

	b.WriteString("\n## Exit codes\n\n| code | meaning |\n|---|---|\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.code, mdCell(c.meaning))
	}
	b.WriteString("\nWhen inputs fail in several ways, the lowest of these codes is returned.\n")

	b.WriteString("\n## Commands\n\n")
	for _, dc := range cmds {
		fmt.Fprintf(&b, "- [`ledger %s`](#%s): %s\n", dc.path, anchor("ledger "+dc.path), dc.cmd.Usage)
	}
	fmt.Fprintf(&b, "- `ledger help [COMMAND [SUBCOMMAND]]`: the help of ledger, a command or a subcommand\n")
	for _, dc := range cmds {
		c := dc.cmd
		fmt.Fprintf(&b, "\n### ledger %s\n\n%s.\n\n", dc.path, upperFirst(c.Usage))
		usage := "ledger " + dc.path
		switch {
		case len(c.Subcommands) > 0:
			usage += " SUBCOMMAND"
		default:
			if len(c.Flags) > 0 {
				usage += " [options]"
			}
			if c.ArgsUsage != "" {
				usage += " " + c.ArgsUsage
			}
		}
		fmt.Fprintf(&b, "```\n%s\n```\n\n", usage)
		if c.Description != "" {
			b.WriteString(describe(c.Description) + "\n\n")
		}
		if len(c.Subcommands) > 0 {
			b.WriteString("Subcommands:\n\n")
			for _, s := range c.Subcommands {
				if !s.Hidden && s.Name != "help" {
					fmt.Fprintf(&b, "- [`%s`](#%s): %s\n", s.Name, anchor("ledger "+dc.path+" "+s.Name), s.Usage)
				}
			}
			b.WriteString("\n")
			continue
		}
		writeFlagTable(&b, c.Flags)
		if sh, ok := shapes[dc.path]; ok {
			fmt.Fprintf(&b, "\n`--json` prints %s:\n\n```\n%s\n```\n", sh.lines, jsonShapeText(reflect.TypeOf(sh.v), "", nil))
			for _, a := range jsonAltShapes()[dc.path] {
				fmt.Fprintf(&b, "\n%s:\n\n```\n%s\n```\n", upperFirst(a.when), jsonShapeText(reflect.TypeOf(a.v), "", nil))
			}
		}
	}
	return b.String()
}

// writeFlagTable writes flags as a Markdown table (--help is implied).
func writeFlagTable(b *strings.Builder, flags []cli.Flag) {
	b.WriteString("| option | environment | default | meaning |\n|---|---|---|---|\n")
	for _, f := range flags {
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		var names []string
		for _, n := range f.Names() {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
		opt := "`" + strings.Join(names, "`, `") + "`"
		if d.TakesValue() {
			opt += " " + valueName(d)
		}
		if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
			opt += " (repeatable)"
		}
		env := ""
		if evs := d.GetEnvVars(); len(evs) > 0 {
			env = "`" + strings.Join(evs, "`, `") + "`"
		}
		def := ""
		if d.TakesValue() {
			if t := d.GetDefaultText(); t != "" && t != `""` && t != "0" {
				def = "`" + t + "`"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", opt, env, def, mdCell(d.GetUsage()))
	}
	b.WriteString("| `--help`, `-h` | | | show help |\n")
}

// valueName is the placeholder of a flag's value: the `NAME` quoted in
// its usage (urfave's convention), else by the flag's type.
func valueName(d cli.DocGenerationFlag) string {
	if u := d.GetUsage(); strings.Count(u, "`") >= 2 {
		return strings.SplitN(u, "`", 3)[1]
	}
	switch d.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		return "N"
	}
	switch n := d.Names()[0]; n {
	case "since", "until", "at":
		return "T"
	case "out", "doc", "spec", "trusted-signers", "hmac-key-file":
		return "FILE"
	}
	return strings.ToUpper(strings.ReplaceAll(d.Names()[0], "-", "_"))
}

// describe turns a command's Description (lines wrapped for a terminal,
// indented lists) into Markdown paragraphs; indented lines stay as code.
func describe(desc string) string {
	var out []string
	var para []string
	var code []string
	flushPara := func() {
		if len(para) > 0 {
			out = append(out, strings.Join(para, " "))
			para = nil
		}
	}
	flushCode := func() {
		if len(code) > 0 {
			out = append(out, "```\n"+strings.Join(code, "\n")+"\n```")
			code = nil
		}
	}
	for _, line := range strings.Split(desc, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flushPara()
			flushCode()
		case strings.HasPrefix(line, "   "):
			flushPara()
			code = append(code, strings.TrimPrefix(line, "   "))
		default:
			flushCode()
			para = append(para, strings.TrimSpace(line))
		}
	}
	flushPara()
	flushCode()
	return strings.Join(out, "\n\n")
}

// mdCell makes s safe in a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// anchor is GitHub's heading anchor for a heading's text.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// jsonShapeText renders type t as JSON with the value types in place of
// values, indented by indent; outer lists the struct types being rendered
// (a type that contains itself is named, not expanded again).
func jsonShapeText(t reflect.Type, indent string, outer []reflect.Type) string {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return "object"
	case t == reflect.TypeFor[time.Time]():
		return "string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonShapeText(t.Elem(), indent, outer) + " | null"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "[" + jsonShapeText(t.Elem(), indent, outer) + ", …]"
	case reflect.Map:
		return "{string: " + jsonShapeText(t.Elem(), indent, outer) + ", …}"
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		if slices.Contains(outer, t) {
			return "(the same object)"
		}
		outer = append(outer, t)
		fields := structFields(t)
		if len(fields) == 0 {
			return "{}"
		}
		var b strings.Builder
		b.WriteString("{\n")
		for i, f := range fields {
			key := fmt.Sprintf("%q", f.name)
			if f.omitEmpty {
				key += "?"
			}
			fmt.Fprintf(&b, "%s  %s: %s", indent, key, jsonShapeText(f.typ, indent+"  ", outer))
			if i < len(fields)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
		return b.String()
	}
	return t.String()
}

// jsonField is one key of a struct's JSON encoding.
type jsonField struct {
	name      string
	typ       reflect.Type
	omitEmpty bool
}

// structFields lists t's JSON keys as encoding/json writes them, embedded
// structs' keys inlined.
func structFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, structFields(et)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type, omitEmpty: strings.Contains(opts, "omitempty")})
	}
	return out
}

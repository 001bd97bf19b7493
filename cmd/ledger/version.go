package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// versionJSON is what `ledger version` reports: the module's version and
// the VCS state the binary was built from (runtime/debug.ReadBuildInfo),
// and the Go toolchain. Revision, time and modified are null when the
// build recorded no VCS information (go build -buildvcs=false, a build
// outside a repository, or a git worktree, which Go does not stamp).
type versionJSON struct {
	Module   string  `json:"module"`
	Version  string  `json:"version"`
	Revision *string `json:"revision"`
	Time     *string `json:"time"`
	Modified *bool   `json:"modified"`
	Go       string  `json:"go"`
	OS       string  `json:"os"`
	Arch     string  `json:"arch"`
}

// buildVersion reads the version from the build information bi (nil: none
// was embedded).
func buildVersion(bi *debug.BuildInfo) versionJSON {
	v := versionJSON{Module: "github.com/proofledger/ledger", Version: "(unknown)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = &s.Value
		case "vcs.time":
			v.Time = &s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.Modified = &m
		case "GOOS":
			v.OS = s.Value
		case "GOARCH":
			v.Arch = s.Value
		}
	}
	return v
}

// printVersion writes the binary's version, as text or one JSON line.
func printVersion(w io.Writer, asJSON bool) error {
	bi, _ := debug.ReadBuildInfo() // absent only in binaries built without module support
	v := buildVersion(bi)
	if asJSON {
		return writeJSONLine(w, v)
	}
	_, err := io.WriteString(w, versionText(v))
	return err
}

// versionText is the text form: `ledger VERSION`, then the details.
func versionText(v versionJSON) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger %s\n", v.Version)
	row := func(label, value string) { fmt.Fprintf(&b, "  %-9s %s\n", label, value) }
	row("module", v.Module)
	if v.Revision != nil {
		rev := *v.Revision
		if v.Modified != nil && *v.Modified {
			rev += " (modified)"
		}
		row("revision", rev)
	} else {
		row("revision", "unknown (built without VCS information)")
	}
	if v.Time != nil {
		row("time", *v.Time)
	}
	row("go", v.Go+" "+v.OS+"/"+v.Arch)
	return b.String()
}

func versionCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version: module version, VCS revision, time and state, Go version",
		Description: "The same as ledger --version. The VCS fields come from the build information Go embeds\n" +
			"(runtime/debug.ReadBuildInfo); a binary built without it (go build -buildvcs=false, or in a\n" +
			"git worktree) says the revision is unknown.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the version as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageErrorf("version takes no arguments")
			}
			return printVersion(e.stdout, c.Bool("json"))
		},
	}
}

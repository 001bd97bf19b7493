package proof

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports holds the package to its rule (doc.go): the standard library,
// x/mod's note and tlog, codec and codec/canonjson, nothing else.
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"golang.org/x/mod/sumdb/note":                   true,
		"golang.org/x/mod/sumdb/tlog":                   true,
		"github.com/proofledger/ledger/codec":           true,
		"github.com/proofledger/ledger/codec/canonjson": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			if !std && !allowed[path] {
				t.Errorf("%s imports %s, which the proof package must not", name, path)
			}
		}
	}
}

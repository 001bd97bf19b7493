package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// maxInputSize bounds one input document. Witness bundles carry diffs and
// test logs; 256 MiB is far beyond any real one and keeps a stray file from
// exhausting memory.
const maxInputSize = 256 << 20

// input is one document to process: its name as the user gave it (or "-")
// and its bytes, or the error that stopped us reading it.
type input struct {
	name string
	data []byte
	err  error
}

// expandInputs turns the command's arguments into a list of files: "-" is
// standard input, a directory stands for every regular file below it (in
// lexical order, hidden files and directories skipped).
func expandInputs(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, usageErrorf("no input: give one or more FILEs, a DIR, or - for standard input")
	}
	var out []string
	for _, a := range args {
		if a == "-" {
			out = append(out, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a) // a missing file is reported when read
			continue
		}
		var files []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if p != a && len(name) > 0 && name[0] == '.' {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, exitf(exitMalformed, "%s: %v", a, err)
		}
		sort.Strings(files)
		out = append(out, files...)
	}
	return out, nil
}

// readInput reads one named input, bounded by maxInputSize.
func readInput(name string, stdin io.Reader) input {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return input{name: name, err: err}
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return input{name: name, err: err}
	}
	if len(data) > maxInputSize {
		return input{name: name, err: fmt.Errorf("larger than %d MiB", maxInputSize>>20)}
	}
	return input{name: name, data: data}
}

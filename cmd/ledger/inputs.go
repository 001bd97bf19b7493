package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/proofledger/ledger/ledger"
)

// maxInputSize bounds one input document (ledger.MaxDocumentSize).
const maxInputSize = ledger.MaxDocumentSize

// input is one document to process: its name as the user gave it (or "-")
// and its bytes, or the error that stopped us reading it.
type input struct {
	name string
	data []byte
	err  error
}

// inputRef is an input found among the arguments, not read yet; err is a
// problem found while looking for it (a symlink loop).
type inputRef struct {
	name string
	err  error
}

// expandInputs turns the command's arguments into inputs: "-" is standard
// input, a directory stands for every file below it (lexical order,
// hidden files and directories skipped). Symbolic links are followed, a
// loop is reported as an input error, and a file reached twice is listed
// once. Nothing is read yet.
func expandInputs(args []string) ([]inputRef, error) {
	if len(args) == 0 {
		return nil, usageErrorf("no input: give one or more FILEs, a DIR, or - for standard input")
	}
	var out []inputRef
	seenFiles := map[fileID]bool{}
	for _, a := range args {
		if a == "-" {
			out = append(out, inputRef{name: a})
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, inputRef{name: a}) // a missing file is reported when read
			continue
		}
		w := walker{seenFiles: seenFiles, onPath: map[fileID]bool{}, seenDirs: map[fileID]bool{}}
		w.dir(a, st)
		out = append(out, w.out...)
	}
	return out, nil
}

// fileID identifies a file across names (links).
type fileID struct{ dev, ino uint64 }

func idOf(st os.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino)}, true
}

// walker lists the files below a directory, following symbolic links.
type walker struct {
	out       []inputRef
	seenFiles map[fileID]bool // files listed (across arguments)
	seenDirs  map[fileID]bool // directories walked
	onPath    map[fileID]bool // directories being walked: a link back to one is a loop
}

func (w *walker) dir(p string, st os.FileInfo) {
	id, ok := idOf(st)
	if ok {
		if w.onPath[id] {
			w.out = append(w.out, inputRef{name: p, err: fmt.Errorf("symbolic link loop: %s leads back to a directory that contains it", p)})
			return
		}
		if w.seenDirs[id] {
			return // reached again through another link: its files are listed
		}
		w.seenDirs[id], w.onPath[id] = true, true
		defer delete(w.onPath, id)
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		w.out = append(w.out, inputRef{name: p, err: pathless(err)})
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		child := filepath.Join(p, e.Name())
		cst, err := os.Stat(child) // follows symbolic links
		if err != nil {
			w.out = append(w.out, inputRef{name: child}) // dangling: reported when read
			continue
		}
		if cst.IsDir() {
			w.dir(child, cst)
			continue
		}
		if cid, ok := idOf(cst); ok {
			if w.seenFiles[cid] {
				continue
			}
			w.seenFiles[cid] = true
		}
		w.out = append(w.out, inputRef{name: child})
	}
}

// openRegular opens a file to read, refusing anything but a regular file:
// a FIFO or a device could block forever or never end. (Standard input,
// "-", is read whatever it is: the user asked for it.)
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // read-only, and refused
		return nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close() // read-only, and refused
		what := "not a regular file"
		switch m := st.Mode(); {
		case m.IsDir():
			what = "a directory"
		case m&os.ModeNamedPipe != 0:
			what = "a FIFO (named pipe)"
		case m&os.ModeDevice != 0:
			what = "a device"
		case m&os.ModeSocket != 0:
			what = "a socket"
		}
		return nil, fmt.Errorf("%s, not read (pipe it to - to read it as standard input)", what)
	}
	// Back to blocking reads (no effect on a regular file, but explicit).
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		_ = f.Close() // read-only, and refused
		return nil, err
	}
	return f, nil
}

// readInput reads one named input, bounded by maxInputSize.
func readInput(name string, stdin io.Reader) input {
	data, err := loadInput(name, stdin)
	return input{name: name, data: data, err: err}
}

// loadInput reads one named input ("-": stdin), bounded by maxInputSize.
func loadInput(name string, stdin io.Reader) ([]byte, error) {
	return loadBounded(name, stdin, maxInputSize)
}

// loadBounded reads a named input of at most max bytes.
func loadBounded(name string, stdin io.Reader, max int64) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := openRegular(name)
		if err != nil {
			return nil, pathless(err)
		}
		defer func() { _ = f.Close() }() // read-only: nothing to lose
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, pathless(err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than %s, the most a document may be", sizeString(max))
	}
	return data, nil
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

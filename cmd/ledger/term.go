package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// Terminal helpers: whether a stream is a terminal, and colour. Colour is
// used only on a terminal, never when NO_COLOR is set to a non-empty value
// (https://no-color.org) or TERM is "dumb", and sparingly: verdict words
// (met / NOT MET, sound / damaged, OK / FAILED), never data a program
// reads (--json, raw documents, proofs).

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tone is what a coloured word says.
type tone int

const (
	toneGood tone = iota // met, sound, OK: green
	toneBad              // NOT MET, damaged, failed: bold red
	toneWarn             // worth a look: yellow
)

// code is the tone's SGR escape sequence.
func (t tone) code() string {
	switch t {
	case toneGood:
		return "\x1b[32m"
	case toneBad:
		return "\x1b[1;31m"
	}
	return "\x1b[33m"
}

const colourReset = "\x1b[0m"

// painter colours words for one output stream; the zero painter writes
// them plain.
type painter struct{ on bool }

// painter returns the painter for w: colour only when w is a terminal and
// neither NO_COLOR nor TERM=dumb says no.
func (e *env) painter(w io.Writer) painter {
	return painter{on: colourAllowed(e.lookupEnv) && isTerminal(w)}
}

// colourAllowed reports whether the environment allows colour at all.
func colourAllowed(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// paint returns text in the tone's colour, or text as it is.
func (p painter) paint(t tone, text string) string {
	if !p.on || text == "" {
		return text
	}
	return t.code() + text + colourReset
}

// visibleWidth is the number of runes of s a terminal shows: ANSI CSI
// sequences (colour) take no room. Tables align on it.
func visibleWidth(s string) int {
	if !strings.Contains(s, "\x1b[") {
		return utf8.RuneCountInString(s)
	}
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

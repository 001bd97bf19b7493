package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TextOptions controls the text rendering.
type TextOptions struct {
	// Color adds ANSI colours: the diff's added, removed and hunk lines,
	// and the verdicts. The caller decides, from whether the output is a
	// terminal and from NO_COLOR; without it the text has no escape
	// sequence at all.
	Color bool
}

// ANSI SGR sequences the text rendering uses.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
)

// textWriter writes a report, keeping the first write error.
type textWriter struct {
	w     io.Writer
	err   error
	color bool
}

func newTextWriter(w io.Writer, o TextOptions) *textWriter { return &textWriter{w: w, color: o.Color} }

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// paint wraps s in an SGR colour when colour is on.
func (t *textWriter) paint(sgr, s string) string {
	if !t.color || sgr == "" || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// field writes one "label  value" line of a report's heading, both made
// inert.
func (t *textWriter) field(label, value string) {
	t.printf("  %-17s %s\n", inert(label, false), inert(value, false))
}

// block writes a section of free text (spec, plan, diff, test log) under
// a title, each line behind a "| " gutter so that nothing in it can pass
// for a line of the report. A nil text is an absent section. style, when
// set, picks a colour for each line (already made inert).
func (t *textWriter) block(title string, text *string, style func(line string) string) {
	t.printf("\n%s\n", t.paint(sgrBold, title))
	switch {
	case text == nil:
		t.printf("  (no section)\n")
		return
	case *text == "":
		t.printf("  (empty)\n")
		return
	}
	body := strings.TrimSuffix(*text, "\n")
	for line := range strings.SplitSeq(body, "\n") {
		line = inert(strings.TrimSuffix(line, "\r"), true)
		sgr := ""
		if style != nil {
			sgr = style(line)
		}
		if line == "" {
			t.printf("  |\n")
			continue
		}
		t.printf("  | %s\n", t.paint(sgr, line))
	}
}

// verdictColor is the colour of a verdict word.
func verdictColor(v Verdict) string {
	switch v {
	case Matches:
		return sgrGreen
	case Contradicts:
		return sgrRed
	}
	return sgrYellow
}

// diffColor colours a unified diff line.
func diffColor(line string) string {
	switch {
	case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "),
		strings.HasPrefix(line, "diff "), strings.HasPrefix(line, "index "):
		return sgrBold
	case strings.HasPrefix(line, "@@"):
		return sgrCyan
	case strings.HasPrefix(line, "+"):
		return sgrGreen
	case strings.HasPrefix(line, "-"):
		return sgrRed
	}
	return ""
}

// cell is one table cell: its text, made inert, and an optional colour.
type cell struct {
	text string
	sgr  string
}

// table writes rows as left-aligned columns two spaces apart, indented
// by two; widths count runes, colours do not count.
func (t *textWriter) table(header []string, rows [][]cell) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	line := func(cells []cell) {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range cells {
			text := t.paint(c.sgr, c.text)
			if i == len(cells)-1 {
				b.WriteString(text)
				break
			}
			b.WriteString(text)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
		}
		t.printf("%s\n", strings.TrimRight(b.String(), " "))
	}
	hs := make([]cell, len(header))
	for i, h := range header {
		hs[i] = cell{text: h}
	}
	line(hs)
	for _, r := range rows {
		line(r)
	}
}

// plain makes a cell of untrusted text.
func plain(s string) cell { return cell{text: inert(s, false)} }

// yesNo renders an agreement: "yes", "no", or "-" when unknown.
func yesNo(agrees *bool) cell {
	switch {
	case agrees == nil:
		return cell{text: "-"}
	case *agrees:
		return cell{text: "yes", sgr: sgrGreen}
	}
	return cell{text: "NO", sgr: sgrRed}
}

// inert returns s made safe to print on a terminal: SGR colour sequences
// are dropped (they can hide text but say nothing); every other escape
// sequence, control character (tab too, unless keepTab), DEL, C1 control
// and bidirectional-text control is shown as a Go-style escape ("\x1b",
// "\u202e"), and so is each byte that is not UTF-8. Text with none of
// these is returned unchanged.
func inert(s string, keepTab bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || needsEscape(r, keepTab) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			if end := sgrEnd(s, i); end > 0 {
				i = end
				continue
			}
			b.WriteString(`\x1b`)
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && needsEscape(r, keepTab):
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r, keepTab):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether r must not reach a terminal as itself.
func needsEscape(r rune, keepTab bool) bool {
	switch {
	case r == '\t':
		return !keepTab
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional-text controls
	}
	return false
}

// sgrEnd returns the index after an SGR sequence ("ESC [ 1;31 m") that
// starts at s[i], or 0 when s[i:] does not start with one.
func sgrEnd(s string, i int) int {
	j := i + 1
	if j >= len(s) || s[j] != '[' {
		return 0
	}
	for j++; j < len(s); j++ {
		switch c := s[j]; {
		case c == 'm':
			return j + 1
		case c >= '0' && c <= '9', c == ';', c == ':':
		default:
			return 0
		}
	}
	return 0
}

// writeJSON writes v as one line of JSON, HTML characters unescaped.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("replay: write JSON: %w", err)
	}
	return nil
}

// dollars renders microdollars as "$0.000320".
func dollars(micro uint64) string {
	frac := strconv.FormatUint(micro%1e6, 10)
	return "$" + strconv.FormatUint(micro/1e6, 10) + "." + strings.Repeat("0", 6-len(frac)) + frac
}

func boolPtr(b bool) *bool { return &b }

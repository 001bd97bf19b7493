package vrfrun

import (
	"strings"
	"unicode"
)

// pyIsSpace is Python's str.isspace for one code point: Unicode white
// space plus the separators U+001C to U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F) }

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyText turns a program's output bytes into the str Python's
// subprocess.run(text=True) gives: UTF-8 (a byte that is not UTF-8 becomes
// U+FFFD; the reference would fail the whole request instead) with
// universal newlines, "\r\n" and "\r" read as "\n".
func pyText(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if strings.IndexByte(s, '\r') < 0 {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// pyPrefix is Python's s[:n] on a str: the first n code points.
func pyPrefix(s string, n int) string {
	for i := 0; i < len(s); {
		if n == 0 {
			return s[:i]
		}
		_, w := decodeWTF8(s[i:])
		i += w
		n--
	}
	return s
}

// clip caps a detail message at max code points (0: no cap), saying so.
func clip(s string, max int) string {
	if max <= 0 {
		return s
	}
	c := pyPrefix(s, max)
	if len(c) == len(s) {
		return s
	}
	return c + " [...]"
}

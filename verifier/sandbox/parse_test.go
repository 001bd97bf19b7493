package sandbox

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFileName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"dir/sub/file.py", true},
		{".hidden", true},
		{"a..b", true},
		{"", false},
		{"/etc/passwd", false},
		{"../x", false},
		{"a/../../x", false},
		{"a//b", false},
		{"a/./b", false},
		{"a/", false},
		{"a\x00b", false},
		{`a\b`, false},
		{strings.Repeat("x", 256), false},
		{strings.Repeat("x/", 600), false},
	} {
		if err := checkFileName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkFileName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzCheckFileName checks that every accepted Cmd.Files name stays inside
// the working directory.
func FuzzCheckFileName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "/a", "a/../b", ".", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if checkFileName(name) != nil {
			return
		}
		p := filepath.Join(workDir, filepath.FromSlash(name))
		if !strings.HasPrefix(p, workDir+"/") || filepath.Clean(name) != name {
			t.Errorf("accepted %q, which lands at %s", name, p)
		}
	})
}

func TestParseStat(t *testing.T) {
	const line = "42 (py thon) (x) R 1 42 42 0 -1 4194304 100 0 0 0 250 30 7 3 20 0 1 0 1234 10000000 777 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
	got, ok := parseStat(line)
	want := statFields{utime: 250, stime: 30, cutime: 7, cstime: 3, rss: 777}
	if !ok || got != want {
		t.Errorf("parseStat = %+v, %v; want %+v", got, ok, want)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) R 1 2 3", strings.Replace(line, " 250 ", " -5 ", 1), strings.Replace(line, " 777 ", " x ", 1)} {
		if _, ok := parseStat(bad); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// FuzzParseStat checks that parseStat never panics and never returns a
// negative count.
func FuzzParseStat(f *testing.F) {
	f.Add("42 (sh) S 1 42 42 0 -1 4194304 100 0 0 0 250 30 7 3 20 0 1 0 1234 10000000 777 0")
	f.Add("1 ())) R")
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseStat(s)
		if ok && (v.utime < 0 || v.stime < 0 || v.cutime < 0 || v.cstime < 0 || v.rss < 0) {
			t.Errorf("parseStat(%q) = %+v", s, v)
		}
	})
}

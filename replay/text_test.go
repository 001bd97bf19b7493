package replay

import "testing"

func TestInert(t *testing.T) {
	tests := []struct {
		in, want string
		keepTab  bool
	}{
		{"plain text, ünïcödé, 漢字", "plain text, ünïcödé, 漢字", false},
		{"\x1b[1;31mred\x1b[0m and \x1b[mreset", "red and reset", false},
		{"\x1b[8mhidden\x1b[28m", "hidden", false},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`, false},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`, false},
		{"\x1b[31", `\x1b[31`, false},
		{"tab\there", `tab\x09here`, false},
		{"tab\there", "tab\there", true},
		{"cr\rnl\nnul\x00del\x7f", `cr\x0dnl\x0anul\x00del\x7f`, true},
		{"c1 \u009b and \u0085", `c1 \u009b and \u0085`, false},
		{"\u202eevil\u202c \u2066iso\u2069 \u200f", `\u202eevil\u202c \u2066iso\u2069 \u200f`, false},
		{"bad \xff\xfe utf8 \xe2\x82", `bad \xff\xfe utf8 \xe2\x82`, false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := inert(tt.in, tt.keepTab); got != tt.want {
			t.Errorf("inert(%q, %v) = %q, want %q", tt.in, tt.keepTab, got, tt.want)
		}
	}
}

func TestDollars(t *testing.T) {
	for micro, want := range map[uint64]string{0: "$0.000000", 350: "$0.000350", 1_000_000: "$1.000000", 4_294_967_295: "$4294.967295"} {
		if got := dollars(micro); got != want {
			t.Errorf("dollars(%d) = %q, want %q", micro, got, want)
		}
	}
}

package witness

import (
	"errors"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/rvww"
)

func TestParseTaskID(t *testing.T) {
	want := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	for _, tc := range []struct {
		in     string
		reason string // "" when it parses to want
	}{
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", ""},
		{"6BA7B810-9DAD-11D1-80B4-00C04FD430C8", ""},
		{"6ba7b8109dad11d180b400c04fd430c8", ""},
		{"6ba7b810-9dad-11d1-80b4-00c04fd430c", "got 35 characters"},
		{"6ba7b810x9dad-11d1-80b4-00c04fd430c8", "is not a UUID"},
		{"6ba7b8109dad11d180b400c04fd430cg", "is not 32 hex digits"},
		{"{6ba7b810-9dad-11d1-80b4-00c04fd430c8}", "got 38 characters"},
		{"00000000-0000-0000-0000-000000000000", "nil UUID"},
		{"", "got 0 characters"},
	} {
		got, err := ParseTaskID(tc.in)
		if tc.reason == "" {
			if err != nil || got != want {
				t.Errorf("ParseTaskID(%q) = %x, %v; want %x", tc.in, got, err, want)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "task_id" || !strings.Contains(ie.Reason, tc.reason) || !errors.Is(err, codec.ErrMalformed) {
			t.Errorf("ParseTaskID(%q) = %x, %v; want a task_id error containing %q", tc.in, got, err, tc.reason)
		}
	}
}

func TestParseOutcome(t *testing.T) {
	for in, want := range map[string]rvww.Outcome{
		"solved": rvww.OutcomeSolved, "failed": rvww.OutcomeFailed,
		"skipped": rvww.OutcomeSkipped, "errored": rvww.OutcomeErrored,
	} {
		if got, err := ParseOutcome(in); err != nil || got != want {
			t.Errorf("ParseOutcome(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Solved", "error", "unknown(4)", "4"} {
		_, err := ParseOutcome(in)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "outcome" {
			t.Errorf("ParseOutcome(%q): got %v, want an outcome error", in, err)
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	for _, name := range []string{"restricted", "approved", "autonomous"} {
		p, ok := DefaultPolicy(name)
		d, isDefault := governance.DefaultByHash(p.Hash())
		if !ok || !isDefault || d.Name != name || p.Mode.String() != name {
			t.Errorf("DefaultPolicy(%q) = %+v, %v", name, p, ok)
		}
	}
	if p, ok := DefaultPolicy("Autonomous"); ok {
		t.Errorf("DefaultPolicy(\"Autonomous\") = %+v, want none", p)
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy("ci-small.yaml", []byte("mode: approved\nmax_cost_microdollars: 5\nmax_tool_calls: 1\n"))
	if err != nil || p.Mode != governance.ModeApproved || p.MaxCostMicrodollars != 5 || p.MaxToolCalls != 1 {
		t.Fatalf("got %+v, %v", p, err)
	}

	for _, tc := range []struct {
		name, in     string
		line, column int
		field        string
		reason       string
	}{
		{"bad tool on line 3", "mode: restricted\nallow:\n  - Read\n  - \"Bash|x\"\nmax_cost_microdollars: 1\nmax_tool_calls: 1\n", 4, 5, "allow[1]", "'|'"},
		{"several problems", "{\"mode\": \"sudo\", \"colour\": 1}", 0, 0, "mode", "(and 3 more problems)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yaml", []byte(tc.in))
			var ie *InputError
			var me *codec.MalformedError
			if !errors.As(err, &ie) || !errors.As(err, &me) {
				t.Fatalf("got %v, want an *InputError wrapping a *codec.MalformedError", err)
			}
			if ie.Input != "p.yaml" || ie.Line != tc.line || ie.Column != tc.column || ie.Field != tc.field || !strings.Contains(ie.Reason, tc.reason) {
				t.Errorf("got %+v (%q)", *ie, ie.Error())
			}
		})
	}
}

func TestInputErrorString(t *testing.T) {
	for _, tc := range []struct {
		e    InputError
		want string
	}{
		{InputError{Input: "t.jsonl", Line: 3, Column: 7, Field: "tokens", Reason: "bad"}, "t.jsonl:3:7: tokens: bad"},
		{InputError{Input: "t.jsonl", Line: 3, Reason: "bad"}, "t.jsonl:3: bad"},
		{InputError{Input: "p.yaml", Field: "mode", Reason: "bad"}, "p.yaml: mode: bad"},
		{InputError{Field: "task_id", Reason: "bad"}, "task_id: bad"},
		{InputError{Line: 2, Reason: "bad"}, "line 2: bad"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.e, got, tc.want)
		}
	}
}

package witness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/canonjson"
	"github.com/proofledger/ledger/codec/governance"
)

// sha8 is the first 8 bytes of SHA-256 of s, computed here independently
// of canonjson: the expected hashes below spell out the canonical JSON.
func sha8(s string) [8]byte {
	sum := sha256.Sum256([]byte(s))
	return [8]byte(sum[:8])
}

func hex8(t testing.TB, s string) [8]byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 8 {
		t.Fatalf("bad test hash %q", s)
	}
	return [8]byte(b)
}

func TestParseTrace(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Call
	}{
		{"empty input", "", nil},
		{"blank lines only", "\n  \n\t\r\n", nil},
		{"tool only", `{"tool":"Read"}`, []Call{{Tool: "Read", Line: 1}}},
		{
			"every figure and hex hashes",
			`{"tool":"Edit","args_hash":"3c92857ea27331e5","result_hash":"7031E48D5D70D47B","latency_ms":40,"cost_microdollars":4294967295,"tokens":0}`,
			[]Call{{Tool: "Edit", ArgsHash: hex8(t, "3c92857ea27331e5"), ResultHash: hex8(t, "7031e48d5d70d47b"),
				LatencyMS: 40, CostMicrodollars: 4294967295, Line: 1}},
		},
		{
			// Keys sorted, no spaces, non-ASCII escaped as \u00e9, floats as
			// Python's repr, exactly as json.dumps(sort_keys=True,
			// separators=(",", ":")) writes them.
			"args and result hashed over canonical JSON",
			`{"result": [1.50, "é", null], "tool": "Bash", "args": {"z": 1, "a": "cargo test"}}`,
			[]Call{{Tool: "Bash", ArgsHash: sha8(`{"a":"cargo test","z":1}`), ResultHash: sha8(`[1.5,"\u00e9",null]`), Line: 1}},
		},
		{"string args hashed with quotes", `{"tool":"Bash","args":"ls"}`, []Call{{Tool: "Bash", ArgsHash: sha8(`"ls"`), Line: 1}}},
		{
			"policy checks, CRLF and blank lines keep line numbers",
			"\r\n{\"tool\":\"Read\",\"policy_check\":\"allowed\"}\r\n\r\n{\"tool\":\"Bash\",\"policy_check\":\"denied\"}\n{\"tool\":\"Edit\",\"policy_check\":\"confirmed\"}",
			[]Call{
				{Tool: "Read", Recorded: governance.Allowed, HasRecorded: true, Line: 2},
				{Tool: "Bash", Recorded: governance.Denied, HasRecorded: true, Line: 4},
				{Tool: "Edit", Recorded: governance.Confirmed, HasRecorded: true, Line: 5},
			},
		},
		{"non-ASCII tool name", `{"tool":"Lire\u00e9"}`, []Call{{Tool: "Lireé", Line: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTrace("t.jsonl", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseTraceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		column   int
		field    string
		reason   string // a substring of the reason
	}{
		{"not JSON", "{\"tool\":\"Read\"}\n{\"tool\":", 2, 9, "", "invalid JSON"},
		{"duplicate key", `{"tool":"Read","tool":"Bash"}`, 1, 16, "", "duplicate"},
		{"trailing data", `{"tool":"Read"} x`, 1, 17, "", "invalid JSON"},
		{"array", `["Read"]`, 1, 0, "", "want a JSON object, got array"},
		{"missing tool", `{"args":{}}`, 1, 0, "tool", "missing"},
		{"empty tool", `{"tool":""}`, 1, 0, "tool", "empty tool name"},
		{"tool not a string", `{"tool":7}`, 1, 0, "tool", "want a string, got number"},
		{"lone surrogate in tool", `{"tool":"R\ud800"}`, 1, 0, "tool", "not valid Unicode"},
		{"unknown key", `{"tool":"Read","cost":5}`, 1, 0, "", `unknown key "cost"`},
		{"unknown key with a newline", `{"tool":"Read","\n":5}`, 1, 0, "", `unknown key "\n"`},
		{"args and args_hash", `{"tool":"Read","args":{},"args_hash":"0011223344556677"}`, 1, 0, "args_hash", "give args or args_hash, not both"},
		{"result_hash and result", `{"tool":"Read","result_hash":"0011223344556677","result":1}`, 1, 0, "result", "not both"},
		{"short hash", `{"tool":"Read","args_hash":"00112233445566"}`, 1, 0, "args_hash", "got 14 characters"},
		{"hash not hex", `{"tool":"Read","result_hash":"00112233445566zz"}`, 1, 0, "result_hash", "want 16 hex digits"},
		{"hash not a string", `{"tool":"Read","args_hash":null}`, 1, 0, "args_hash", "got null"},
		{"negative cost", `{"tool":"Read","cost_microdollars":-1}`, 1, 0, "cost_microdollars", "got -1"},
		{"float latency", `{"tool":"Read","latency_ms":1.0}`, 1, 0, "latency_ms", "got 1.0"},
		{"tokens too big", `{"tool":"Read","tokens":4294967296}`, 1, 0, "tokens", "got 4294967296"},
		{"tokens as string", `{"tool":"Read","tokens":"5"}`, 1, 0, "tokens", `got "5"`},
		{"unknown policy_check", `{"tool":"Read","policy_check":"ok"}`, 1, 0, "policy_check", `got "ok"`},
		{"policy_check as number", `{"tool":"Read","policy_check":0}`, 1, 0, "policy_check", "got 0"},
		{"error on a later line", "{\"tool\":\"Read\"}\n\n{\"tool\":\"Read\",\"tokens\":-5}\n", 3, 0, "tokens", "got -5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, err := ParseTrace("t.jsonl", []byte(tc.in))
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got calls %+v, error %v; want an *InputError", calls, err)
			}
			if calls != nil {
				t.Errorf("calls %+v returned with the error", calls)
			}
			if ie.Input != "t.jsonl" || ie.Line != tc.line || ie.Column != tc.column || ie.Field != tc.field || !strings.Contains(ie.Reason, tc.reason) {
				t.Errorf("got %+v (%q), want line %d column %d field %q reason containing %q", *ie, ie.Error(), tc.line, tc.column, tc.field, tc.reason)
			}
			if !errors.Is(err, codec.ErrMalformed) {
				t.Error("error does not wrap codec.ErrMalformed")
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "t.jsonl:") {
				t.Errorf("error %q is not one line naming the input", msg)
			}
		})
	}
}

func TestParseTraceCallLimit(t *testing.T) {
	line := `{"tool":"Read"}` + "\n"
	data := []byte(strings.Repeat(line, 65535))
	calls, err := ParseTrace("t", data)
	if err != nil || len(calls) != 65535 {
		t.Fatalf("65535 calls: got %d, %v", len(calls), err)
	}
	_, err = ParseTrace("t", append(data, line...))
	var ie *InputError
	if !errors.As(err, &ie) || ie.Line != 65536 || !strings.Contains(ie.Reason, "more than 65535") {
		t.Fatalf("65536 calls: got %v", err)
	}
}

// traceLine writes c as a trace line that ParseTrace reads back to c
// (hashes as hex, figures always present).
func traceLine(c Call) string {
	ms := []canonjson.Member{
		{Key: keyTool, Value: canonjson.MakeString(c.Tool)},
		{Key: keyArgsHash, Value: canonjson.MakeString(hex.EncodeToString(c.ArgsHash[:]))},
		{Key: keyResultHash, Value: canonjson.MakeString(hex.EncodeToString(c.ResultHash[:]))},
		{Key: keyLatency, Value: canonjson.MakeUint(uint64(c.LatencyMS))},
		{Key: keyCost, Value: canonjson.MakeUint(uint64(c.CostMicrodollars))},
		{Key: keyTokens, Value: canonjson.MakeUint(uint64(c.Tokens))},
	}
	if c.HasRecorded {
		ms = append(ms, canonjson.Member{Key: keyPolicyCheck, Value: canonjson.MakeString(c.Recorded.String())})
	}
	return string(canonjson.Canonical(canonjson.MakeObject(ms...)))
}

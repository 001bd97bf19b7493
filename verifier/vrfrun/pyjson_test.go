package vrfrun

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// pyJSONCorpus are JSON texts chosen for the places where Python's json
// differs from other readers and writers.
var pyJSONCorpus = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `-0.0`, `0.0`, `1.0`, `1.5`, `1E2`, `1e-7`, `1e-05`, `1e16`,
	`1e+16`, `123456789012345678901234567890`, `-98765432109876543210`, `1e400`, `-1e400`, `2e-400`, `5e-324`,
	`0.1`, `0.30000000000000004`, `3.141592653589793`, `1.7976931348623157e308`, `123456789.123456789`,
	`1.50`, `100.0`, `9007199254740993`, `9007199254740993.0`, `1.0000000000000002`, `4.35`, `2.675`,
	`NaN`, `Infinity`, `-Infinity`, `[NaN, Infinity, -Infinity]`,
	`"plain"`, `""`, `"quote\" back\\ slash\/"`, `"\b\f\n\r\t"`, `"\u0000\u0001\u001f\u007f\u0080"`,
	`"é✓𝄞"`, `"\u00e9\u2713\ud834\udd1e"`, `"\ud800"`, `"\udfff"`, `"\ud834x"`, `"\ud834\u0041"`, `"\udd1e\ud834"`,
	`"\u2028\u2029\u00a0\u1680\u3000\u200b\ufeff"`, `"\u0085 nel"`, `"\u001c\u001d\u001e\u001f"`,
	`"it's"`, `"say \"hi\""`, `"both ' and \""`, `"\ue000 private"`, `"\u0378 unassigned"`,
	`"  padded \t\n"`, `"\u00ad soft hyphen"`, `"\u0300 combining"`,
	`{"b": 1, "a": 2, "A": 3, "": 4, "é": 5, "z": {"y": [1, {"x": null}]}}`,
	`{"a": 1, "b": 2, "a": 3}`, `{"a": {"x": 1}, "a": [2]}`,
	`{"\ud800": 1, "\ud834\udd1e": 2, "\uffff": 3, "\ue000": 4}`,
	`[1, "two", 3.0, [true, false, null], {"k": "v"}]`,
	` [ 1 , 2 ] `, "\t{\"a\"\n:\r1}",
	// Not JSON to Python: every one must be refused by both.
	``, ` `, `[`, `{"a"}`, `{"a":}`, `{a: 1}`, `[1,]`, `{"a": 1,}`, `01`, `1.`, `.5`, `+1`, `-`, `1e`, `--1`,
	`"unterminated`, `"bad \x escape"`, `"\u12"`, `"\uZZZZ"`, `"\ud834\uZZZZ"`, "\"raw\ttab\"", "\"raw\nnewline\"",
	`nul`, `True`, `nan`, `-NaN`, `[1] 2`, `{"a": 1} x`, `'single'`, "\ufeff[1]",
}

// pyFacts is what python3 says about one text.
type pyFacts struct {
	Err     string `json:"err"` // "json" (JSONDecodeError), "value" (other ValueError), "" (parsed)
	Sorted  string `json:"sorted"`
	Plain   string `json:"plain"`
	Compact string `json:"compact"`
	Repr    string `json:"repr"`
	Str     string `json:"str"`
	Truthy  bool   `json:"truthy"`
	Strip   string `json:"strip"`
	Len     int    `json:"len"`
	IsStr   bool   `json:"is_str"`
	Type    string `json:"type"`
	// BytesOK: json.loads(bytes) accepts the text's bytes too.
	BytesOK bool `json:"bytes_ok"`
}

const pyFactsScript = `
import json, sys
def enc(s):
    return s.encode("utf-8", "surrogatepass").hex()
out = []
for h in json.load(sys.stdin):
    raw = bytes.fromhex(h)
    r = {"err": ""}
    try:
        v = json.loads(raw.decode("utf-8", "surrogatepass"))
    except json.JSONDecodeError:
        r["err"] = "json"
    except ValueError:
        r["err"] = "value"
    else:
        r["sorted"] = enc(json.dumps(v, sort_keys=True))
        r["plain"] = enc(json.dumps(v))
        r["compact"] = enc(json.dumps(v, separators=(",", ":")))
        r["repr"] = enc(repr(v))
        r["str"] = enc(str(v))
        r["truthy"] = bool(v)
        r["type"] = type(v).__name__
        if isinstance(v, str):
            r["is_str"] = True
            r["strip"] = enc(v.strip())
            r["len"] = len(v)
    try:
        json.loads(raw)
        r["bytes_ok"] = True
    except ValueError:
        r["bytes_ok"] = False
    out.append(r)
json.dump(out, sys.stdout)
`

func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		if p, err = exec.LookPath("python3"); err != nil {
			t.Skip("skipping: no python3 to compare with")
		}
	}
	return p
}

// askPython runs pyFactsScript over the texts.
func askPython(t *testing.T, texts []string) []pyFacts {
	t.Helper()
	hexes := make([]string, len(texts))
	for i, s := range texts {
		hexes[i] = hex.EncodeToString([]byte(s))
	}
	in, _ := json.Marshal(hexes)
	cmd := exec.Command(python3(t), "-c", pyFactsScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.String())
	}
	var facts []pyFacts
	if err := json.Unmarshal(out, &facts); err != nil {
		t.Fatal(err)
	}
	if len(facts) != len(texts) {
		t.Fatalf("python3 answered %d of %d", len(facts), len(texts))
	}
	return facts
}

func unhex(t *testing.T, h string) string {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPyJSONAgainstPython compares the reader, json.dumps in its three
// forms, str(), repr(), bool(), str.strip() and len() with python3's, over
// the corpus and over random values.
func TestPyJSONAgainstPython(t *testing.T) {
	texts := append([]string(nil), pyJSONCorpus...)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 400; i++ {
		texts = append(texts, string(randomJSON(rng, 0)))
	}
	facts := askPython(t, texts)
	for i, text := range texts {
		f := facts[i]
		v, err := parseText(text)
		if f.Err != "" {
			if err == nil {
				t.Errorf("%q: Python refuses it (%s error) but parseText read %s", text, f.Err, pyRepr(v))
			} else if je := err.(*jsonError); je.fatal != (f.Err == "value") {
				t.Errorf("%q: Python raises a %s error, parseText's fatal is %v", text, f.Err, je.fatal)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: Python reads it, parseText: %v", text, err)
			continue
		}
		check := func(what, got, want string) {
			if got != want {
				t.Errorf("%q: %s\n got %q\nwant %q", text, what, got, want)
			}
		}
		check("json.dumps(sort_keys=True)", dumps(v, true), unhex(t, f.Sorted))
		check("json.dumps()", dumps(v, false), unhex(t, f.Plain))
		check("json.dumps(separators)", string(appendDumps(nil, v, dumpOpts{compact: true})), unhex(t, f.Compact))
		check("repr()", pyRepr(v), unhex(t, f.Repr))
		check("str()", pyStr(v), unhex(t, f.Str))
		check("type().__name__", v.typeName(), f.Type)
		if v.truthy() != f.Truthy {
			t.Errorf("%q: bool() %v, Python %v", text, v.truthy(), f.Truthy)
		}
		if f.IsStr {
			check("strip()", pyStrip(v.s), unhex(t, f.Strip))
			if n := pyLen(v.s); n != f.Len {
				t.Errorf("%q: len() %d, Python %d", text, n, f.Len)
			}
		}
		_, berr := parseBody([]byte(text))
		if (berr == nil) != f.BytesOK {
			t.Errorf("%q: json.loads(bytes) ok=%v, parseBody error %v", text, f.BytesOK, berr)
		}
	}
}

// randomJSON writes a random JSON text, with the literal spellings and
// string contents the corpus cares about.
func randomJSON(rng *rand.Rand, depth int) []byte {
	var b []byte
	n := rng.IntN(10)
	if depth > 3 {
		n = rng.IntN(7)
	}
	switch n {
	case 0:
		return []byte("null")
	case 1:
		return []byte(strconv.FormatBool(rng.IntN(2) == 0))
	case 2:
		return []byte(strconv.FormatInt(rng.Int64N(1<<62)-1<<61, 10))
	case 3:
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = rng.Float64() * 1e6
		}
		return []byte(strconv.FormatFloat(f, "eEg"[rng.IntN(3)], -1, 64))
	case 4:
		return []byte(fmt.Sprintf("%d.%de%d", rng.IntN(1000), rng.IntN(1000), rng.IntN(40)-20))
	case 5, 6:
		return randomString(rng)
	case 7:
		b = append(b, '[')
		for i := rng.IntN(4); i > 0; i-- {
			b = append(b, randomJSON(rng, depth+1)...)
			if i > 1 {
				b = append(b, ", "...)
			}
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i := rng.IntN(4); i > 0; i-- {
			b = append(b, randomString(rng)...)
			b = append(b, ':')
			b = append(b, randomJSON(rng, depth+1)...)
			if i > 1 {
				b = append(b, ',')
			}
		}
		return append(b, '}')
	}
}

func randomString(rng *rand.Rand) []byte {
	pieces := []string{"a", "Z", " ", "'", `\"`, `\\`, `\/`, `\n`, `\t`, `\u0000`, `\u001f`, `\u007f`, "é", "✓", "𝄞",
		`\ud800`, `\udc00`, `\ud834\udd1e`, `\u2028`, `\u00a0`, `\u0085`, `\u001c`, "\u0378", "\ue000", "\u200b", `\u00ad`}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := rng.IntN(6); i > 0; i-- {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	sb.WriteByte('"')
	return []byte(sb.String())
}

// TestParseBodyOffsets checks that body errors name the byte offset of
// the problem.
func TestParseBodyOffsets(t *testing.T) {
	for _, c := range []struct {
		body   string
		offset int
	}{
		{`{"tier": 0, "output": `, 22},
		{`{"tier": 0} x`, 12},
		{"{\"x\": \"a\x01b\"}", 8},
		{"{\"x\": \"\xff\"}", 7},
		{`[1, 2`, 5},
		{"  \n", 3},
	} {
		_, err := parseBody([]byte(c.body))
		je, ok := err.(*jsonError)
		if !ok {
			t.Errorf("%q: want a *jsonError, got %v", c.body, err)
			continue
		}
		if je.Offset != c.offset {
			t.Errorf("%q: offset %d, want %d (%v)", c.body, je.Offset, c.offset, je)
		}
	}
}

// TestParseDepth checks the nesting limit: maxDepth levels are read,
// one more is a fatal error (Python's RecursionError, not a decode error).
func TestParseDepth(t *testing.T) {
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := parseText(ok); err != nil {
		t.Fatalf("%d levels: %v", maxDepth, err)
	}
	deep := "[" + ok + "]"
	_, err := parseText(deep)
	je, isJE := err.(*jsonError)
	if !isJE || !je.fatal {
		t.Fatalf("%d levels: want a fatal error, got %v", maxDepth+1, err)
	}
}

package rollback

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec"
)

var at = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestSignParseVerify(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	data, err := Sign("4DD8A17E0EC94C3097D5C35AB4881D8D", true, at, "reverted the migration", priv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if r.TaskID != "4dd8a17e-0ec9-4c30-97d5-c35ab4881d8d" || !r.RestoredClean || !r.At.Equal(at) || !r.Signed() {
		t.Errorf("parsed %+v", r)
	}
	if fs := r.Verify(); len(fs) != 0 {
		t.Errorf("verify: %v", fs)
	}
	tampered := []byte(strings.Replace(string(data), `"restored_clean": true`, `"restored_clean": false`, 1))
	r2, err := Parse(tampered)
	if err != nil {
		t.Fatal(err)
	}
	if fs := r2.Verify(); len(fs) != 1 || fs[0].Code != "content_hash_mismatch" {
		t.Errorf("tampered: %v", fs)
	}
	unsigned, err := Sign("4dd8a17e-0ec9-4c30-97d5-c35ab4881d8d", false, at, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := Parse(unsigned)
	if err != nil || r3.Signed() || len(r3.Verify()) != 0 {
		t.Errorf("unsigned: %v %v", r3, err)
	}
	if r3.ID() != "4dd8a17e-0ec9-4c30-97d5-c35ab4881d8d@rollback@2026-11-21T10:00:00Z" {
		t.Errorf("ID = %s", r3.ID())
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ in, field string }{
		{`[]`, ""},
		{`{"kind":"rollback","restored_clean":true,"at":"2026-11-21T10:00:00Z"}`, "task_id"},
		{`{"kind":"rollback","task_id":"not-a-task","restored_clean":true,"at":"2026-11-21T10:00:00Z"}`, "task_id"},
		{`{"kind":"rollback","task_id":"4dd8a17e0ec94c3097d5c35ab4881d8d","restored_clean":"yes","at":"2026-11-21T10:00:00Z"}`, "restored_clean"},
		{`{"kind":"rollback","task_id":"4dd8a17e0ec94c3097d5c35ab4881d8d","restored_clean":true,"at":"yesterday"}`, "at"},
		{`{"kind":"rollforward","task_id":"4dd8a17e0ec94c3097d5c35ab4881d8d","restored_clean":true,"at":"2026-11-21T10:00:00Z"}`, "kind"},
		{`{"kind":"rollback","task_id":"4dd8a17e0ec94c3097d5c35ab4881d8d","restored_clean":true,"at":"2026-11-21T10:00:00Z","signature":{"algorithm":"rsa"}}`, "signature.algorithm"},
	} {
		_, err := Parse([]byte(tc.in))
		if !errors.Is(err, codec.ErrMalformed) {
			t.Errorf("Parse(%s) = %v, want malformed", tc.in, err)
			continue
		}
		found := false
		for _, f := range codec.FindingsOf(err) {
			if f.Field == tc.field {
				found = true
			}
		}
		if !found {
			t.Errorf("Parse(%s): %v does not name %q", tc.in, err, tc.field)
		}
	}
}

func FuzzParse(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	signed, _ := Sign("4dd8a17e0ec94c3097d5c35ab4881d8d", true, at, "r", priv)
	f.Add(signed)
	f.Add([]byte(`{"kind":"rollback","task_id":"4dd8a17e-0ec9-4c30-97d5-c35ab4881d8d","restored_clean":false,"at":"2026-11-21T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			if !errors.Is(err, codec.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		r.Verify()
		r.Summary()
	})
}

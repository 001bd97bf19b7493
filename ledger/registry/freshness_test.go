package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/proofledger/ledger/ledger"
)

// TestFreshnessSetting checks the freshness setting's keys and values:
// set writes the shortest Go duration under freshness/max-age and
// freshness/max-skew, zero removes a key, any Go duration is read back,
// and a value that is not one (or an unknown freshness key) is corrupt.
func TestFreshnessSetting(t *testing.T) {
	m := newMemStore()
	r := New(m)
	if f, err := r.Freshness(); err != nil || !f.Off() {
		t.Fatalf("empty ledger: %+v, %v; want no limits", f, err)
	}
	if err := r.SetFreshness(Freshness{MaxAge: 720 * time.Hour, MaxSkew: 90 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if a, s := string(m.settings["freshness/max-age"]), string(m.settings["freshness/max-skew"]); a != "720h" || s != "1m30s" {
		t.Errorf("settings %q, %q; want 720h, 1m30s", a, s)
	}
	if f, err := r.Freshness(); err != nil || f != (Freshness{MaxAge: 720 * time.Hour, MaxSkew: 90 * time.Second}) {
		t.Errorf("read back %+v, %v", f, err)
	}
	if err := r.SetFreshness(Freshness{MaxSkew: 5 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.settings["freshness/max-age"]; ok || string(m.settings["freshness/max-skew"]) != "5m" {
		t.Errorf("after clearing max-age: %q", m.settings)
	}
	if err := r.SetFreshness(Freshness{MaxAge: -time.Second}); !errors.Is(err, ErrBadDuration) {
		t.Errorf("negative max-age: %v", err)
	}
	for _, tc := range []struct{ name, value string }{
		{"freshness/max-age", "5m0s"}, // any Go duration is read
		{"freshness/max-age", "soon"},
		{"freshness/max-age", "-5m"},
		{"freshness/max-age", "0s"},
		{"freshness/max-window", "5m"},
	} {
		m := newMemStore()
		m.settings[tc.name] = []byte(tc.value)
		_, err := New(m).Freshness()
		if ok := tc.value == "5m0s"; ok != (err == nil) || !ok && !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("%s = %q: %v", tc.name, tc.value, err)
		}
	}
}

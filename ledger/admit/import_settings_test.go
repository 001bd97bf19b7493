package admit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofledger/ledger/codec/governance"
	"github.com/proofledger/ledger/codec/keys"
	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/ledger"
	"github.com/proofledger/ledger/ledger/registry"
)

// settingsSource is a ledger with every kind of setting: two registered
// HMAC keys, a custom policy registered after one of its bundles was
// appended and before another, trusted signers, and settings this binary
// does not know.
type settingsSource struct {
	l             *Ledger
	ciKey, spare  []byte
	custom        governance.Policy
	trusted       string
	unknownValues map[string][]byte
}

var ciKeyID = registry.KeyID([]byte("seedref-rvww-hmac-key-0123456789"))

// customBundle is a bundle of task n under policy p, signed with key.
func customBundle(t testing.TB, n int, p governance.Policy, key []byte) []byte {
	t.Helper()
	id := sha256.Sum256([]byte(fmt.Sprint("task", n)))
	b := &rvww.Bundle{
		Header: rvww.Header{TaskID: [16]byte(id[:16]), PolicyHash: p.Hash(), CreatedNS: uint64(testEpoch.Add(time.Duration(n) * time.Hour).UnixNano()),
			Outcome: rvww.OutcomeSolved, Mode: rvww.Mode(p.Mode)},
		// Bash is denied by the custom policy: a violation once it is known.
		Calls:   []rvww.ToolCall{{Action: "Bash", PolicyCheck: rvww.PolicyCheck(p.Check("Bash")), CostMicrodollars: 10, LatencyMS: 5, Tokens: 7}},
		HasSpec: true, Spec: []byte("spec"),
	}
	data, err := rvww.Encode(b, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func newSettingsSource(t testing.TB) *settingsSource {
	t.Helper()
	ctx := context.Background()
	s := &settingsSource{l: newLedger(t, ledger.Options{}), ciKey: []byte("seedref-rvww-hmac-key-0123456789"), spare: []byte("spare secret"),
		unknownValues: map[string][]byte{"freshness/max-age": []byte("72h"), "zz-future/blob": {0, 1, 2, 0xff, '\n'}}}
	var err error
	if s.custom, err = governance.ParsePolicy(readFile(t, "../../testdata/rvww/policies/custom_read_grep.json")); err != nil {
		t.Fatal(err)
	}
	reg := s.l.Registry()
	for name, secret := range map[string][]byte{"ci-runner": s.ciKey, "spare": s.spare} {
		if _, err := reg.AddHMACKey(keys.HMACKey{Name: name, Secret: secret}); err != nil {
			t.Fatal(err)
		}
	}
	signer := testKey(5)
	s.trusted = keys.SignerID(signer.Public().(ed25519.PublicKey))
	if _, err := reg.AddTrustedSigner(s.trusted); err != nil {
		t.Fatal(err)
	}
	for name, v := range s.unknownValues {
		if err := s.l.SetSetting(name, v); err != nil {
			t.Fatal(err)
		}
	}
	appendOK := func(subs ...Submission) {
		t.Helper()
		out, err := s.l.Append(ctx, subs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Status != ledger.StatusAppended {
				t.Fatalf("%s: %s %s", o.Name, o.Status, o.Reason)
			}
		}
	}
	// A bundle under the custom policy before it is registered (policy
	// unknown), then receipts and more bundles after.
	appendOK(Submission{Name: "b0", Data: customBundle(t, 0, s.custom, s.ciKey), Arrival: testEpoch})
	if _, err := reg.AddPolicy(s.custom); err != nil {
		t.Fatal(err)
	}
	appendOK(Submission{Name: "r1", Data: receipt(t, signer, 1, "agent", "", -1), Arrival: testEpoch.Add(time.Second)},
		Submission{Name: "b2", Data: customBundle(t, 2, s.custom, s.ciKey), Arrival: testEpoch.Add(2 * time.Second)},
		Submission{Name: "b3", Data: customBundle(t, 3, governance.Autonomous(), s.ciKey), Arrival: testEpoch.Add(3 * time.Second)})
	// The two custom bundles' leaves differ in policy_known.
	for seq, known := range map[int64]bool{0: false, 2: true} {
		ev, err := s.l.Event(seq, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(ev.Encode(), []byte(`"policy_known":true`)); got != known {
			t.Fatalf("event %d: policy_known %v, want %v", seq, got, known)
		}
	}
	return s
}

func (s *settingsSource) archive(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	st, err := s.l.Export(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	// policy/<hash>, trust/ed25519/<hex>, and the two unknown ones.
	if st.Settings != 4 || st.Secrets != 2 || st.Events != 4 {
		t.Fatalf("export: %+v", st)
	}
	return buf.Bytes()
}

// settingsOf returns every setting and secret of the ledger in dir.
func settingsOf(t testing.TB, dir string) (settings, secrets map[string]string) {
	t.Helper()
	l, err := ledger.Open(dir, ledger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return settingsFrom(t, l)
}

// settingsFrom returns every setting and secret of an open ledger.
func settingsFrom(t testing.TB, l *ledger.Ledger) (settings, secrets map[string]string) {
	t.Helper()
	settings, secrets = map[string]string{}, map[string]string{}
	if err := l.Settings("", func(n string, v []byte) error { settings[n] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.Secrets("", func(n string, v []byte) error { secrets[n] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	return settings, secrets
}

// treeOf describes every file below dir (and beside it, for staging
// directories): path, mode and content hash. lock.info is left out: it
// names the latest process to take the writer lock, which a failed import
// is (it is not ledger state).
func treeOf(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	parent := filepath.Dir(dir)
	err := filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "lock.info" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[strings.TrimPrefix(p, parent)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportRestoresSettings exports a ledger with every kind of setting
// and imports it: the new ledger has the same settings and secrets, and
// the same root (the bundle appended before its policy was registered
// stays policy-unknown); its own export carries the same settings.
func TestImportRestoresSettings(t *testing.T) {
	ctx := context.Background()
	src := newSettingsSource(t)
	arch := src.archive(t)
	srcSettings, srcSecrets := settingsFrom(t, src.l.Ledger)
	for _, tc := range []struct {
		name string
		opts ImportOptions
	}{
		{"keys by name", ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare}}},
		{"key files with a newline, matched by id", ImportOptions{Options: Options{HMACKeys: []keys.HMACKey{
			{Name: "a.key", Secret: append(slices.Clone(src.spare), '\n')}, {Name: "b.key", Secret: src.ciKey}}}}},
		{"asked for", ImportOptions{SecretFor: func(name, id string) ([]byte, error) {
			return map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare}[name], nil
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "restored")
			st, err := Import(ctx, dir, bytes.NewReader(arch), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := src.l.TreeHash(src.l.Size())
			if st.Root != want || st.Events != 4 || st.Settings != 4 || st.HMACKeys != 2 {
				t.Errorf("import: %+v", st)
			}
			settings, secrets := settingsOf(t, dir)
			if !mapsEqual(settings, srcSettings) || !mapsEqual(secrets, srcSecrets) {
				t.Errorf("settings %v\nsecrets %v\nwant %v\n%v", settings, secrets, srcSettings, srcSecrets)
			}
			l, err := Open(dir, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = l.Close() }()
			if ts, _ := l.Registry().TrustedSignerList(); !slices.Equal(ts, []string{src.trusted}) {
				t.Errorf("trusted signers %v", ts)
			}
			ps, _ := l.Registry().Policies()
			if len(ps) != 1 || ps[0].Hash() != src.custom.Hash() {
				t.Errorf("policies %v", ps)
			}
			var again bytes.Buffer
			if _, err := l.Export(ctx, &again); err != nil {
				t.Fatal(err)
			}
			ar, err := ledger.NewArchiveReader(&again)
			if err != nil {
				t.Fatal(err)
			}
			defer ar.Close()
			orig, err := ledger.NewArchiveReader(bytes.NewReader(arch))
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			a, b := ar.Header(), orig.Header()
			if fmt.Sprint(a.Settings, a.Secrets) != fmt.Sprint(b.Settings, b.Secrets) {
				t.Errorf("re-export carries other settings:\n%v %v\n%v %v", a.Settings, a.Secrets, b.Settings, b.Secrets)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestImportSecretsAndConflicts checks that an import fails before
// anything is written (the target directory and its parent unchanged,
// byte for byte) when an HMAC key is missing or wrong, or when the target
// has a conflicting setting; and that the target's identical settings are
// no conflict.
func TestImportSecretsAndConflicts(t *testing.T) {
	ctx := context.Background()
	src := newSettingsSource(t)
	arch := src.archive(t)
	spareID := registry.KeyID(src.spare)
	both := map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, l *Ledger) // the target, when it is an existing ledger
		opts    ImportOptions
		err     error
		msg     string
		missing []SecretRef
	}{
		{name: "no keys, new directory", err: ErrMissingSecret,
			missing: []SecretRef{{"ci-runner", ciKeyID}, {"spare", spareID}}},
		{name: "no keys, empty ledger", prepare: func(*testing.T, *Ledger) {}, err: ErrMissingSecret,
			missing: []SecretRef{{"ci-runner", ciKeyID}, {"spare", spareID}}},
		{name: "one key given", opts: ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey}}, err: ErrMissingSecret,
			missing: []SecretRef{{"spare", spareID}}},
		{name: "asked, none", opts: ImportOptions{SecretFor: func(name, id string) ([]byte, error) {
			return nil, fmt.Errorf("no terminal: %w", ErrMissingSecret)
		}}, err: ErrMissingSecret, missing: []SecretRef{{"ci-runner", ciKeyID}, {"spare", spareID}}},
		{name: "asked, failing", opts: ImportOptions{SecretFor: func(name, id string) ([]byte, error) {
			return nil, errors.New("terminal gone")
		}}, msg: "terminal gone"},
		{name: "wrong key by name", opts: ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.spare, "spare": src.spare}}, err: ErrWrongSecret,
			msg: fmt.Sprintf(`the secret given for HMAC key "ci-runner" has key id %s; the archive's "ci-runner" is %s`, spareID, ciKeyID)},
		{name: "wrong key asked for", opts: ImportOptions{SecretFor: func(name, id string) ([]byte, error) { return []byte("guess"), nil }}, err: ErrWrongSecret},
		{name: "a key the archive does not have", opts: ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare, "other": src.spare}},
			err: ErrWrongSecret, msg: `HMAC key "other" was given, but the archive's ledger had no key of that name (its keys: "ci-runner", "spare")`},
		{name: "target has the key name with another secret", opts: ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey}},
			prepare: func(t *testing.T, l *Ledger) {
				if _, err := l.Registry().AddHMACKey(keys.HMACKey{Name: "spare", Secret: []byte("not the spare")}); err != nil {
					t.Fatal(err)
				}
			}, err: ErrSettingConflict, msg: `the target ledger's HMAC key "spare" is ` + registry.KeyID([]byte("not the spare")) + ", the archive's is " + spareID},
		{name: "target has a setting with other bytes", opts: ImportOptions{HMACSecrets: both},
			prepare: func(t *testing.T, l *Ledger) {
				if err := l.SetSetting("freshness/max-age", []byte("24h")); err != nil {
					t.Fatal(err)
				}
			}, err: ErrSettingConflict, msg: `the target ledger's setting "freshness/max-age" differs from the archive's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "target")
			if tc.prepare != nil {
				if err := ledger.Init(dir, ledger.InitOptions{Origin: "target"}); err != nil {
					t.Fatal(err)
				}
				l, err := Open(dir, ledger.Options{})
				if err != nil {
					t.Fatal(err)
				}
				tc.prepare(t, l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			before := treeOf(t, dir)
			_, err := Import(ctx, dir, bytes.NewReader(arch), tc.opts)
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("import = %v, want %v with %q", err, tc.err, tc.msg)
			}
			if errors.Is(tc.err, ErrSettingConflict) && !errors.Is(err, ledger.ErrImport) {
				t.Errorf("a conflict does not wrap ledger.ErrImport: %v", err)
			}
			var me *MissingSecretsError
			if tc.missing != nil && (!errors.As(err, &me) || !slices.Equal(me.Keys, tc.missing)) {
				t.Errorf("missing %+v, want %+v", me, tc.missing)
			}
			if after := treeOf(t, dir); !mapsEqual(before, after) {
				t.Errorf("the failed import changed the files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	// The target's own identical key and settings are no conflict, and the
	// key need not be given again.
	dir := filepath.Join(t.TempDir(), "target")
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "target"}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Registry().AddHMACKey(keys.HMACKey{Name: "spare", Secret: src.spare}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetSetting("freshness/max-age", []byte("72h")); err != nil {
		t.Fatal(err)
	}
	if err := l.SetSetting("target/own", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, dir, bytes.NewReader(arch), ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey}}); err != nil {
		t.Fatal(err)
	}
	settings, secrets := settingsOf(t, dir)
	if settings["target/own"] != "kept" || settings["freshness/max-age"] != "72h" || len(secrets) != 2 {
		t.Errorf("settings %v, secrets %d", settings, len(secrets))
	}
}

// TestImportSettingsTampered checks that the settings note covers the
// settings: a changed, added or removed setting or secret id, or a note
// signed by another key, fails the import; and that a pinned key that did
// not sign the archive fails it too.
func TestImportSettingsTampered(t *testing.T) {
	ctx := context.Background()
	src := newSettingsSource(t)
	lines := archiveLines(t, src.l)
	lines[len(lines)-1] = bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))
	// lines: header, 4 settings, 2 secrets, 4 events.
	if !bytes.HasPrefix(lines[1], []byte(`{"setting":"freshness/max-age"`)) || !bytes.HasPrefix(lines[5], []byte(`{"secret":"hmac-ci-runner"`)) {
		t.Fatalf("archive layout:\n%s", bytes.Join(lines[:7], nil))
	}
	edit := func(i int, old, new string) [][]byte {
		out := slices.Clone(lines)
		out[i] = bytes.Replace(lines[i], []byte(old), []byte(new), 1)
		if bytes.Equal(out[i], lines[i]) {
			t.Fatalf("edit of line %d found no %q", i, old)
		}
		return out
	}
	without := func(i int, count string) [][]byte {
		out := slices.Delete(slices.Clone(lines), i, i+1)
		out[0] = bytes.Replace(out[0], []byte(count+"4"), []byte(count+"3"), 1)
		return out
	}
	// Another ledger with the same log key and one more setting: its note
	// verifies, and signs other settings.
	other := newSettingsSource(t)
	if err := other.l.SetSetting("one/more", []byte("x")); err != nil {
		t.Fatal(err)
	}
	otherHdr := string(archiveLines(t, other.l)[0])
	noteOf := func(hdr string) string {
		i := strings.Index(hdr, `"settings_note":"`)
		j := strings.Index(hdr[i+17:], `"`)
		return hdr[i+17 : i+17+j]
	}
	opts := ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare}}
	for name, c := range map[string]struct {
		lines [][]byte
		msg   string
	}{
		"setting value":   {edit(1, `"value":"NzJo"`, `"value":"NDho"`), "the archive's settings differ from those its settings note signs"}, // 72h → 48h
		"bad base64":      {edit(1, `"value":"`, `"value":"AA`), "line 2 (setting 1 of 4): illegal base64"},
		"secret id":       {edit(5, ciKeyID[5:9], "0000"), "the archive's settings differ"},
		"setting removed": {without(1, `"settings":`), "the archive's settings differ"},
		"note":            {edit(0, noteOf(string(lines[0])), noteOf(otherHdr)), "the archive's settings differ"},
		"count":           {edit(0, `"secrets":2`, `"secrets":1`), "the archive's settings differ"},
		"order":           {func() [][]byte { o := slices.Clone(lines); o[1], o[2] = o[2], o[1]; return o }(), "does not follow"},
		"no note":         {edit(0, `,"settings_note":"`+noteOf(string(lines[0]))+`"`, ""), "needs checkpoint, settings, secrets and settings_note"},
	} {
		_, err := Import(ctx, filepath.Join(t.TempDir(), "t"), bytes.NewReader(compress(t, c.lines)), opts)
		if !errors.Is(err, ledger.ErrImport) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", name, err, c.msg)
		}
	}
	// Pinned to another log's key: the checkpoint fails first.
	pinned := opts
	pinned.VerifierKey = "test.example/ledger+00000000+AQ" + strings.Repeat("A", 42) + "="
	if _, err := Import(ctx, filepath.Join(t.TempDir(), "t"), bytes.NewReader(compress(t, lines)), pinned); !errors.Is(err, ledger.ErrImport) {
		t.Errorf("pinned to another key: %v", err)
	}
	if _, err := Import(ctx, filepath.Join(t.TempDir(), "t"), bytes.NewReader(compress(t, lines)), opts); err != nil {
		t.Errorf("the intact archive: %v", err)
	}
}

// TestImportOlderArchives imports archives of versions 1 and 2 (no
// settings; version 1 has no checkpoint either), made from a version-3
// archive by dropping what they lack.
func TestImportOlderArchives(t *testing.T) {
	ctx := context.Background()
	src := newLedger(t, ledger.Options{})
	appendReceipts(t, src, 0, 20)
	if out, err := src.Append(ctx, vectorSubs(t), hmacOpts(t)); err != nil || out[2].Status != ledger.StatusAppended {
		t.Fatalf("append: %v %+v", err, out)
	}
	lines := archiveLines(t, src)
	lines[len(lines)-1] = bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))
	header := func(version int, drop ...string) string {
		var h map[string]any
		if err := json.Unmarshal(lines[0], &h); err != nil {
			t.Fatal(err)
		}
		h["version"] = version
		for _, k := range drop {
			if _, ok := h[k]; !ok {
				t.Fatalf("header has no %q", k)
			}
			delete(h, k)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	v2 := header(2, "settings", "secrets", "settings_note")
	v1 := header(1, "settings", "secrets", "settings_note", "checkpoint", "verifier_key")
	for _, tc := range []struct {
		version int
		header  string
		signer  string
	}{
		{2, v2, src.VerifierKey()},
		{1, v1, ""},
	} {
		t.Run(fmt.Sprint("version ", tc.version), func(t *testing.T) {
			arch := append([][]byte{[]byte(tc.header)}, lines[1:]...)
			st, err := Import(ctx, filepath.Join(t.TempDir(), "restored"), bytes.NewReader(compress(t, arch)), ImportOptions{Options: hmacOpts(t)})
			if err != nil {
				t.Fatalf("%v\nheader %s", err, tc.header)
			}
			want, _ := src.TreeHash(src.Size())
			if st.Root != want || st.Events != 23 || st.Signer != tc.signer || st.Settings != 0 || st.HMACKeys != 0 {
				t.Errorf("import: %+v", st)
			}
			// A version-2 header with settings fields is not one.
			bad := strings.Replace(tc.header, `"size":`, `"settings":0,"size":`, 1)
			if _, err := Import(ctx, filepath.Join(t.TempDir(), "bad"), bytes.NewReader(compress(t, append([][]byte{[]byte(bad)}, lines[1:]...))), ImportOptions{Options: hmacOpts(t)}); !errors.Is(err, ledger.ErrImport) {
				t.Errorf("version %d header with settings: %v", tc.version, err)
			}
		})
	}
}

// TestImportInterruptedKeepsTarget cancels an import of an archive with
// settings after its first chunk of events (the bundle appended before
// its policy was registered is a chunk of its own): the target ledger,
// with its own settings, is left as it was, byte for byte, and a second
// import succeeds.
func TestImportInterruptedKeepsTarget(t *testing.T) {
	src := newSettingsSource(t)
	arch := src.archive(t)
	dir := filepath.Join(t.TempDir(), "target")
	if err := ledger.Init(dir, ledger.InitOptions{Origin: "target"}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetSetting("target/own", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chunks := 0
	opts := ImportOptions{HMACSecrets: map[string][]byte{"ci-runner": src.ciKey, "spare": src.spare},
		Progress: func(int64) { chunks++; cancel() }}
	if _, err := Import(ctx, dir, bytes.NewReader(arch), opts); !errors.Is(err, context.Canceled) || chunks != 1 {
		t.Fatalf("interrupted import: %v after %d chunks", err, chunks)
	}
	if after := treeOf(t, dir); !mapsEqual(before, after) {
		t.Errorf("the interrupted import changed the files:\nbefore %v\nafter  %v", before, after)
	}
	opts.Progress = nil
	if st, err := Import(context.Background(), dir, bytes.NewReader(arch), opts); err != nil || st.Events != 4 {
		t.Fatalf("import after the interrupted one: %+v %v", st, err)
	}
	settings, _ := settingsOf(t, dir)
	if settings["target/own"] != "kept" || len(settings) != 5 {
		t.Errorf("settings after the import: %v", settings)
	}
}

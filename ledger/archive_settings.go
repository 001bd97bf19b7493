package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// An archive of version 3 carries the ledger's settings after its header:
// every setting under setting/ with its bytes, whatever it means (the
// store does not interpret them, so settings added later travel too), and
// every secret by name and an id that does not reveal it (never the
// secret). The header counts them and carries a note signed with the log
// key over the header's origin, size and root and the SHA-256 of those
// lines, so that the checkpoint's verifier key vouches for the settings as
// it does for the events (docs/FORMAT.md).

// settingsNoteHeader is the first line of the settings note's text: it
// keeps the note from ever reading as a checkpoint, whose first line is
// the origin and whose second is a number.
const settingsNoteHeader = "ledger-export-settings/v1"

// Bounds on the settings an archive may carry.
const (
	maxArchiveSettings      = 1 << 20
	maxArchiveSettingsBytes = maxArchiveLine
	maxSecretID             = 128
)

// ExportOptions configure Export.
type ExportOptions struct {
	// SecretID names a secret in the archive without revealing it (the
	// registry's HMAC key id). It is required when the ledger holds
	// secrets: an archive never carries one.
	SecretID func(name string, value []byte) (string, error)
}

// ArchiveSetting is a setting an archive carries: its name under setting/
// and its bytes.
type ArchiveSetting struct {
	Name  string
	Value []byte
}

// ArchiveSecret is a secret an archive names: its name under secrets/ and
// its id (ExportOptions.SecretID); the secret itself is not in the archive.
type ArchiveSecret struct {
	Name string
	ID   string
}

type settingLine struct {
	Setting string `json:"setting"`
	Value   []byte `json:"value"`
}

type secretLine struct {
	Secret string `json:"secret"`
	ID     string `json:"id"`
}

// validSecretID reports whether id can name a secret in an archive: 1 to
// 128 printable ASCII characters, no space.
func validSecretID(id string) error {
	if id == "" || len(id) > maxSecretID {
		return fmt.Errorf("secret id %.40q: want 1 to %d characters", id, maxSecretID)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("secret id %.40q: only printable ASCII without spaces", id)
		}
	}
	return nil
}

// archiveSettings reads the ledger's settings and names its secrets, and
// returns them as archive lines (each ending in a newline) with their
// counts.
func (l *Ledger) archiveSettings(opts ExportOptions) (lines []byte, settings, secrets int, err error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err = l.Settings("", func(name string, value []byte) error {
		settings++
		return enc.Encode(settingLine{Setting: name, Value: value})
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("export the settings: %w", err)
	}
	err = l.Secrets("", func(name string, value []byte) error {
		if opts.SecretID == nil {
			return fmt.Errorf("the ledger holds secret %q and the export has no way to name it", name)
		}
		id, err := opts.SecretID(name, value)
		if err != nil {
			return fmt.Errorf("secret %q: %w", name, err)
		}
		if err := validSecretID(id); err != nil {
			return fmt.Errorf("secret %q: %w", name, err)
		}
		secrets++
		return enc.Encode(secretLine{Secret: name, ID: id})
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("export the secrets' names: %w", err)
	}
	if settings+secrets > maxArchiveSettings || buf.Len() > maxArchiveSettingsBytes {
		return nil, 0, 0, fmt.Errorf("export: %d settings and secrets in %d bytes, more than an archive carries", settings+secrets, buf.Len())
	}
	return buf.Bytes(), settings, secrets, nil
}

// settingsNoteText is the text the settings note signs.
func settingsNoteText(origin string, size int64, root tlog.Hash, digest [sha256.Size]byte) string {
	return settingsNoteHeader + "\n" + origin + "\n" + strconv.FormatInt(size, 10) + "\n" + b64(root[:]) + "\n" + b64(digest[:]) + "\n"
}

// signSettings signs the settings note with the log key (read from the
// ledger directory when the ledger was opened read-only).
func (l *Ledger) signSettings(size int64, root tlog.Hash, lines []byte) ([]byte, error) {
	s := l.signer
	if s == nil {
		priv, err := keyOf(l.fs, l.dir)
		if err != nil {
			return nil, fmt.Errorf("export: the log key signs the settings: %w", err)
		}
		if s, err = newNoteSigner(l.origin, priv); err != nil {
			return nil, err
		}
	}
	if s.vkey != l.vkey {
		return nil, fmt.Errorf("%w: the log key does not match the verifier key %s", ErrCorrupt, l.vkey)
	}
	signed, err := note.Sign(&note.Note{Text: settingsNoteText(l.origin, size, root, sha256.Sum256(lines))}, s.s)
	if err != nil {
		return nil, fmt.Errorf("export: sign the settings: %w", err)
	}
	return signed, nil
}

// readSettings reads the settings and secret lines that follow a version-3
// header, checking their counts, names, order and total size.
func (a *ArchiveReader) readSettings(settings, secrets int) error {
	if settings < 0 || secrets < 0 || settings+secrets > maxArchiveSettings {
		return fmt.Errorf("%w: header: %d settings and %d secrets", ErrImport, settings, secrets)
	}
	h := sha256.New()
	total := 0
	next := func(what string) ([]byte, error) {
		raw, err := a.lr.next(maxArchiveLine)
		a.line++
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: line %d: the archive ends before its %s", ErrImport, a.line, what)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrImport, a.line, err)
		}
		total += len(raw) + 1
		if total > maxArchiveSettingsBytes {
			return nil, fmt.Errorf("%w: line %d: the settings take more than %d MiB", ErrImport, a.line, maxArchiveSettingsBytes>>20)
		}
		h.Write(raw)
		h.Write([]byte{'\n'})
		return raw, nil
	}
	prev := ""
	for i := range settings {
		raw, err := next("settings")
		if err != nil {
			return err
		}
		var s settingLine
		if err := strictUnmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: line %d (setting %d of %d): %v", ErrImport, a.line, i+1, settings, err)
		}
		if err := validName(s.Setting, true); err != nil {
			return fmt.Errorf("%w: line %d: setting: %v", ErrImport, a.line, err)
		}
		if i > 0 && s.Setting <= prev {
			return fmt.Errorf("%w: line %d: setting %q does not follow %q in name order", ErrImport, a.line, s.Setting, prev)
		}
		prev = s.Setting
		a.header.Settings = append(a.header.Settings, ArchiveSetting{Name: s.Setting, Value: s.Value})
	}
	prev = ""
	for i := range secrets {
		raw, err := next("secrets")
		if err != nil {
			return err
		}
		var s secretLine
		if err := strictUnmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: line %d (secret %d of %d): %v", ErrImport, a.line, i+1, secrets, err)
		}
		if err := validName(s.Secret, false); err != nil {
			return fmt.Errorf("%w: line %d: secret: %v", ErrImport, a.line, err)
		}
		if err := validSecretID(s.ID); err != nil {
			return fmt.Errorf("%w: line %d: secret %q: %v", ErrImport, a.line, s.Secret, err)
		}
		if i > 0 && s.Secret <= prev {
			return fmt.Errorf("%w: line %d: secret %q does not follow %q in name order", ErrImport, a.line, s.Secret, prev)
		}
		prev = s.Secret
		a.header.Secrets = append(a.header.Secrets, ArchiveSecret{Name: s.Secret, ID: s.ID})
	}
	copy(a.header.settingsDigest[:], h.Sum(nil))
	return nil
}

// verifySettings checks the settings note under vkey: it must verify and
// sign the header's origin, size and root and the settings read.
func (h ArchiveHeader) verifySettings(vkey string) error {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return fmt.Errorf("%w: verifier key: %v", ErrImport, err)
	}
	n, err := note.Open(h.SettingsNote, note.VerifierList(v))
	if err != nil {
		return fmt.Errorf("%w: the archive's settings note does not verify under %s: %v", ErrImport, vkey, err)
	}
	if want := settingsNoteText(h.Origin, h.Size, h.Root, h.settingsDigest); n.Text != want {
		return fmt.Errorf("%w: the archive's settings differ from those its settings note signs", ErrImport)
	}
	return nil
}

package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/proofledger/ledger/proof"
)

// The derived entries (the store's identity, digest and time indexes, the
// Rules' entries and the projections) are recomputed from the leaves into
// a scratch store, then compared with the stored ones by merging the two
// sorted keyspaces: one sequential pass each, whatever the log's size,
// and an entry on either side that the other lacks is found as surely as
// one that differs.

// scratch is a temporary Pebble store that holds the recomputed entries;
// close removes it.
type scratch struct {
	fs  vfs.FS
	dir string
	db  *pebble.DB
}

// openScratch makes the scratch store in AuditOptions.ScratchDir, else in
// the ledger's directory (on the file system that holds the store, which
// is sized for it, never a memory-backed /tmp), else in the OS temp
// directory when the ledger's directory cannot be written.
func (a *auditor) openScratch() (_ *scratch, err error) {
	l := a.l
	fs := l.fs
	parent := a.opts.ScratchDir
	if parent == "" {
		parent = l.dir
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails
	dir := fs.PathJoin(parent, "audit-scratch-"+hex.EncodeToString(rnd[:]))
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		if a.opts.ScratchDir != "" || fs != vfs.Default {
			return nil, fmt.Errorf("audit: scratch directory: %w", err)
		}
		d, terr := os.MkdirTemp("", "ledger-audit-")
		if terr != nil {
			return nil, fmt.Errorf("audit: scratch directory: %w", errors.Join(err, terr))
		}
		dir = d
	}
	sc := &scratch{fs: fs, dir: dir}
	defer func() {
		if err != nil {
			_ = fs.RemoveAll(dir) // err is the error to report
		}
	}()
	o := &pebble.Options{
		FS:                 fs,
		Logger:             pebbleLogger{l: l.log},
		FormatMajorVersion: pebble.FormatNewest,
		DisableWAL:         true, // removed after use: nothing to recover
		MemTableSize:       32 << 20,
		CacheSize:          16 << 20,
	}
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	o.EnsureDefaults()
	if sc.db, err = pebble.Open(dir, o); err != nil {
		return nil, fmt.Errorf("audit: scratch store %s: %w", dir, err)
	}
	return sc, nil
}

// close closes and removes the scratch store.
func (s *scratch) close() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.db.Close(), s.fs.RemoveAll(s.dir))
}

// deriver writes what each event implies into the scratch store: the
// store's own entries, the Rules' entries and the projections, committed
// every RebuildChunk events as a rebuild commits them.
type deriver struct {
	sc    *scratch
	rules Rules
	projs []Projector
	b     *pebble.Batch
	pbs   []ProjectionBatch
	n     int
	werr  error // the first failure of the scratch store met by a projection
}

func (a *auditor) openDerived() error {
	sc, err := a.openScratch()
	if err != nil {
		return err
	}
	a.scratch = sc
	projs := make([]Projector, len(a.opts.Projectors))
	for i, p := range a.opts.Projectors {
		projs[i] = p
		if r, ok := p.(Rebuilder); ok {
			projs[i] = r.ForRebuild(a.v.size)
		}
	}
	a.derive = &deriver{sc: sc, rules: a.l.rules, projs: projs}
	return nil
}

func (a *auditor) closeDerived() error {
	if a.derive != nil && a.derive.b != nil {
		_ = a.derive.b.Close() // releases memory; fails only for a batch closed twice
		a.derive.b = nil
	}
	return a.scratch.close()
}

// scratchWriter is the Writer projections get: reads see the scratch
// store as of the batch's start, writes go into the batch.
type scratchWriter struct{ d *deriver }

func (w scratchWriter) Get(key []byte) ([]byte, error) {
	v, err := getCopy(w.d.sc.db, key)
	if err != nil && !errors.Is(err, ErrNotFound) && w.d.werr == nil {
		w.d.werr = fmt.Errorf("audit: scratch store: %w", err)
	}
	return v, err
}

func (w scratchWriter) Set(key, value []byte) error {
	err := w.d.b.Set(key, value, nil)
	if err != nil && w.d.werr == nil {
		w.d.werr = fmt.Errorf("audit: scratch store: %w", err)
	}
	return err
}

func (w scratchWriter) Delete(key []byte) error {
	err := w.d.b.Delete(key, nil)
	if err != nil && w.d.werr == nil {
		w.d.werr = fmt.Errorf("audit: scratch store: %w", err)
	}
	return err
}

// add writes what event s (its leaf decoded as ev) implies.
func (d *deriver) add(a *auditor, s int64, ev *Event) error {
	if d.b == nil {
		d.b = d.sc.db.NewBatch()
		d.pbs = make([]ProjectionBatch, len(d.projs))
		for i, p := range d.projs {
			d.pbs[i] = p.Begin()
		}
	}
	var errs []error
	for _, kv := range storeEntries(ev) {
		errs = append(errs, d.b.Set(kv.Key, kv.Value, nil))
	}
	if d.rules != nil {
		for _, kv := range d.rules.Entries(&ev.Leaf) {
			errs = append(errs, d.b.Set(kv.Key, kv.Value, nil))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit: scratch store: %w", err)
	}
	w := scratchWriter{d}
	for i, pb := range d.pbs {
		if err := pb.Project(w, ev); err != nil {
			if d.werr != nil {
				return d.werr
			}
			a.problem(s, "event %d: projection %s refuses its leaf: %v", s, d.projs[i].Name(), err)
		}
	}
	d.n++
	if d.n%RebuildChunk == 0 {
		return d.commit()
	}
	return nil
}

// commit writes the gathered projections and commits the batch.
func (d *deriver) commit() error {
	w := scratchWriter{d}
	for i, pb := range d.pbs {
		if err := pb.Flush(w); err != nil {
			if d.werr != nil {
				return d.werr
			}
			return fmt.Errorf("audit: projection %s: %w", d.projs[i].Name(), err)
		}
	}
	err := d.b.Commit(pebble.NoSync)
	_ = d.b.Close() // releases memory; fails only for a batch closed twice
	d.b, d.pbs = nil, nil
	if err != nil {
		return fmt.Errorf("audit: scratch store: %w", err)
	}
	return nil
}

// finish commits what is left.
func (d *deriver) finish() error {
	if d == nil || d.b == nil {
		return nil
	}
	return d.commit()
}

// Who owns a derived keyspace.
const (
	ownStore = iota // the store's own indexes: their values name the event
	ownRules        // the Rules' entries
	ownProj         // the projections
)

// derivedSpace is one keyspace the audit compares.
type derivedSpace struct {
	prefix []byte
	name   string // for messages: "identity index entry"
	owner  int
}

// pendingProblem is a differing derived entry waiting for the event it
// derives from to be named (attribute).
type pendingProblem struct {
	what  string
	owner int
	seq   int64
}

// compareDerived compares every derived keyspace with its recomputation.
func (a *auditor) compareDerived(ctx context.Context) error {
	spaces := []derivedSpace{
		{prefixIdent, "identity index entry", ownStore},
		{prefixDigest, "digest index entry", ownStore},
		{prefixTime, "time index entry", ownStore},
	}
	if a.l.stale.Load() {
		a.problem(-1, "the derived entries (chains, tasks, projections) are incomplete: a rebuild was interrupted, so they were not compared (the next command that opens the ledger for writing rebuilds them)")
	} else {
		if a.l.rules != nil {
			for _, p := range a.l.rules.Keyspaces() {
				spaces = append(spaces, derivedSpace{p, "index entry", ownRules})
			}
		}
		if len(a.opts.Projectors) > 0 {
			spaces = append(spaces, derivedSpace{ProjectionPrefix, "projection entry", ownProj})
		}
	}
	a.pendingAttr = map[string]*pendingProblem{}
	for _, sp := range spaces {
		if err := a.merge(ctx, sp); err != nil {
			return err
		}
	}
	return a.attribute(ctx)
}

// merge walks a keyspace of the store and of the scratch store in step.
func (a *auditor) merge(ctx context.Context, sp derivedSpace) (err error) {
	sIt, err := viewIter(a.v, sp.prefix, prefixEnd(sp.prefix))
	if err != nil {
		return err
	}
	defer closeIter(sIt, &err)
	rIt, err := a.scratch.db.NewIter(&pebble.IterOptions{LowerBound: sp.prefix, UpperBound: prefixEnd(sp.prefix)})
	if err != nil {
		return fmt.Errorf("audit: scratch store: %w", err)
	}
	defer func() {
		if cerr := rIt.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("audit: scratch store: %w", cerr)
		}
	}()
	sOK, rOK := sIt.First(), rIt.First()
	// A stored read that fails ends the comparison there: the entries
	// after it are unread, not missing.
	stopped := func(ok bool) error {
		if !ok {
			if err := sIt.Error(); err != nil {
				return fmt.Errorf("audit: reading the %s keys: %w", sp.prefix, storeErr(err))
			}
		}
		return nil
	}
	if err := stopped(sOK); err != nil {
		return err
	}
	for n := 0; sOK || rOK; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		c := 0
		switch {
		case !rOK:
			c = -1
		case !sOK:
			c = 1
		default:
			c = bytes.Compare(sIt.Key(), rIt.Key())
		}
		if sp.owner == ownProj {
			a.rep.Projections++
		} else {
			a.rep.Entries++
		}
		switch {
		case c < 0:
			a.derivedProblem(sp, sIt.Key(), sIt.Value(), nil)
			sOK = sIt.Next()
			if err := stopped(sOK); err != nil {
				return err
			}
		case c > 0:
			a.derivedProblem(sp, rIt.Key(), nil, rIt.Value())
			rOK = rIt.Next()
		default:
			if !bytes.Equal(sIt.Value(), rIt.Value()) {
				a.derivedProblem(sp, sIt.Key(), sIt.Value(), rIt.Value())
			}
			sOK, rOK = sIt.Next(), rIt.Next()
			if err := stopped(sOK); err != nil {
				return err
			}
		}
	}
	if err := sIt.Error(); err != nil {
		return storeErr(err)
	}
	if err := rIt.Error(); err != nil {
		return fmt.Errorf("audit: scratch store: %w", err)
	}
	return nil
}

// derivedProblem records a derived entry that is only stored (recomputed
// nil), only recomputed (stored nil) or different.
func (a *auditor) derivedProblem(sp derivedSpace, key, stored, recomputed []byte) {
	var what string
	switch {
	case recomputed == nil:
		what = fmt.Sprintf("%s %s is not implied by any event (it holds %s)", sp.name, entryName(key), valueText(stored))
	case stored == nil:
		what = fmt.Sprintf("%s %s is missing (the events imply %s)", sp.name, entryName(key), valueText(recomputed))
	default:
		what = fmt.Sprintf("%s %s holds %s, the events imply %s", sp.name, entryName(key), valueText(stored), valueText(recomputed))
	}
	if sp.owner == ownStore {
		// The store's entries name their event: the recomputed one is
		// right, a stored one only when it names an event of the log.
		v := recomputed
		if v == nil {
			v = stored
		}
		if seq, ok := storeEntrySeq(sp.prefix, key, v); ok && seq < a.v.size {
			a.problem(seq, "event %d: %s", seq, what)
			return
		}
		a.problem(-1, "%s", what)
		return
	}
	if recomputed == nil {
		// No event implies it: there is no event to name.
		a.problem(-1, "%s", what)
		return
	}
	if len(a.pendingList) >= a.probs.max {
		a.probs.drop() // beyond what the report lists anyway
		return
	}
	p := &pendingProblem{what: what, owner: sp.owner, seq: -1}
	a.pendingAttr[string(key)] = p
	a.pendingList = append(a.pendingList, p)
}

// storeEntrySeq reads the event a store index entry names.
func storeEntrySeq(prefix, key, value []byte) (int64, bool) {
	var b []byte
	switch {
	case bytes.Equal(prefix, prefixTime):
		if len(key) != len(prefixTime)+16 {
			return 0, false
		}
		b = key[len(prefixTime)+8:]
	default: // identity and digest entries start with the seq
		if len(value) < 8 {
			return 0, false
		}
		b = value[:8]
	}
	seq := int64(binary.BigEndian.Uint64(b))
	return seq, seq >= 0
}

// captureWriter is the Writer attribute runs one event's projections
// through: reads see the recomputed entries, writes only name the event.
type captureWriter struct {
	a   *auditor
	seq int64
}

func (w *captureWriter) Get(key []byte) ([]byte, error) { return getCopy(w.a.scratch.db, key) }
func (w *captureWriter) Set(key, _ []byte) error        { w.touch(key); return nil }
func (w *captureWriter) Delete(key []byte) error        { w.touch(key); return nil }

func (w *captureWriter) touch(key []byte) {
	if p := w.a.pendingAttr[string(key)]; p != nil {
		p.seq = w.seq
	}
}

// attribute names the event each differing Rules or projection entry
// derives from, by one more pass over the leaves (only when some differ):
// the event whose Rules.Entries hold the key, or the last event whose
// projection writes it. The problems are recorded then.
func (a *auditor) attribute(ctx context.Context) error {
	if len(a.pendingList) == 0 {
		return nil
	}
	var rules, projs bool
	for _, p := range a.pendingList {
		rules = rules || p.owner == ownRules
		projs = projs || p.owner == ownProj
	}
	cw := &captureWriter{a: a}
	// Every stored leaf, in key order, whether or not it is in its place
	// (the scan reported those that are not): what the entries were
	// recomputed from.
	it, err := viewIter(a.v, prefixLeaf, prefixEnd(prefixLeaf))
	if err != nil {
		return err
	}
	var lp proof.LeafParser
	for ok, n := it.First(), 0; ok; ok, n = it.Next(), n+1 {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				_ = it.Close() // ctx's error is the one to report
				return err
			}
		}
		ev, err := decodeLeafString(&lp, string(it.Value()))
		if err != nil {
			continue
		}
		if rules && a.l.rules != nil {
			for _, kv := range a.l.rules.Entries(&ev.Leaf) {
				if p := a.pendingAttr[string(kv.Key)]; p != nil {
					p.seq = ev.Seq
				}
			}
		}
		if projs {
			cw.seq = ev.Seq
			for _, p := range a.opts.Projectors {
				pb := p.Begin()
				// A leaf a projection refuses was reported by the scan.
				if pb.Project(cw, ev) == nil {
					_ = pb.Flush(cw) // captureWriter's writes never fail
				}
			}
		}
	}
	// A read that fails leaves the entries not yet named unnamed.
	if err := errors.Join(it.Error(), it.Close()); err != nil && !errors.Is(storeErr(err), ErrCorrupt) {
		return storeErr(err)
	}
	for _, p := range a.pendingList {
		switch {
		case p.seq < 0:
			a.problem(-1, "%s", p.what)
		case p.owner == ownProj:
			a.problem(p.seq, "event %d: %s (the last event it derives from)", p.seq, p.what)
		default:
			a.problem(p.seq, "event %d: %s", p.seq, p.what)
		}
	}
	return nil
}

// entryName renders a derived entry's key for a message: its keyspace
// ("x/rollup/"), then the rest as text with the unprintable bytes escaped,
// or in hex when it is mostly binary; bounded.
func entryName(k []byte) string {
	cut := 0 // the keyspace: the printable run's last '/'
	for i, c := range k {
		if c < 0x20 || c >= 0x7f {
			break
		}
		if c == '/' && i < 24 {
			cut = i + 1
		}
	}
	space, rest := k[:cut], k[cut:]
	printable := 0
	for _, c := range rest {
		if c >= 0x20 && c < 0x7f {
			printable++
		}
	}
	var b strings.Builder
	b.Write(space)
	if printable*20 < len(rest)*13 { // under 65% printable: binary (a digest is about 37%)
		if len(rest) > 48 {
			fmt.Fprintf(&b, "%x…", rest[:48])
		} else {
			fmt.Fprintf(&b, "%x", rest)
		}
		return b.String()
	}
	for _, c := range rest {
		if b.Len() >= 120 {
			b.WriteString("…")
			break
		}
		if c >= 0x20 && c < 0x7f && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	return b.String()
}

// valueText renders a stored value for a message, bounded.
func valueText(v []byte) string {
	if len(v) == 0 {
		return "an empty value"
	}
	return shortHex(v)
}

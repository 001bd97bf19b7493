package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"github.com/proofledger/ledger/codec"
)

// The refusal journal records every refused append: what was offered,
// when, by whom, for which agent, and why. It is not evidence: it is not
// in the Merkle log, no projection reads it, a rebuild leaves it alone
// and the audit does not check it. Its records are written in the batch
// whose commit decides the refusals (so a refusal is as durable as the
// events of its batch, and acknowledged only once that batch is on disk),
// and it keeps only the newest records (RefusalLimit; the oldest are
// trimmed in the same batch). Per-agent counters by reason survive the
// trimming. Keys (docs/FORMAT.md):
//
//	refusal/<n 8>                      a record, n dense from the oldest kept
//	refusal-count/<agent>\0<reason>    u64 refusals of that agent for that reason
var (
	prefixRefusal      = []byte("refusal/")
	prefixRefusalCount = []byte("refusal-count/")
)

// DefaultRefusalLimit is how many records the refusal journal keeps
// unless the ledger's refusals/keep setting says otherwise.
const DefaultRefusalLimit = 100_000

// MaxRefusalLimit bounds the refusals/keep setting.
const MaxRefusalLimit = 100_000_000

// refusalLimitSetting is the setting holding the journal's bound, in
// decimal ASCII.
const refusalLimitSetting = "refusals/keep"

// maxJournalString bounds each string a record keeps (the reason text,
// identity, agent, submitter): a refusal of a hostile document cannot make
// the journal grow by more than a few KB.
const maxJournalString = 1024

// journalFormat is the first byte of a record's value.
const journalFormat = 1

// Reason codes of refusals: the status of a replay or conflict, the class
// of a rejection.
const (
	ReasonReplay    = string(StatusReplay)
	ReasonConflict  = string(StatusConflict)
	ReasonMalformed = RejectMalformed
	ReasonInvalid   = RejectInvalid
	ReasonTrust     = RejectTrust
	ReasonLink      = RejectLink
	ReasonStale     = RejectStale
	ReasonFuture    = RejectFuture
)

// RefusalReasons are the reason codes a refusal can have, in the order
// reports list them.
var RefusalReasons = []string{ReasonReplay, ReasonConflict, ReasonMalformed, ReasonInvalid, ReasonTrust, ReasonLink, ReasonStale, ReasonFuture}

// ErrBadReason: not a reason code of the refusal journal.
var ErrBadReason = errors.New("unknown refusal reason")

// ParseRefusalReason checks a reason code (RefusalReasons).
func ParseRefusalReason(s string) (string, error) {
	for _, r := range RefusalReasons {
		if s == r {
			return r, nil
		}
	}
	return "", fmt.Errorf("%w %.40q: want one of %s", ErrBadReason, s, strings.Join(RefusalReasons, ", "))
}

// reasonOf is an outcome's reason code: its status, or for a rejection
// or a stale document its class.
func reasonOf(o *Outcome) string {
	if o.Status == StatusRejected || o.Status == StatusStale && o.Class != "" {
		if o.Class == "" {
			return string(StatusRejected)
		}
		return o.Class
	}
	return string(o.Status)
}

// ReasonCode is the refusal journal's reason code of o (RefusalReasons):
// its status, or its class for a rejection or a stale document; "" when
// o was appended.
func (o *Outcome) ReasonCode() string {
	if o.Status == StatusAppended {
		return ""
	}
	return reasonOf(o)
}

// RefusalRecord is one record of the refusal journal.
type RefusalRecord struct {
	// N is the record's number in the journal: dense, increasing, never
	// reused (the oldest records are trimmed).
	N int64
	// Time is when the document was refused: its arrival time, never
	// earlier than the previous record's.
	Time time.Time
	// Kind and ID are the document's identity, as far as it was decoded
	// (empty for a document that could not be).
	Kind codec.Kind
	ID   string
	// Digest is the SHA-256 of the document's bytes.
	Digest [32]byte
	// Status is the outcome (replay, conflict, rejected, stale), Class the
	// rejection class, Reason the reason code (ReasonReplay...) and Detail
	// the outcome's reason text, cut to 1 KiB.
	Status Status
	Class  string
	Reason string
	Detail string
	// Agent is who the document speaks for, as admission knew it (empty
	// when unknown); Submitter who offered it (for example "cli:alice").
	Agent     string
	Submitter string
	// Event is the event a replay or conflict collided with, -1 otherwise.
	Event int64
}

func refusalKey(n int64) []byte { return join(prefixRefusal, u64(uint64(n))) }

func refusalCountKey(agent, reason string) []byte {
	return join(prefixRefusalCount, []byte(agent), []byte{0}, []byte(reason))
}

// cut bounds a journal string at maxJournalString bytes, on a rune
// boundary.
func cut(s string) string {
	if len(s) <= maxJournalString {
		return s
	}
	i := maxJournalString
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

func (r *RefusalRecord) encode() []byte {
	b := []byte{journalFormat}
	b = binary.AppendVarint(b, r.Time.UnixNano())
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(string(r.Kind))
	str(r.ID)
	b = append(b, r.Digest[:]...)
	str(string(r.Status))
	str(r.Class)
	str(r.Reason)
	str(r.Detail)
	str(r.Agent)
	str(r.Submitter)
	return binary.AppendUvarint(b, uint64(r.Event+1))
}

// decodeRefusal reads the record stored under key; anything but what
// encode writes is an error wrapping ErrCorrupt that names the key.
func decodeRefusal(key, v []byte) (*RefusalRecord, error) {
	bad := func(what string) (*RefusalRecord, error) {
		return nil, fmt.Errorf("%w: %s: refusal record: %s", ErrCorrupt, keyName(key), what)
	}
	if len(key) != len(prefixRefusal)+8 {
		return bad("key length")
	}
	r := &RefusalRecord{N: int64(binary.BigEndian.Uint64(key[len(prefixRefusal):]))}
	if r.N < 0 {
		return bad("negative record number")
	}
	if len(v) < 1 || v[0] != journalFormat {
		return bad("unknown record format")
	}
	at := 1
	ns, n := binary.Varint(v[at:])
	if n <= 0 {
		return bad(fmt.Sprintf("time at byte %d", at))
	}
	at += n
	r.Time = time.Unix(0, ns).UTC()
	str := func() (string, bool) {
		l, n := binary.Uvarint(v[at:])
		if n <= 0 || l > uint64(len(v)-at-n) {
			return "", false
		}
		s := string(v[at+n : at+n+int(l)])
		at += n + int(l)
		return s, true
	}
	var kind, status string
	for _, f := range []struct {
		name   string
		dst    *string
		digest bool // the 32-byte digest follows the field
	}{{"kind", &kind, false}, {"id", &r.ID, true}, {"status", &status, false}, {"class", &r.Class, false}, {"reason", &r.Reason, false},
		{"detail", &r.Detail, false}, {"agent", &r.Agent, false}, {"submitter", &r.Submitter, false}} {
		s, ok := str()
		if !ok {
			return bad(fmt.Sprintf("%s at byte %d", f.name, at))
		}
		*f.dst = s
		if f.digest {
			if len(v)-at < 32 {
				return bad(fmt.Sprintf("digest at byte %d", at))
			}
			copy(r.Digest[:], v[at:at+32])
			at += 32
		}
	}
	r.Kind = codec.Kind(kind)
	r.Status = Status(status)
	ev, n := binary.Uvarint(v[at:])
	if n <= 0 || ev > 1<<62 {
		return bad(fmt.Sprintf("event at byte %d", at))
	}
	at += n
	if at != len(v) {
		return bad(fmt.Sprintf("%d trailing bytes", len(v)-at))
	}
	r.Event = int64(ev) - 1
	if !bytes.Equal(r.encode(), v) {
		// Non-minimal varints: not what encode writes.
		return bad("not in canonical form")
	}
	return r, nil
}

// journalState is where the journal stands: records first..next-1 are
// kept, the last one at time lastT.
type journalState struct {
	first, next int64
	lastT       int64
}

// readJournalState reads the journal's extent from r.
func readJournalState(r pebble.Reader) (journalState, error) {
	var js journalState
	first, last, err := edgeKeys(r, prefixRefusal)
	if err != nil || last == nil {
		return js, err
	}
	if js.first, err = decodeKeySeq(prefixRefusal, first); err != nil {
		return js, err
	}
	if js.next, err = decodeKeySeq(prefixRefusal, last); err != nil {
		return js, err
	}
	js.next++
	v, err := getCopy(r, last)
	if err != nil {
		return js, err
	}
	rec, err := decodeRefusal(last, v)
	if err != nil {
		return js, err
	}
	js.lastT = rec.Time.UnixNano()
	return js, nil
}

// refusal is a refused entry of a batch, on its way to the journal.
type refusal struct {
	e *Entry
	o Outcome
}

// journal records a batch's refusals (those the caller will not retry),
// updates the agents' counters and trims the journal to the ledger's
// limit, all into b. It returns the journal's new state.
func (l *Ledger) journal(b *pebble.Batch, js journalState, refused []refusal) (journalState, error) {
	limit := l.refusalLimit.Load()
	var recs []*RefusalRecord
	counts := map[string]uint64{}
	var order []string
	for _, rf := range refused {
		ns := rf.e.Arrival.UnixNano()
		if ns < js.lastT {
			ns = js.lastT // never backwards along the journal
		}
		js.lastT = ns
		r := &RefusalRecord{N: js.next, Time: time.Unix(0, ns).UTC(), Kind: rf.e.Kind, ID: cut(rf.e.ID), Digest: rf.e.digest,
			Status: rf.o.Status, Class: rf.o.Class, Reason: reasonOf(&rf.o), Detail: cut(rf.o.Reason),
			Agent: cut(rf.e.Agent), Submitter: cut(rf.e.Submitter), Event: -1}
		if rf.o.Kind != "" {
			r.Kind, r.ID = rf.o.Kind, cut(rf.o.ID)
		}
		if r.Status == StatusReplay || r.Status == StatusConflict {
			r.Event = rf.o.Seq
		}
		js.next++
		recs = append(recs, r)
		k := string(refusalCountKey(r.Agent, r.Reason))
		if _, ok := counts[k]; !ok {
			order = append(order, k)
		}
		counts[k]++
	}
	var errs []error
	// Records the limit would trim at once are not written at all.
	if int64(len(recs)) > limit {
		recs = recs[int64(len(recs))-limit:]
	}
	for _, r := range recs {
		errs = append(errs, b.Set(refusalKey(r.N), r.encode(), nil))
	}
	if keep := js.next - limit; keep > js.first {
		errs = append(errs, b.DeleteRange(refusalKey(js.first), refusalKey(keep), nil))
		js.first = keep
	}
	sort.Strings(order)
	for _, k := range order {
		var n uint64
		v, err := getCopy(l.db, []byte(k))
		switch {
		case err == nil:
			if n, err = be64([]byte(k), v); err != nil {
				return js, err
			}
		case !errors.Is(err, ErrNotFound):
			return js, err
		}
		errs = append(errs, b.Set([]byte(k), u64(n+counts[k]), nil))
	}
	if err := errors.Join(errs...); err != nil {
		return js, fmt.Errorf("refusal journal: %w", err)
	}
	return js, nil
}

// loadRefusalLimit reads the refusals/keep setting (DefaultRefusalLimit
// when it is absent).
func (l *Ledger) loadRefusalLimit() error {
	v, err := getCopy(l.db, join(prefixSetting, []byte(refusalLimitSetting)))
	if errors.Is(err, ErrNotFound) {
		l.refusalLimit.Store(DefaultRefusalLimit)
		return nil
	}
	if err != nil {
		return err
	}
	n, err := parseRefusalLimit(string(v))
	if err != nil {
		return fmt.Errorf("%w: setting %s: %v", ErrCorrupt, refusalLimitSetting, err)
	}
	l.refusalLimit.Store(n)
	return nil
}

func parseRefusalLimit(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > MaxRefusalLimit || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%.40q: want a whole number from 0 to %d", s, MaxRefusalLimit)
	}
	return n, nil
}

// RefusalLimit returns how many records the refusal journal keeps (the
// ledger's refusals/keep setting, DefaultRefusalLimit unless set).
func (l *Ledger) RefusalLimit() int64 { return l.refusalLimit.Load() }

// SetRefusalLimit sets how many records the refusal journal keeps, from
// 0 (none: only the counters) to MaxRefusalLimit, as the durable setting
// refusals/keep. The next batch that records a refusal trims the journal
// to it.
func (l *Ledger) SetRefusalLimit(n int64) error {
	if n < 0 || n > MaxRefusalLimit {
		return fmt.Errorf("refusal journal limit %d: want 0 to %d", n, MaxRefusalLimit)
	}
	if err := l.SetSetting(refusalLimitSetting, []byte(strconv.FormatInt(n, 10))); err != nil {
		return err
	}
	l.refusalLimit.Store(n)
	return nil
}

// RefusalQuery selects records of the refusal journal: refused in
// [Since, Until) (zero ends are open), of one Agent and one Reason code
// (empty: any), at most Limit of them (0: all).
type RefusalQuery struct {
	Agent        string
	Reason       string
	Since, Until time.Time
	Limit        int
}

// Validate checks the query as Refusals would.
func (q RefusalQuery) Validate() error {
	if err := ValidateWindow(q.Since, q.Until); err != nil {
		return err
	}
	if q.Reason != "" {
		if _, err := ParseRefusalReason(q.Reason); err != nil {
			return err
		}
	}
	if q.Limit < 0 {
		return fmt.Errorf("limit %d: must not be negative", q.Limit)
	}
	return nil
}

// Refusals calls fn for each record of the durable refusal journal q
// selects, oldest first, until fn returns false or an error. It finds
// Since by bisecting the records (their times never decrease) and reads
// no record before it; the journal is bounded (RefusalLimit), and so is
// the scan for an agent or a reason.
func (l *Ledger) Refusals(ctx context.Context, q RefusalQuery, fn func(*RefusalRecord) (bool, error)) (err error) {
	if err := q.Validate(); err != nil {
		return err
	}
	v, err := l.acquire()
	if err != nil {
		return err
	}
	defer l.releaseView(v)
	js, err := readJournalState(v.r)
	if err != nil || js.next == js.first {
		return err
	}
	from := js.first
	if !q.Since.IsZero() {
		// The first record at or after Since: records are dense and
		// their times never decrease.
		lo, hi := js.first, js.next
		var ferr error
		for lo < hi {
			mid := lo + (hi-lo)/2
			r, err := refusalAt(v, mid)
			if err != nil {
				ferr = err
				break
			}
			if r.Time.Before(q.Since) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if ferr != nil {
			return ferr
		}
		from = lo
	}
	it, err := viewIter(v, refusalKey(from), refusalKey(js.next))
	if err != nil {
		return err
	}
	defer closeIter(it, &err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := decodeRefusal(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if !q.Until.IsZero() && !r.Time.Before(q.Until) {
			return nil
		}
		if q.Agent != "" && r.Agent != q.Agent || q.Reason != "" && r.Reason != q.Reason {
			continue
		}
		more, err := fn(r)
		if err != nil || !more {
			return err
		}
		n++
		if q.Limit > 0 && n >= q.Limit {
			return nil
		}
	}
	return storeErr(it.Error())
}

// refusalAt reads record n of v.
func refusalAt(v *view, n int64) (*RefusalRecord, error) {
	k := refusalKey(n)
	val, err := viewGet(v, k)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: refusal record %d is missing from the journal", ErrCorrupt, n)
	}
	if err != nil {
		return nil, err
	}
	return decodeRefusal(k, val)
}

// RefusalCounts returns the refusals the journal counted for agent, by
// reason code (only reasons with refusals). The counters are kept apart
// from the records and survive their trimming.
func (s *Snapshot) RefusalCounts(agent string) (map[string]int64, error) {
	if s.v == nil {
		return nil, s.closedErr()
	}
	out := map[string]int64{}
	p := join(prefixRefusalCount, []byte(agent), []byte{0})
	err := s.Range(p, prefixEnd(p), func(k, v []byte) (bool, error) {
		reason := k[len(p):]
		if bytes.IndexByte(reason, 0) >= 0 {
			return true, nil // a counter of an agent whose name continues past a NUL byte
		}
		n, err := be64(k, v)
		if err != nil {
			return false, err
		}
		if n > 1<<62 {
			return false, fmt.Errorf("%w: %s: refusal count %d", ErrCorrupt, keyName(k), n)
		}
		out[string(reason)] = int64(n)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RefusalCounts is Snapshot.RefusalCounts on the durable state as of now.
func (l *Ledger) RefusalCounts(agent string) (map[string]int64, error) {
	s := l.Snapshot()
	defer s.Close()
	return s.RefusalCounts(agent)
}

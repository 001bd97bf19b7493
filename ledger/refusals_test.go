package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
)

// refusedEntry is entry n refused by admission (as a malformed document
// of agent).
func refusedEntry(n int, agent string) *Entry {
	e := rawEntry(n)
	e.Agent, e.Submitter = agent, "test"
	e.Refused = &Outcome{Name: e.Name, Kind: e.Kind, ID: e.ID, Status: StatusRejected, Seq: -1, Class: RejectMalformed, Reason: fmt.Sprintf("bad %d", n)}
	return e
}

// journalOf returns every record of l's journal q selects.
func journalOf(t testing.TB, l *Ledger, q RefusalQuery) []*RefusalRecord {
	t.Helper()
	var out []*RefusalRecord
	if err := l.Refusals(context.Background(), q, func(r *RefusalRecord) (bool, error) { out = append(out, r); return true, nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(rs []*RefusalRecord) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.ID)
	}
	return strings.Join(s, " ")
}

// TestRefusalJournal refuses entries in every way the store sees them
// (admission's refusals, replays, conflicts) in batches, and checks the
// records, their order and times, every filter of the query, the bound
// (oldest records trimmed in the refusing batch, nothing of a batch the
// bound would trim at once written), the counters (which survive the
// trimming), and that a rebuild keeps the journal and the audit does not
// count it as a divergence.
func TestRefusalJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := Init(dir, InitOptions{Origin: "journal.test", Key: testKey(3)}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	if l.RefusalLimit() != DefaultRefusalLimit {
		t.Errorf("limit %d, want the default %d", l.RefusalLimit(), DefaultRefusalLimit)
	}
	appendRaw(t, l, 0, 3)
	// One batch: an appended entry, a replay, a conflict, two refused by
	// admission (agents a and b), arriving out of time order.
	replay, conflict := rawEntry(1), rawEntry(2)
	conflict.Data = append(conflict.Data, ' ')
	replay.Agent, conflict.Agent = "a", "a"
	r10, r11 := refusedEntry(10, "a"), refusedEntry(11, "b")
	r11.Arrival = r10.Arrival.Add(-time.Hour) // earlier than the record before it
	out, err := l.Append(ctx, []*Entry{rawEntry(3), replay, conflict, r10, r11})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []Status{StatusAppended, StatusReplay, StatusConflict, StatusRejected, StatusRejected} {
		if out[i].Status != want {
			t.Errorf("entry %d: %s, want %s", i, out[i].Status, want)
		}
	}
	if out[4].Reason != "bad 11" || out[4].Class != RejectMalformed {
		t.Errorf("admission's refusal came back as %+v", out[4])
	}
	recs := journalOf(t, l, RefusalQuery{})
	if got := ids(recs); got != "doc-000001 doc-000002 doc-000010 doc-000011" {
		t.Fatalf("journal %s", got)
	}
	want := []struct {
		reason string
		event  int64
		status Status
	}{{ReasonReplay, 1, StatusReplay}, {ReasonConflict, 2, StatusConflict}, {ReasonMalformed, -1, StatusRejected}, {ReasonMalformed, -1, StatusRejected}}
	for i, r := range recs {
		if r.N != int64(i) || r.Reason != want[i].reason || r.Event != want[i].event || r.Status != want[i].status || r.Submitter != "" && r.Submitter != "test" {
			t.Errorf("record %d: %+v", i, r)
		}
		if i > 0 && r.Time.Before(recs[i-1].Time) {
			t.Errorf("record %d is timed before record %d", i, i-1)
		}
	}
	if recs[3].Time != recs[2].Time {
		t.Errorf("a record arriving earlier is timed %v, want the record before's %v", recs[3].Time, recs[2].Time)
	}
	if recs[1].Digest != sha256Sum(conflict.Data) || recs[1].Kind != codec.KindAVIRSpec {
		t.Errorf("conflict record %+v", recs[1])
	}

	// Filters.
	for _, tc := range []struct {
		name string
		q    RefusalQuery
		want string
	}{
		{"agent a", RefusalQuery{Agent: "a"}, "doc-000001 doc-000002 doc-000010"},
		{"agent b", RefusalQuery{Agent: "b"}, "doc-000011"},
		{"reason", RefusalQuery{Reason: ReasonConflict}, "doc-000002"},
		{"agent and reason", RefusalQuery{Agent: "a", Reason: ReasonMalformed}, "doc-000010"},
		{"since", RefusalQuery{Since: recs[2].Time}, "doc-000010 doc-000011"},
		{"until", RefusalQuery{Until: recs[2].Time}, "doc-000001 doc-000002"},
		{"window", RefusalQuery{Since: recs[1].Time, Until: recs[2].Time}, "doc-000002"},
		{"limit", RefusalQuery{Limit: 3}, "doc-000001 doc-000002 doc-000010"},
		{"since after the last", RefusalQuery{Since: recs[3].Time.Add(time.Second)}, ""},
	} {
		if got := ids(journalOf(t, l, tc.q)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if err := l.Refusals(ctx, RefusalQuery{Reason: "typo"}, nil); !errors.Is(err, ErrBadReason) {
		t.Errorf("unknown reason: %v", err)
	}

	// The bound: 5 records. A batch of 4 refusals trims the 3 oldest.
	if err := l.SetRefusalLimit(5); err != nil {
		t.Fatal(err)
	}
	batch := []*Entry{}
	for i := 20; i < 24; i++ {
		batch = append(batch, refusedEntry(i, "a"))
	}
	if _, err := l.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got := ids(journalOf(t, l, RefusalQuery{})); got != "doc-000011 doc-000020 doc-000021 doc-000022 doc-000023" {
		t.Errorf("after trimming to 5: %s", got)
	}
	// A batch of more refusals than the bound writes only the newest.
	batch = batch[:0]
	for i := 30; i < 37; i++ {
		batch = append(batch, refusedEntry(i, "b"))
	}
	if _, err := l.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	recs = journalOf(t, l, RefusalQuery{})
	if got := ids(recs); got != "doc-000032 doc-000033 doc-000034 doc-000035 doc-000036" {
		t.Errorf("after a batch larger than the bound: %s", got)
	}
	if recs[0].N != 10 || recs[4].N != 14 {
		t.Errorf("record numbers %d..%d, want 10..14 (never reused)", recs[0].N, recs[4].N)
	}
	// Counters survive the trimming.
	for agent, want := range map[string]map[string]int64{
		"a": {ReasonReplay: 1, ReasonConflict: 1, ReasonMalformed: 5},
		"b": {ReasonMalformed: 8},
		"c": {},
	} {
		got, err := l.RefusalCounts(agent)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("agent %s: counts %v, want %v", agent, got, want)
		}
	}
	// The setting survives a reopen; a limit of 0 keeps no records, only
	// counts.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if l.RefusalLimit() != 5 {
		t.Errorf("limit after reopening: %d, want 5", l.RefusalLimit())
	}
	if err := l.SetRefusalLimit(0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, []*Entry{refusedEntry(40, "b")}); err != nil {
		t.Fatal(err)
	}
	if got := journalOf(t, l, RefusalQuery{}); len(got) != 0 {
		t.Errorf("limit 0 kept %s", ids(got))
	}
	if got, _ := l.RefusalCounts("b"); got[ReasonMalformed] != 9 {
		t.Errorf("limit 0: b's count %d, want 9", got[ReasonMalformed])
	}
	if err := l.SetRefusalLimit(MaxRefusalLimit + 1); err == nil {
		t.Error("a limit beyond the maximum was accepted")
	}
	if err := l.SetRefusalLimit(3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, []*Entry{refusedEntry(41, "b")}); err != nil {
		t.Fatal(err)
	}
	before := dump(t, l)
	// A rebuild leaves the journal alone; the audit finds nothing wrong.
	if err := l.Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after := dump(t, l)
	for k, v := range before {
		if strings.HasPrefix(k, "refusal") && after[k] != v {
			t.Errorf("the rebuild changed %q", k)
		}
	}
	if got := ids(journalOf(t, l, RefusalQuery{})); got != "doc-000041" {
		t.Errorf("journal after the rebuild: %s", got)
	}
	rep, err := l.Audit(ctx, AuditOptions{})
	if err != nil || !rep.OK() {
		t.Errorf("audit: %v %v", err, rep.Problems)
	}
	if l.Size() != 4 {
		t.Errorf("size %d, want 4: refusals append no event", l.Size())
	}
}

// TestRefusalOnlyBatch: a batch that refuses everything is synced and
// published (its records readable, its callers answered after the sync),
// and signs nothing: no checkpoint, no checkpoint-log record.
func TestRefusalOnlyBatch(t *testing.T) {
	ctx := context.Background()
	mem, lk := vfs.NewMem(), NewMemLocker()
	if err := Init(memDir, InitOptions{Origin: "journal.test", Key: testKey(3), FS: mem, Locker: lk}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(memDir, Options{FS: mem, Locker: lk})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	appendRaw(t, l, 0, 2)
	note, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	logBefore, err := readSmallFile(mem, mem.PathJoin(memDir, ckptLogFile), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Append(ctx, []*Entry{rawEntry(0), refusedEntry(5, "a")})
	if err != nil || out[0].Status != StatusReplay || out[1].Status != StatusRejected {
		t.Fatalf("%v %+v", err, out)
	}
	if got := ids(journalOf(t, l, RefusalQuery{})); got != "doc-000000 doc-000005" {
		t.Errorf("journal: %s", got)
	}
	note2, err := l.Checkpoint()
	if err != nil || !bytes.Equal(note, note2) {
		t.Errorf("the checkpoint changed: %v", err)
	}
	logAfter, err := readSmallFile(mem, mem.PathJoin(memDir, ckptLogFile), 1<<20)
	if err != nil || !bytes.Equal(logBefore, logAfter) {
		t.Errorf("the checkpoint log changed: %v", err)
	}
	appendRaw(t, l, 2, 1)
	if l.Size() != 3 {
		t.Errorf("size %d, want 3", l.Size())
	}
}

// TestRefusalDurability: a refusal is recorded only with its batch's
// commit. When the commit fails (the WAL write or its sync fails, or a
// batch that also appends fails to sign its checkpoint), the append
// reports the failure, the journal shows nothing of the batch, and after
// reopening (for the sync failure: from a crash image without the unsynced
// writes) the refusal is not there.
func TestRefusalDurability(t *testing.T) {
	rows := []struct {
		name     string
		match    func(errorfs.Op) bool
		failSign bool
		appends  bool // the batch also appends an event
	}{
		{name: "WAL write", match: func(op errorfs.Op) bool { return isWAL(op) && op.Kind == errorfs.OpFileWrite }},
		{name: "WAL sync", match: func(op errorfs.Op) bool { return isWAL(op) && isSync(op) }},
		{name: "WAL write, with an event", match: func(op errorfs.Op) bool { return isWAL(op) && op.Kind == errorfs.OpFileWrite }, appends: true},
		{name: "checkpoint signature, with an event", failSign: true, appends: true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ctx := context.Background()
			mem := vfs.NewCrashableMem()
			ffs := newFaultFS(mem)
			lk := NewMemLocker()
			if err := Init(memDir, InitOptions{Origin: "journal.test", Key: testKey(3), FS: ffs.fs, Locker: lk}); err != nil {
				t.Fatal(err)
			}
			var signFail atomic.Bool
			opts := Options{FS: ffs.fs, Locker: lk, hooks: &hooks{sign: func(proof.Checkpoint) error {
				if signFail.Load() {
					return errors.New("signature failed on purpose")
				}
				return nil
			}}}
			l, err := Open(memDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			appendRaw(t, l, 0, 3)
			if _, err := l.Append(ctx, []*Entry{refusedEntry(7, "a")}); err != nil {
				t.Fatal(err)
			}
			batch := []*Entry{refusedEntry(8, "a"), rawEntry(0)} // refused by admission, and a replay
			if row.appends {
				batch = append(batch, rawEntry(3))
			}
			if row.failSign {
				signFail.Store(true)
			} else {
				ffs.arm(row.match)
			}
			out, err := l.Append(ctx, batch)
			ffs.disarm()
			signFail.Store(false)
			if err == nil {
				t.Fatalf("the batch was acknowledged through the fault: %+v", out)
			}
			if !row.failSign && ffs.hits.Load() == 0 {
				t.Fatal("the fault was never hit")
			}
			if got := ids(journalOf(t, l, RefusalQuery{})); got != "doc-000007" {
				t.Errorf("journal after the failed commit: %s", got)
			}
			if counts, _ := l.RefusalCounts("a"); counts[ReasonMalformed] != 1 {
				t.Errorf("a's count after the failed commit: %v", counts)
			}
			// What survives: a crash image without the unsynced writes.
			img := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
			_ = l.Close() // after an injected fault Close may fail; the image is the check
			l2, err := Open(memDir, Options{FS: img, Locker: NewMemLocker()})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer func() {
				if err := l2.Close(); err != nil {
					t.Error(err)
				}
			}()
			if got := ids(journalOf(t, l2, RefusalQuery{})); got != "doc-000007" {
				t.Errorf("journal after reopening: %s", got)
			}
			if counts, _ := l2.RefusalCounts("a"); counts[ReasonMalformed] != 1 {
				t.Errorf("a's count after reopening: %v", counts)
			}
			if l2.Size() != 3 {
				t.Errorf("size after reopening %d, want 3", l2.Size())
			}
			// The journal goes on from there.
			if _, err := l2.Append(ctx, []*Entry{refusedEntry(9, "a")}); err != nil {
				t.Fatal(err)
			}
			if got := ids(journalOf(t, l2, RefusalQuery{})); got != "doc-000007 doc-000009" {
				t.Errorf("journal after appending again: %s", got)
			}
		})
	}
}

// TestDecodeRefusal: a record decodes to what was encoded, and every
// truncation or extension of it is an error naming the key.
func TestDecodeRefusal(t *testing.T) {
	r := &RefusalRecord{N: 7, Time: testEpoch, Kind: codec.KindVRF, ID: "id", Status: StatusReplay, Class: "",
		Reason: ReasonReplay, Detail: "already", Agent: "agent", Submitter: "cli:me", Event: 3}
	r.Digest[0] = 9
	k := refusalKey(7)
	v := r.encode()
	got, err := decodeRefusal(k, v)
	if err != nil || fmt.Sprint(*got) != fmt.Sprint(*r) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for n := range len(v) {
		if _, err := decodeRefusal(k, v[:n]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "refusal/") {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	if _, err := decodeRefusal(k, append(bytes.Clone(v), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a trailing byte: %v", err)
	}
	long := strings.Repeat("é", maxJournalString)
	if c := cut(long); len(c) > maxJournalString || !strings.HasPrefix(long, c) || !utf8Valid(c) {
		t.Errorf("cut: %d bytes", len(c))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// FuzzDecodeRefusal: no stored bytes make the decoder panic; a value that
// decodes re-encodes to the same bytes; errors wrap ErrCorrupt.
func FuzzDecodeRefusal(f *testing.F) {
	r := &RefusalRecord{N: 1, Time: testEpoch, Kind: codec.KindRVWW, ID: "t@1", Status: StatusRejected, Class: RejectInvalid,
		Reason: ReasonInvalid, Detail: "signature: no HMAC key", Submitter: "cli:me", Event: -1}
	f.Add(r.encode())
	f.Add([]byte{journalFormat})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		k := refusalKey(1)
		got, err := decodeRefusal(k, v)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if !bytes.Equal(got.encode(), v) {
			t.Fatalf("%x decodes and re-encodes to %x", v, got.encode())
		}
	})
}

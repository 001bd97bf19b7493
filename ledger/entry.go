package ledger

import (
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/proof"
)

// Entry is a document an admission layer prepared for the log (package
// admit decodes, verifies and applies trust before it gets here): its
// identity, its bytes and the leaf facts known before sequencing. The store
// knows nothing of what the document says; the Rules it was opened with do.
type Entry struct {
	// Name is how messages refer to the document (its file name, "-").
	Name string
	// Kind and ID are the document's identity: a second entry with the same
	// identity is a replay (same bytes) or a conflict (other bytes).
	Kind codec.Kind
	ID   string
	// Data is the document, stored byte for byte.
	Data []byte
	// Arrival is when the document arrived; zero means now. It becomes the
	// event's appended_at, clamped so that it never goes backwards.
	Arrival time.Time
	// Leaf holds the facts decided before sequencing (Subject, Signer,
	// Time, Position, Attrs). The store sets Seq, AppendedAt, Kind, ID,
	// Digest and Size; the Rules may set Links, Subject and Position.
	Leaf proof.Leaf
	// Facts are the Rules' own facts about the document, from preparation
	// (for a receipt: its agent, the receipt it continues, its position).
	Facts any
	// Refused, when not nil, is admission's refusal of the entry before
	// sequencing (it could not be decoded, verified or trusted, or it is a
	// byte-identical copy of a durable event): the store appends nothing
	// for it and returns this outcome, recording it in the refusal journal
	// with the batch, like the refusals it decides itself.
	Refused *Outcome
	// Agent and Submitter are what the refusal journal records of the
	// entry if it is refused: the agent the document speaks for, as far as
	// admission knows it, and who offered it (for example "cli:alice").
	Agent, Submitter string
	// RetryWaiting says that the caller tries the entry again when the
	// Rules refuse it as waiting for an identity (Refusal.Waiting): such a
	// refusal is provisional and not journaled.
	RetryWaiting bool

	idx       int // position in the caller's slice
	digest    [32]byte
	hasDigest bool
}

// SetDigest gives the SHA-256 of Data when the caller computed it already
// (admission does, for its replay short cut), so that Append does not hash
// the document again. It must be the digest of Data: reads and the audit
// check every stored document against it.
func (e *Entry) SetDigest(d [32]byte) { e.digest, e.hasDigest = d, true }

// Status is what became of one entry.
type Status string

// The statuses of an Outcome.
const (
	StatusAppended Status = "appended"
	StatusReplay   Status = "replay"   // identity present, identical bytes
	StatusConflict Status = "conflict" // identity present, different bytes
	StatusRejected Status = "rejected" // malformed, invalid, untrusted or breaking a chain rule
	// StatusStale: the document's own time is too old at its arrival, or
	// too far ahead of it (admission's freshness rules; class RejectStale
	// or RejectFuture).
	StatusStale Status = "stale"
)

// Reject classes say why a submission was rejected.
const (
	RejectMalformed = "malformed" // cannot be parsed or fails its schema
	RejectInvalid   = "invalid"   // fails verification
	RejectTrust     = "trust"     // unsigned, or signer not trusted
	RejectLink      = "link"      // breaks a chain or task rule
	RejectStale     = "stale"     // (status stale) the document's time is older than the freshness rules allow
	RejectFuture    = "future"    // (status stale) the document's time is further ahead of its arrival than they allow
)

// Outcome reports one submission.
type Outcome struct {
	Name   string
	Kind   codec.Kind
	ID     string
	Status Status
	// Seq is the new event's sequence number, the original event's for a
	// replay or conflict, and -1 otherwise.
	Seq int64
	// Class says why a submission was rejected (Reject* constants).
	Class  string
	Reason string
	// Findings are the codec's findings for a malformed or invalid document.
	Findings []codec.Finding
	// Waiting is set when a receipt was rejected because the receipt it
	// continues (this id) is not in the ledger: it may be appended once
	// that one is.
	Waiting string
	// Event is the appended event (without Data).
	Event *Event
}

// Rules are the admission rules that depend on the log's order (in the
// style of Tessera's append decorators, but run by the sequencer so that
// they see the log exactly as the entry will join it). For each batch the
// sequencer calls Begin, then, for every entry in sequence order that
// passed the identity check, RuleBatch.Admit and, once it is appended,
// RuleBatch.Appended. Entries describes, once for the writer and the
// audit, the keys an appended event implies in the rules' own keyspaces.
type Rules interface {
	Begin() RuleBatch
	// Keyspaces are the key prefixes the rules' entries live under,
	// disjoint from the store's: a rebuild clears them, the audit counts
	// them.
	Keyspaces() [][]byte
	// Entries returns the keys and values an event implies in the rules'
	// keyspaces. It must be a function of the event's leaf alone: the
	// sequencer writes them in the event's batch, the audit checks them,
	// and a rebuild recomputes them.
	Entries(ev *proof.Leaf) []KV
}

// RuleBatch admits the entries of one batch.
type RuleBatch interface {
	// Admit decides e against the log (r reads the store as the batch
	// found it; the batch keeps what it admitted itself). It may complete
	// e.Leaf (Links, Subject, Position). A non-nil Refusal refuses e.
	Admit(r Reader, e *Entry) (*Refusal, error)
	// Appended tells the batch that ev (an entry it admitted) joined the
	// log as ev.Seq.
	Appended(ev *proof.Leaf)
}

// Refusal is why Rules refused an entry.
type Refusal struct {
	// Status is the outcome's status: StatusRejected when empty, or
	// StatusStale (with class RejectStale or RejectFuture).
	Status Status
	// Class is a Reject* class (RejectLink for a chain or task rule).
	Class  string
	Reason string
	// Waiting names the identity the entry waits for (see Outcome.Waiting).
	Waiting string
}

// KV is one key and value an event implies.
type KV struct{ Key, Value []byte }

// Reader reads the store for the Rules: point lookups, and the last key
// under a prefix (for "the latest event of" questions).
type Reader interface {
	// Get returns a copy of the value at key, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Last returns the greatest key under prefix and its value, or
	// ErrNotFound.
	Last(prefix []byte) (key, value []byte, err error)
}

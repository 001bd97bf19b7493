package admit

import (
	"context"

	"github.com/proofledger/ledger/ledger"
)

// DocRef names a document to append and reads it when asked (possibly
// twice: a receipt whose predecessor comes later is read again for its
// retry).
type DocRef struct {
	Name string
	Load func() ([]byte, error)
}

// StreamOptions configure AppendStream.
type StreamOptions struct {
	Options
	// MaxEvents and MaxBytes bound one chunk, which is one Append call and
	// so one durable batch at most (defaults 4096 documents, 64 MiB).
	MaxEvents int
	MaxBytes  int64
}

// AppendStream appends many documents in bounded memory: it loads them in
// chunks of at most MaxEvents documents and MaxBytes bytes, appends each
// chunk (durably) and reports its outcomes, in order, before loading the
// next. A receipt refused because the receipt it continues is not in the
// ledger yet is held back and tried again after the others (its
// predecessor may come in a later chunk), until a round appends nothing;
// the held-back receipts are then offered a last time and their outcomes
// reported (so the refusal journal records the final refusals, not the
// provisional ones). A document that cannot be loaded is reported as
// rejected (ledger.RejectMalformed) with the load error; it never reached
// the ledger, so the journal does not record it. The error is the
// ledger's own failure, or report's.
func (l *Ledger) AppendStream(ctx context.Context, docs []DocRef, opts StreamOptions, report func(ledger.Outcome) error) error {
	maxN, maxB := opts.MaxEvents, opts.MaxBytes
	if maxN <= 0 {
		maxN = 4096
	}
	if maxB <= 0 {
		maxB = 64 << 20
	}
	pending := docs
	final := false
	for len(pending) > 0 {
		aopts := opts.Options
		aopts.retryWaiting = !final
		var waiting []DocRef
		appended := 0
		for start := 0; start < len(pending); {
			var subs []Submission
			var refs []DocRef
			var size int64
			end := start
			for end < len(pending) && len(subs) < maxN && size < maxB {
				d := pending[end]
				end++
				data, err := d.Load()
				if err != nil {
					o := ledger.Outcome{Name: d.Name, Status: ledger.StatusRejected, Seq: -1, Class: ledger.RejectMalformed, Reason: "cannot read: " + err.Error()}
					if err := report(o); err != nil {
						return err
					}
					continue
				}
				subs = append(subs, Submission{Name: d.Name, Data: data})
				refs = append(refs, d)
				size += int64(len(data))
			}
			start = end
			if len(subs) == 0 {
				continue
			}
			out, err := l.AppendWithRetry(ctx, subs, aopts)
			if err != nil {
				return err
			}
			for i, o := range out {
				if o.Waiting != "" && !final {
					waiting = append(waiting, refs[i])
					continue
				}
				if o.Status == ledger.StatusAppended {
					appended++
				}
				if err := report(o); err != nil {
					return err
				}
			}
		}
		if final || len(waiting) == 0 {
			return nil
		}
		// No progress: their predecessors are not coming; the next round
		// is their last.
		final = appended == 0 || len(waiting) == len(pending)
		pending = waiting
	}
	return nil
}

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
// its outcome is reported then. A document that cannot be loaded is
// reported as rejected (ledger.RejectMalformed) with the load error. The
// error is the ledger's own failure, or report's.
func (l *Ledger) AppendStream(ctx context.Context, docs []DocRef, opts StreamOptions, report func(ledger.Outcome) error) error {
	maxN, maxB := opts.MaxEvents, opts.MaxBytes
	if maxN <= 0 {
		maxN = 4096
	}
	if maxB <= 0 {
		maxB = 64 << 20
	}
	pending := docs
	for len(pending) > 0 {
		var waiting []DocRef
		var last []ledger.Outcome // outcomes of the waiting, reported if nothing progresses
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
			out, err := l.AppendWithRetry(ctx, subs, opts.Options)
			if err != nil {
				return err
			}
			for i, o := range out {
				if o.Waiting != "" {
					waiting = append(waiting, refs[i])
					last = append(last, o)
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
		if len(waiting) == 0 {
			return nil
		}
		if appended == 0 || len(waiting) == len(pending) {
			// No progress: their predecessors are not coming.
			for _, o := range last {
				if err := report(o); err != nil {
					return err
				}
			}
			return nil
		}
		pending = waiting
	}
	return nil
}

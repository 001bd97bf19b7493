package ledger

import (
	"github.com/proofledger/ledger/codec"
)

// indexEntry is one key the ledger's own indexes hold for an event.
type indexEntry struct {
	key, value []byte
	// latest marks an entry that the next event of the same key
	// overwrites (a task's head): an event implies it only while it is
	// the latest of its task.
	latest bool
}

// indexEntries is the one description of the index entries an event
// implies (besides its leaf, document and tree hashes): the sequencer
// writes them and the audit checks them.
//
//	i/<kind code><id>       identity: seq, digest (receipts: chain position, agent)
//	d/<sha256>              digest: seq, kind code, id
//	t/<appended_at><seq>    time index
//	k/<task>\0<seq>         task history (bundles and rollbacks)
//	K/<task>                the task's latest event (latest)
//	n/<receipt id>          the receipt that continues it (previous_receipt links)
func indexEntries(ev *Event) []indexEntry {
	out := []indexEntry{
		{key: identKey(ev.Kind, ev.ID), value: identOf(ev).encode()},
		{key: digestKey(ev.Digest), value: digestValue(ev)},
		{key: timeKey(ev.AppendedAt.UnixNano(), ev.Seq)},
	}
	if task := eventTask(ev); task != "" {
		out = append(out,
			indexEntry{key: taskKey(task, ev.Seq)},
			indexEntry{key: taskHeadKey(task), value: taskHead{seq: ev.Seq, id: ev.ID}.encode(), latest: true})
	}
	for _, link := range ev.Links {
		if link.Rel == RelPreviousReceipt {
			out = append(out, indexEntry{key: successorKey(link.ID), value: u64(uint64(ev.Seq))})
		}
	}
	return out
}

// eventTask is the task of a bundle or rollback (its subject), or "".
func eventTask(ev *Event) string {
	if ev.Kind == codec.KindRVWW || ev.Kind == KindRollback {
		return ev.Subject
	}
	return ""
}

// identOf is the identity entry of an event: receipts keep their chain
// position and agent, which the next receipt of the chain is checked
// against.
func identOf(ev *Event) identValue {
	iv := identValue{seq: ev.Seq, digest: ev.Digest, position: -1}
	if ev.Kind == codec.KindVRF {
		iv.position, iv.agent = ev.Position, ev.Subject
	}
	return iv
}

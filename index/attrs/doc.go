// Package attrs owns the format of the "attrs" object of a ledger leaf
// (ledger.Event.Attrs, leaf version 1): the facts of a document that the
// index projects, recorded at append time so that projections and
// `ledger rebuild` read leaves only and never decode documents again.
//
// Of builds the object from a decoded document (an inspect.Result); the
// ledger writes what it returns. Receipt, Attestation, Bundle and Rollback
// are the typed records of the four kinds the index projects; their Decode
// methods read an attrs object strictly (every key of the kind required
// unless documented optional, the JSON type of each, counts non-negative
// and within the width of the field they come from, verdicts and outcomes
// from their closed sets, the counts of a receipt consistent with its
// verdict, no unknown or repeated key) and return a *FieldError naming the
// field, which wraps ErrInvalid. An object that decodes re-encodes (Value)
// to the same canonical JSON.
//
// The package must not import the ledger or the index (the ledger imports
// it), nor decode documents: it reads inspect.Results and attrs objects.
package attrs

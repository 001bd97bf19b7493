package witness_test

import (
	"fmt"
	"time"

	"github.com/proofledger/ledger/codec/rvww"
	"github.com/proofledger/ledger/verifier/witness"
)

// Build a signed bundle from a two-line trace under the restricted
// policy: the Bash call is recorded as denied and reported as a violation.
func ExampleBuild() {
	trace := []byte(`{"tool":"Read","args":{"path":"src/pager.rs"},"result_hash":"7031e48d5d70d47b","latency_ms":40,"cost_microdollars":120,"tokens":600}
{"tool":"Bash","args":"cargo test","result":{"exit":0},"latency_ms":2100,"policy_check":"denied"}
`)
	calls, err := witness.ParseTrace("trace.jsonl", trace)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := witness.ParseTaskID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	outcome, _ := witness.ParseOutcome("failed")
	policy, _ := witness.DefaultPolicy("restricted")
	res, err := witness.Build(witness.Parts{
		TaskID:     id,
		Created:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Outcome:    outcome,
		Policy:     &policy,
		Spec:       []byte("Fix off-by-one in pagination"),
		Calls:      calls,
		TraceInput: "trace.jsonl",
	}, witness.Options{Key: []byte("secret")})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := rvww.Decode(res.Bundle)
	fmt.Println(b.ID(), len(res.Bundle), "bytes,", b.SectionNames())
	for _, c := range b.Calls {
		fmt.Println(c.Action, c.PolicyCheck)
	}
	for _, v := range res.Violations {
		fmt.Println(v.Code, v.Reason)
	}
	// Output:
	// 6ba7b810-9dad-11d1-80b4-00c04fd430c8@1767225600000000000 208 bytes, [SPEC TRACE]
	// Read allowed
	// Bash denied
	// denied_tool call 1: "Bash" is on the deny list
}

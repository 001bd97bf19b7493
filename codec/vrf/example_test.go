package vrf_test

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"time"

	"github.com/proofledger/ledger/codec"
	"github.com/proofledger/ledger/codec/vrf"
)

// Reading and checking a receipt from the reference implementation.
func ExampleParse() {
	data, err := os.ReadFile("../../testdata/vectors/vrf/90_tampered_verdict.json")
	if err != nil {
		panic(err)
	}
	r, err := vrf.Parse(data)
	if err != nil {
		fmt.Println("malformed:", err) // errors.Is(err, codec.ErrMalformed)
		return
	}
	fmt.Println(r.Form(), r.ID(), r.Signer())
	for _, f := range r.Verify() {
		fmt.Println(f.Code, f.Field)
	}
	// Output:
	// reference 4317e99d-6ddf-45f5-8d9e-f7d2ec99d867 ed25519:03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8
	// verdict_mismatch verdict
	// content_hash_mismatch signature.content_hash
}

// Issuing a receipt in the reference form.
func ExampleDraft() {
	seed := make([]byte, ed25519.SeedSize) // use a real key
	priv := ed25519.NewKeyFromSeed(seed)
	doc, err := vrf.Draft{
		ReceiptID:  "6f1c2a7e-3b4d-4c5e-9f60-718293a4b5c6", // empty: a random UUID v4
		VerifiedAt: time.Date(2026, 2, 19, 0, 46, 0, 0, time.UTC),
		Tier:       0,
		Details: []vrf.Detail{
			{Name: "basic_sort", Status: vrf.StatusPass, DurationMS: 8.25},
			{Name: "empty_list", Status: vrf.StatusFail, DurationMS: 2.5},
		},
		Hashes: vrf.Hashes{
			Input:  vrf.ShortHash([]byte("task")),
			Output: vrf.ShortHash([]byte("work")),
			Suite:  vrf.ShortHash([]byte("tests")),
		},
		AgentID: "agent-7f3a",
	}.Build()
	if err != nil {
		panic(err)
	}
	signed, err := vrf.Sign(doc, priv)
	if err != nil {
		panic(err)
	}
	r, err := vrf.Parse(signed)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Verdict(), r.Counts(), codec.AsInvalid(r.Verify()) == nil)
	// Output:
	// partial 1/2 passed, 1 failed, 0 errors true
}

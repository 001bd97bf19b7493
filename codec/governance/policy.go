package governance

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// Mode is a governance mode, as stored in an RVWW header's governance_mode
// byte.
type Mode uint8

// The three modes. (The constants carry a Mode prefix because Restricted,
// Approved and Autonomous name the default-policy constructors.)
const (
	ModeRestricted Mode = 0
	ModeApproved   Mode = 1
	ModeAutonomous Mode = 2
)

// Known reports whether m is one of the three defined modes.
func (m Mode) Known() bool { return m <= ModeAutonomous }

// String returns "restricted", "approved", "autonomous" or "unknown(N)".
func (m Mode) String() string {
	switch m {
	case ModeRestricted:
		return "restricted"
	case ModeApproved:
		return "approved"
	case ModeAutonomous:
		return "autonomous"
	}
	return "unknown(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode returns the mode named "restricted", "approved" or "autonomous".
func ParseMode(name string) (Mode, bool) {
	switch name {
	case "restricted":
		return ModeRestricted, true
	case "approved":
		return ModeApproved, true
	case "autonomous":
		return ModeAutonomous, true
	}
	return 0, false
}

// Decision is a policy's verdict on one tool call, as stored in an RVWW
// trace record's policy_check byte.
type Decision uint8

// The three decisions.
const (
	Allowed   Decision = 0
	Denied    Decision = 1
	Confirmed Decision = 2
)

// String returns "allowed", "denied", "confirmed" or "unknown(N)".
func (d Decision) String() string {
	switch d {
	case Allowed:
		return "allowed"
	case Denied:
		return "denied"
	case Confirmed:
		return "confirmed"
	}
	return "unknown(" + strconv.Itoa(int(d)) + ")"
}

// Policy is a governance policy. Name is a label for people and is not
// part of the policy hash; everything else is.
type Policy struct {
	// Name labels the policy in reports and policy files.
	Name string
	// Mode selects the rule for tools not on the deny list.
	Mode Mode
	// Allow lists the tools restricted mode allows; Deny the tools every
	// mode denies. Order matters to the hash.
	Allow, Deny []string
	// MaxCostMicrodollars is the cost budget: a cumulative cost above it is
	// a violation.
	MaxCostMicrodollars uint32
	// MaxToolCalls is the call budget: more calls than this is a violation.
	MaxToolCalls uint16
}

// Restricted returns the ADR-035 default restricted policy: read-only tools
// allowed, Bash/Write/Edit denied, $0.01 and 50 calls.
func Restricted() Policy {
	return Policy{
		Name:                "restricted",
		Mode:                ModeRestricted,
		Allow:               []string{"Read", "Glob", "Grep", "WebFetch", "WebSearch"},
		Deny:                []string{"Bash", "Write", "Edit"},
		MaxCostMicrodollars: 10_000,
		MaxToolCalls:        50,
	}
}

// Approved returns the ADR-035 default approved policy: every call
// confirmed, $0.10 and 200 calls.
func Approved() Policy {
	return Policy{Name: "approved", Mode: ModeApproved, MaxCostMicrodollars: 100_000, MaxToolCalls: 200}
}

// Autonomous returns the ADR-035 default autonomous policy: every call
// allowed, $1.00 and 500 calls.
func Autonomous() Policy {
	return Policy{Name: "autonomous", Mode: ModeAutonomous, MaxCostMicrodollars: 1_000_000, MaxToolCalls: 500}
}

// Defaults returns the three default policies, in mode order. Each call
// returns fresh slices the caller may modify.
func Defaults() []Policy { return []Policy{Restricted(), Approved(), Autonomous()} }

// DefaultByHash returns the default policy whose hash is h.
func DefaultByHash(h [8]byte) (Policy, bool) {
	for _, p := range Defaults() {
		if p.Hash() == h {
			return p, true
		}
	}
	return Policy{}, false
}

// HashInput returns the ASCII string the policy hash is computed over, as
// the reference builds it: "mode=<n>", "+Tool" per allowed tool and "-Tool"
// per denied tool in list order, then "|cost=<max>|calls=<max>".
func (p Policy) HashInput() string {
	var b strings.Builder
	b.WriteString("mode=")
	b.WriteString(strconv.Itoa(int(p.Mode)))
	for _, t := range p.Allow {
		b.WriteByte('+')
		b.WriteString(t)
	}
	for _, t := range p.Deny {
		b.WriteByte('-')
		b.WriteString(t)
	}
	b.WriteString("|cost=")
	b.WriteString(strconv.FormatUint(uint64(p.MaxCostMicrodollars), 10))
	b.WriteString("|calls=")
	b.WriteString(strconv.FormatUint(uint64(p.MaxToolCalls), 10))
	return b.String()
}

// Hash returns the policy hash: the first 8 bytes of SHA-256 of HashInput.
func (p Policy) Hash() [8]byte {
	sum := sha256.Sum256([]byte(p.HashInput()))
	return [8]byte(sum[:8])
}

// HashString returns Hash as 16 lowercase hex digits.
func (p Policy) HashString() string {
	h := p.Hash()
	return hex.EncodeToString(h[:])
}

// Check returns the policy's decision on a call of tool: Denied when the
// tool is on the deny list; otherwise by mode: restricted allows only the
// allow list, approved confirms everything, autonomous allows everything.
// A policy with an undefined mode denies everything.
func (p Policy) Check(tool string) Decision {
	d, _ := p.decide(tool)
	return d
}

// decide returns Check's decision and, for a denial, why.
func (p Policy) decide(tool string) (Decision, string) {
	if slices.Contains(p.Deny, tool) {
		return Denied, "on the deny list"
	}
	switch p.Mode {
	case ModeRestricted:
		if slices.Contains(p.Allow, tool) {
			return Allowed, ""
		}
		return Denied, "not on the allow list (restricted mode)"
	case ModeApproved:
		return Confirmed, ""
	case ModeAutonomous:
		return Allowed, ""
	}
	return Denied, "policy mode " + p.Mode.String() + " denies every call"
}

// label names the policy in messages: its Name, or its hash.
func (p Policy) label() string {
	if p.Name != "" {
		return strconv.Quote(p.Name)
	}
	return p.HashString()
}

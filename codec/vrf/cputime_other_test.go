//go:build !unix

package vrf

import (
	"testing"
	"time"
)

func processCPU() time.Duration { return 0 }

func reportCPU(b *testing.B, start time.Duration) {}

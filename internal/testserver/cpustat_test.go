package testserver_test

import (
	"os"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

func TestReadCPUTime(t *testing.T) {
	before, err := testserver.ReadCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the 10 ms clock tick moves (bounded, so a stuck
	// counter fails instead of hanging).
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		after, err := testserver.ReadCPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after < before {
			t.Fatalf("CPU time went back: %v, then %v", before, after)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("CPU time stayed at %v after 5s of work (%d)", before, x)
}

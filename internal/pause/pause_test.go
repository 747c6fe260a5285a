package pause_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/pause"
)

func TestFor(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		want    bool
		atLeast time.Duration
	}{
		{"waits the whole delay", context.Background(), 20 * time.Millisecond, true, 20 * time.Millisecond},
		{"an ended context stops the wait at once", cancelled, time.Hour, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if got := pause.For(tt.ctx, tt.d); got != tt.want {
				t.Fatalf("For = %v, want %v", got, tt.want)
			}
			if took := time.Since(start); took < tt.atLeast || took > tt.atLeast+time.Minute {
				t.Fatalf("For took %v, want at least %v (and not the whole hour)", took, tt.atLeast)
			}
		})
	}
}

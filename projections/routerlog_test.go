package projections

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
)

// The router's logger writes until the engine closes it, then nothing,
// including through loggers derived with With before the close.
func TestRouterLogWritesNothingOnceClosed(t *testing.T) {
	var out bytes.Buffer
	log := newRouterLog(watermill.NewSlogLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	derived := log.With(watermill.LogFields{"handler": "memories"})

	log.Info("before", nil)
	derived.Info("derived before", nil)
	if got := out.String(); !bytes.Contains([]byte(got), []byte("before")) || !bytes.Contains([]byte(got), []byte("derived before")) {
		t.Fatalf("an open log wrote %q", got)
	}
	log.close()
	written := out.Len()
	log.Info("after", nil)
	log.Error("after", nil, nil)
	derived.Debug("after", nil)
	derived.Trace("after", nil)
	if out.Len() != written {
		t.Errorf("a closed log wrote %q", out.String()[written:])
	}
}

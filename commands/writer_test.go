package commands_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

type notePayload struct{ Text string }

func (notePayload) EventType() string { return "TestNoted" }

// A write the read models do not apply within the visibility timeout was
// still stored: the writer says so (503 write_not_yet_visible, never a
// generic 500 that invites a client to send a second copy) and names its
// position so the response carries a consistency token.
func TestWriteNotAppliedInTimeIsReportedAsStored(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := sqlite.NewEventStore(db, time.Millisecond)
	memories := projections.NewMemories(sqlite.NewMemories(db))
	// The engine never runs: no projection applies anything.
	engine := projections.NewEngine(store, slog.New(slog.DiscardHandler), memories)
	writer := commands.NewEventWriter(store, engine, 50*time.Millisecond)
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-u", UserID: "u"}, RequestID: "test"}

	for _, tc := range []struct {
		name   string
		append func(ctx context.Context) (domain.AppendResult, error)
	}{
		{"Append", func(ctx context.Context) (domain.AppendResult, error) {
			return writer.Append(ctx, "notes-a", domain.ExpectAny, meta, notePayload{"a"})
		}},
		{"AppendSeenBy", func(ctx context.Context) (domain.AppendResult, error) {
			return writer.AppendSeenBy(ctx, "notes-b", domain.ExpectAny, meta, []string{memories.Name()}, notePayload{"b"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tracked, tracker := commands.TrackPositions(ctx)
			res, err := tc.append(tracked)
			var e *domain.Error
			if !errors.As(err, &e) || e.Kind != domain.KindNotYetConsistent || e.PublicCode() != "write_not_yet_visible" {
				t.Fatalf("error = %v, want %s", err, commands.WriteNotYetVisibleCode)
			}
			if e.Details[domain.DetailRetryAfterSeconds] != 1 {
				t.Errorf("details = %v, want %s 1", e.Details, domain.DetailRetryAfterSeconds)
			}
			if res.LastPosition == 0 || tracker.Last() != res.LastPosition {
				t.Errorf("tracked position %d, write at %d", tracker.Last(), res.LastPosition)
			}
			events, err := store.ReadAll(ctx, res.LastPosition-1, 10)
			if err != nil || len(events) != 1 || events[0].Position != res.LastPosition {
				t.Fatalf("the write is not in the log: %v, %v", events, err)
			}
		})
	}
}

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
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/memenvtest"
	"github.com/engram-memory/engram/projections"
)

type notePayload struct{ Text string }

func (notePayload) EventType() string { return "TestNoted" }

// idleLog is an event log whose memories projection never applies
// anything: its engine never runs.
type idleLog struct {
	store    *sqlite.EventStore
	memories *projections.Memories
	engine   *projections.Engine
}

func newIdleLog(t *testing.T) idleLog {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l := idleLog{store: sqlite.NewEventStore(db, time.Millisecond), memories: projections.NewMemories(sqlite.NewMemories(db))}
	l.engine = projections.NewEngine(l.store, slog.New(slog.DiscardHandler), l.memories)
	return l
}

// A write the read models do not apply within the visibility timeout was
// still stored: the writer says so (503 write_not_yet_visible, never a
// generic 500 that invites a client to send a second copy) and names its
// position so the response carries a consistency token.
func TestWriteNotAppliedInTimeIsReportedAsStored(t *testing.T) {
	ctx := context.Background()
	idle := newIdleLog(t)
	writer := commands.NewEventWriter(idle.store, idle.engine, 50*time.Millisecond)
	meta := memenvtest.Meta("u")

	for _, tc := range []struct {
		name   string
		append func(ctx context.Context) (domain.AppendResult, error)
	}{
		{"Append", func(ctx context.Context) (domain.AppendResult, error) {
			return writer.Append(ctx, "notes-a", domain.ExpectAny, meta, notePayload{"a"})
		}},
		{"AppendSeenBy", func(ctx context.Context) (domain.AppendResult, error) {
			return writer.AppendSeenBy(ctx, "notes-b", domain.ExpectAny, meta, []string{idle.memories.Name()}, notePayload{"b"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A tracker under another (an MCP tool call in an API
			// request) tracks for both.
			request, requestTracker := commands.TrackPositions(ctx)
			tracked, tracker := commands.TrackPositions(request)
			res, err := tc.append(tracked)
			var e *domain.Error
			if !errors.As(err, &e) || e.Kind != domain.KindNotYetConsistent || e.PublicCode() != "write_not_yet_visible" {
				t.Fatalf("error = %v, want %s", err, commands.WriteNotYetVisibleCode)
			}
			if e.Details[domain.DetailRetryAfterSeconds] != 1 {
				t.Errorf("details = %v, want %s 1", e.Details, domain.DetailRetryAfterSeconds)
			}
			if res.LastPosition == 0 || tracker.Last() != res.LastPosition || requestTracker.Last() != res.LastPosition {
				t.Errorf("tracked positions %d and %d (enclosing), write at %d", tracker.Last(), requestTracker.Last(), res.LastPosition)
			}
			events, err := idle.store.ReadAll(ctx, res.LastPosition-1, 10)
			if err != nil || len(events) != 1 || events[0].Position != res.LastPosition {
				t.Fatalf("the write is not in the log: %v, %v", events, err)
			}
		})
	}
}

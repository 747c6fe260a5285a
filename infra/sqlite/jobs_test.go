package sqlite_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// jobLog appends real events to a SQLite log and feeds them to the jobs
// read model.
type jobLog struct {
	t     *testing.T
	store *sqlite.EventStore
	jobs  *sqlite.Jobs
	fed   uint64
}

func newJobLog(t *testing.T) *jobLog {
	db := openDB(t)
	return &jobLog{t: t, store: sqlite.NewEventStore(db, time.Hour), jobs: sqlite.NewJobs(db)}
}

func (l *jobLog) append(stream string, payloads ...domain.Payload) {
	l.t.Helper()
	events := make([]domain.NewEvent, len(payloads))
	for i, p := range payloads {
		e, err := domain.MarshalEvent(p, domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}})
		if err != nil {
			l.t.Fatal(err)
		}
		events[i] = e
	}
	if _, err := l.store.Append(context.Background(), stream, domain.ExpectAny, events); err != nil {
		l.t.Fatal(err)
	}
	l.feed()
}

// feed applies the new events; every batch is delivered twice, as a
// redelivery would, which must change nothing.
func (l *jobLog) feed() {
	l.t.Helper()
	events, err := l.store.ReadAll(context.Background(), l.fed, 1000)
	if err != nil {
		l.t.Fatal(err)
	}
	for range 2 {
		if err := projections.NewJobs(l.jobs).Apply(context.Background(), events); err != nil {
			l.t.Fatal(err)
		}
	}
	l.fed = events[len(events)-1].Position
}

func (l *jobLog) view(userID, jobID string) job.View {
	l.t.Helper()
	v, ok, err := l.jobs.Job(context.Background(), userID, jobID)
	if err != nil || !ok {
		l.t.Fatalf("job %s of %s: %v %v", jobID, userID, ok, err)
	}
	return v
}

func embedded(ref memory.AgentRef, memoryID, jobID string) memory.MemoryEmbedded {
	return memory.MemoryEmbedded{AgentRef: ref, MemoryID: memoryID, Model: "m2", Dimensions: 2, TextHash: "h", Vector: memory.Vector{1, 0}, JobID: jobID}
}

func TestJobsReadModel(t *testing.T) {
	l := newJobLog(t)
	ctx := context.Background()
	ref := memory.AgentRef{UserID: "u1", AgentID: "claire"}
	agent := memory.AgentStream(ref.UserID, ref.AgentID)
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	l.append(job.Stream("j1"), &job.Queued{JobID: "j1", UserID: "u1", AgentID: "claire", Types: []memory.Type{memory.Note}, Model: "m2", Dimensions: 2, EstimatedMemories: 4, QueuedAt: now})

	v := l.view("u1", "j1")
	if v.Status != job.StatusQueued || v.MemoriesTotal != 4 || v.EstimatedMemories != 4 || !v.StartedAt.IsZero() || !v.QueuedAt.Equal(now) || len(v.Errors) != 0 {
		t.Fatalf("queued: %+v", v)
	}
	if _, ok, _ := l.jobs.Job(ctx, "u2", "j1"); ok {
		t.Fatal("another user sees the job")
	}
	if active, ok, _ := l.jobs.ActiveJobForAgent(ctx, "u1", "claire"); !ok || active.JobID != "j1" {
		t.Fatal("no active job for the agent")
	}
	// Embeddings recorded before the job runs are not its progress.
	l.append(agent, embedded(ref, "a", "j1"))
	l.append(job.Stream("j1"), &job.Started{JobID: "j1", UserID: "u1", RunnerID: "r1", MemoriesTotal: 5, StartedAt: now})
	l.append(agent, embedded(ref, "a", "j1"), embedded(ref, "b", "j1"), embedded(ref, "c", ""))
	// A batch redone after a takeover is not counted again.
	l.append(job.Stream("j1"), &job.Resumed{JobID: "j1", UserID: "u1", RunnerID: "r2", ResumedAt: now})
	l.append(agent, embedded(ref, "a", "j1"), embedded(ref, "b", "j1"), embedded(ref, "c", "j1"))
	l.append(job.Stream("j1"), &job.BatchFailed{JobID: "j1", UserID: "u1", Attempt: 1, Message: "down", FailedAt: now},
		&job.MemorySkipped{JobID: "j1", UserID: "u1", MemoryID: "d", Message: "too long", SkippedAt: now})
	// Another user's event naming the job changes nothing.
	l.append(memory.AgentStream("u2", "claire"), embedded(memory.AgentRef{UserID: "u2", AgentID: "claire"}, "z", "j1"))
	v = l.view("u1", "j1")
	if v.Status != job.StatusRunning || v.RunnerID != "r2" || v.MemoriesProcessed != 3 || v.MemoriesSkipped != 1 || v.Cursor != "d" ||
		v.MemoriesTotal != 5 || len(v.Errors) != 2 || v.Errors[0].Message != "attempt 1: down" || v.Errors[1].MemoryID != "d" || v.StartedAt.IsZero() {
		t.Fatalf("running: %+v", v)
	}
	active, err := l.jobs.ActiveJobs(ctx, 10)
	if err != nil || len(active) != 1 || active[0].Cursor != "d" {
		t.Fatalf("active: %+v %v", active, err)
	}
	l.append(job.Stream("j1"), &job.Finishing{JobID: "j1", UserID: "u1", FinishingAt: now}, &job.Completed{JobID: "j1", UserID: "u1", CompletedAt: now})
	l.append(agent, embedded(ref, "e", "j1"))
	v = l.view("u1", "j1")
	if v.Status != job.StatusCompleted || !v.Finishing || v.MemoriesProcessed != 3 || v.MemoriesTotal != 4 || !v.CompletedAt.Equal(now) || !v.EndedAt.Equal(now) {
		t.Fatalf("completed: %+v", v)
	}
	if active, _ := l.jobs.ActiveJobs(ctx, 10); len(active) != 0 {
		t.Fatalf("a completed job is active: %+v", active)
	}

	l.append(job.Stream("j2"), &job.Queued{JobID: "j2", UserID: "u1", AgentID: "claire", Types: []memory.Type{memory.Note}, Model: "m2", Dimensions: 2, QueuedAt: now},
		&job.Failed{JobID: "j2", UserID: "u1", Reason: "gave up", FailedAt: now})
	if v := l.view("u1", "j2"); v.Status != job.StatusFailed || v.Reason != "gave up" || !v.CompletedAt.IsZero() || v.EndedAt.IsZero() {
		t.Fatalf("failed: %+v", v)
	}

	// A rebuild from the log gives the same state.
	var before, after bytes.Buffer
	if err := l.jobs.Export(ctx, &before); err != nil {
		t.Fatal(err)
	}
	if err := l.jobs.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, _ := l.jobs.Checkpoint(ctx); pos != 0 {
		t.Fatalf("checkpoint after reset: %d", pos)
	}
	l.fed = 0
	l.feed()
	if err := l.jobs.Export(ctx, &after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) || before.Len() == 0 {
		t.Fatalf("rebuild differs:\n%s\n---\n%s", before.String(), after.String())
	}

	// Deleting the agent removes its jobs.
	l.append(agent, &memory.AgentDeleted{AgentRef: ref})
	if _, ok, _ := l.jobs.Job(ctx, "u1", "j1"); ok {
		t.Fatal("a deleted agent's job remains")
	}
}

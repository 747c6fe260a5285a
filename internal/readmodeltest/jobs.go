package readmodeltest

import (
	"bytes"
	"context"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections"
)

// Jobs is a jobs read model store with the queries the job runner and the
// API read it by (commands.JobReadModel).
type Jobs interface {
	job.ReadModel
	Job(ctx context.Context, userID, jobID string) (job.View, bool, error)
	ActiveJobs(ctx context.Context, limit int) ([]job.View, error)
	ActiveJobForAgent(ctx context.Context, userID, agentID string) (job.View, bool, error)
	// CountByStatus counts the jobs in each status, for the metrics.
	CountByStatus(ctx context.Context) (map[string]int, error)
	Export(ctx context.Context, w io.Writer) error
}

type jobOp = op[job.ReadModelTx]

func queued(jobID, userID, agentID string, estimated int) jobOp {
	return func(ctx context.Context, tx job.ReadModelTx) error {
		return tx.AddJob(ctx, job.Queued{JobID: jobID, UserID: userID, AgentID: agentID, Types: []memory.Type{memory.Note},
			Model: "m2", Dimensions: 8, EstimatedMemories: estimated, QueuedAt: t0}, t0)
	}
}

func started(jobID, userID string, total int) jobOp {
	return func(ctx context.Context, tx job.ReadModelTx) error {
		return tx.Start(ctx, job.Started{JobID: jobID, UserID: userID, RunnerID: "r1", MemoriesTotal: total, StartedAt: t0.Add(time.Second)}, t0.Add(time.Second))
	}
}

// RunJobs runs the suite against the stores open returns.
func RunJobs(t *testing.T, open func(t *testing.T) Jobs) {
	ctx := context.Background()
	get := func(t *testing.T, s Jobs, userID, jobID string) job.View {
		t.Helper()
		v, found, err := s.Job(ctx, userID, jobID)
		if err != nil || !found {
			t.Fatalf("job %s of %s: %v %v", jobID, userID, found, err)
		}
		return v
	}
	t.Run("UnitOfWork", unitOfWork[job.ReadModelTx]{
		open: func(t *testing.T) domain.ReadModelStore[job.ReadModelTx] { return open(t) },
		put: func(ctx context.Context, tx job.ReadModelTx, i int) error {
			return queued(id("j", i), "u1", "a1", 1)(ctx, tx)
		},
		seen: func(t *testing.T, s domain.ReadModelStore[job.ReadModelTx], i int) bool {
			_, found, err := s.(Jobs).Job(ctx, "u1", id("j", i))
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	}.run)

	t.Run("ProgressCountsEachMemoryOnceInCursorOrder", func(t *testing.T) {
		s := open(t)
		at := t0.Add(time.Minute)
		mustApply(t, s, 1, queued("j1", "u1", "a1", 3), started("j1", "u1", 3),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.CountEmbedded(ctx, "u1", "j1", "m1", at)
			},
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.CountEmbedded(ctx, "u1", "j1", "m1", at)
			}, // redone after a takeover
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.CountEmbedded(ctx, "u2", "j1", "m2", at)
			}, // another user's: ignored
			func(ctx context.Context, tx job.ReadModelTx) error { return tx.CountSkipped(ctx, "j1", "m3", at) },
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.AddError(ctx, "j1", 7, job.ErrorEntry{At: at, MemoryID: "m3", Message: "too long"})
			},
			func(ctx context.Context, tx job.ReadModelTx) error { return tx.CountSkipped(ctx, "j1", "m2", at) }, // below the cursor
		)
		v := get(t, s, "u1", "j1")
		if v.Status != job.StatusRunning || v.RunnerID != "r1" || v.MemoriesTotal != 3 || v.MemoriesProcessed != 1 || v.MemoriesSkipped != 1 || v.Cursor != "m3" {
			t.Fatalf("progress: %+v", v)
		}
		if !v.LastActivityAt.Equal(at) || !v.StartedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("times: started %v, last activity %v", v.StartedAt, v.LastActivityAt)
		}
		if len(v.Errors) != 1 || v.Errors[0].MemoryID != "m3" || v.Errors[0].Message != "too long" || !v.Errors[0].At.Equal(at) {
			t.Fatalf("errors: %+v", v.Errors)
		}
		if _, found, _ := s.Job(ctx, "u2", "j1"); found {
			t.Fatal("another user's job is visible")
		}
	})

	t.Run("ProgressOnlyWhileRunning", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, queued("j1", "u1", "a1", 3),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.CountEmbedded(ctx, "u1", "j1", "m1", t0)
			},
		)
		if v := get(t, s, "u1", "j1"); v.Status != job.StatusQueued || v.MemoriesProcessed != 0 || v.EstimatedMemories != 3 {
			t.Fatalf("queued job counted progress: %+v", v)
		}
	})

	t.Run("EndStates", func(t *testing.T) {
		s := open(t)
		end := t0.Add(time.Hour)
		mustApply(t, s, 1,
			queued("done", "u1", "a1", 5), started("done", "u1", 5),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.CountEmbedded(ctx, "u1", "done", "m1", t0)
			},
			func(ctx context.Context, tx job.ReadModelTx) error { return tx.MarkFinishing(ctx, "done", t0) },
			func(ctx context.Context, tx job.ReadModelTx) error { return tx.Complete(ctx, "done", end, end) },
			queued("cancelled", "u1", "a2", 1),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.End(ctx, "cancelled", job.StatusCancelled, "", end, end)
			},
			queued("failed", "u1", "a3", 1), started("failed", "u1", 1),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.End(ctx, "failed", job.StatusFailed, "provider down", end, end)
			},
			queued("open", "u1", "a4", 1),
		)
		if v := get(t, s, "u1", "done"); v.Status != job.StatusCompleted || !v.Finishing || v.MemoriesTotal != 1 || !v.CompletedAt.Equal(end) || !v.EndedAt.Equal(end) {
			t.Fatalf("completed: %+v (total is what the job went through)", v)
		}
		if v := get(t, s, "u1", "cancelled"); v.Status != job.StatusCancelled || !v.EndedAt.Equal(end) || !v.CompletedAt.IsZero() {
			t.Fatalf("cancelled: %+v", v)
		}
		if v := get(t, s, "u1", "failed"); v.Status != job.StatusFailed || v.Reason != "provider down" || !v.EndedAt.Equal(end) {
			t.Fatalf("failed: %+v", v)
		}
		active, err := s.ActiveJobs(ctx, 10)
		if err != nil || len(active) != 1 || active[0].JobID != "open" {
			t.Fatalf("active jobs: %+v %v; want only the open one", active, err)
		}
		if _, found, _ := s.ActiveJobForAgent(ctx, "u1", "a1"); found {
			t.Fatal("a completed job is active")
		}
		counts, err := s.CountByStatus(ctx)
		want := map[string]int{"completed": 1, "cancelled": 1, "failed": 1, "queued": 1}
		if err != nil || !maps.Equal(counts, want) {
			t.Fatalf("jobs by status: %v %v, want %v", counts, err, want)
		}
	})

	t.Run("ErrorsOfAnUnknownJobAreDropped", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, func(ctx context.Context, tx job.ReadModelTx) error {
			return tx.AddError(ctx, "ghost", 1, job.ErrorEntry{At: t0, Message: "x"})
		}, queued("ghost", "u1", "a1", 1))
		if v := get(t, s, "u1", "ghost"); len(v.Errors) != 0 {
			t.Fatalf("errors recorded before the job existed: %+v", v.Errors)
		}
	})

	t.Run("DeleteAgentJobsIsScopedToTheAgent", func(t *testing.T) {
		s := open(t)
		mustApply(t, s, 1, queued("j1", "u1", "a1", 1), queued("j2", "u1", "a2", 1), queued("j3", "u2", "a1", 1),
			func(ctx context.Context, tx job.ReadModelTx) error {
				return tx.AddError(ctx, "j1", 4, job.ErrorEntry{At: t0, Message: "x"})
			},
			func(ctx context.Context, tx job.ReadModelTx) error { return tx.DeleteAgentJobs(ctx, "u1", "a1") },
			// A job of the same id queued again after the delete starts clean.
			queued("j1", "u1", "a1", 1),
		)
		if v := get(t, s, "u1", "j1"); len(v.Errors) != 0 {
			t.Fatalf("the deleted job's errors survived: %+v", v.Errors)
		}
		get(t, s, "u1", "j2")
		get(t, s, "u2", "j3")
		mustApply(t, s, 7, func(ctx context.Context, tx job.ReadModelTx) error { return tx.DeleteAgentJobs(ctx, "u1", "a1") })
		if _, found, _ := s.Job(ctx, "u1", "j1"); found {
			t.Fatal("job of a deleted agent survived")
		}
	})

	// The progress of jobs as the projection derives it from the job and
	// agent streams (every batch delivered twice, as a redelivery would),
	// and that state rebuilt after a Reset.
	t.Run("ProjectionFedProgressAndReplay", func(t *testing.T) {
		l := &jobLog{t: t, jobs: open(t)}
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
		l.append(agent, embeddedBy(ref, "a", "j1"))
		l.append(job.Stream("j1"), &job.Started{JobID: "j1", UserID: "u1", RunnerID: "r1", MemoriesTotal: 5, StartedAt: now})
		l.append(agent, embeddedBy(ref, "a", "j1"), embeddedBy(ref, "b", "j1"), embeddedBy(ref, "c", ""))
		// A batch redone after a takeover is not counted again.
		l.append(job.Stream("j1"), &job.Resumed{JobID: "j1", UserID: "u1", RunnerID: "r2", ResumedAt: now})
		l.append(agent, embeddedBy(ref, "a", "j1"), embeddedBy(ref, "b", "j1"), embeddedBy(ref, "c", "j1"))
		l.append(job.Stream("j1"), &job.BatchFailed{JobID: "j1", UserID: "u1", Attempt: 1, Message: "down", FailedAt: now},
			&job.MemorySkipped{JobID: "j1", UserID: "u1", MemoryID: "d", Message: "too long", SkippedAt: now})
		// Another user's event naming the job changes nothing.
		l.append(memory.AgentStream("u2", "claire"), embeddedBy(memory.AgentRef{UserID: "u2", AgentID: "claire"}, "z", "j1"))
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
		l.append(agent, embeddedBy(ref, "e", "j1"))
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
		l.replay()
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
	})
}

// jobLog feeds the jobs projection from an event log in memory.
type jobLog struct {
	eventLog
	t    *testing.T
	jobs Jobs
}

// append records payloads on stream and applies them twice: a redelivery
// must change nothing.
func (l *jobLog) append(stream string, payloads ...domain.Payload) {
	l.t.Helper()
	batch := l.record(l.t, stream, payloads...)
	for range 2 {
		if err := projections.NewJobs(l.jobs).Apply(context.Background(), batch); err != nil {
			l.t.Fatal(err)
		}
	}
}

// replay applies the whole log again (after a Reset).
func (l *jobLog) replay() {
	l.t.Helper()
	if err := projections.NewJobs(l.jobs).Apply(context.Background(), l.all); err != nil {
		l.t.Fatal(err)
	}
}

func (l *jobLog) view(userID, jobID string) job.View {
	l.t.Helper()
	v, ok, err := l.jobs.Job(context.Background(), userID, jobID)
	if err != nil || !ok {
		l.t.Fatalf("job %s of %s: %v %v", jobID, userID, ok, err)
	}
	return v
}

func embeddedBy(ref memory.AgentRef, memoryID, jobID string) memory.MemoryEmbedded {
	return memory.MemoryEmbedded{AgentRef: ref, MemoryID: memoryID, Model: "m2", Dimensions: 2, TextHash: "h", Vector: memory.Vector{1, 0}, JobID: jobID}
}

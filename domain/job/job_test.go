package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
)

var now = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fold appends payloads as events and loads the stream back, as the
// commands do.
func fold(t *testing.T, payloads ...domain.Payload) *job.Job {
	t.Helper()
	events := make([]domain.Event, len(payloads))
	for i, p := range payloads {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		events[i] = domain.Event{Stream: job.Stream("j1"), Version: uint64(i), Type: p.EventType(), Payload: raw}
	}
	j, err := job.Load(events)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func spec() job.Spec {
	return job.Spec{JobID: "j1", UserID: "u1", AgentID: "claire", Types: []memory.Type{memory.Belief, memory.Note}, Model: "m", Dimensions: 8, EstimatedMemories: 3}
}

// mustFor returns a checker of a decision that must yield an event.
func mustFor(t *testing.T) func(domain.Payload, error) domain.Payload {
	return func(p domain.Payload, err error) domain.Payload {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			t.Fatal("no event")
		}
		return p
	}
}

func wantConflict(t *testing.T, err error, code string) {
	t.Helper()
	e, ok := domain.AsError(err)
	if !ok || e.Kind != domain.KindConflict || e.PublicCode() != code {
		t.Fatalf("got %v, want conflict %s", err, code)
	}
}

func TestLifecycleQueuedRunningCompleted(t *testing.T) {
	must := mustFor(t)
	var log []domain.Payload
	log = append(log, must(job.Queue(spec(), now)))
	j := fold(t, log...)
	if j.Status != job.StatusQueued || j.Version != 0 || j.Model != "m" {
		t.Fatalf("after queue: %+v", j)
	}
	if _, err := j.Complete(now); err == nil {
		t.Fatal("a queued job completed")
	}
	log = append(log, must(j.Start("r1", 3, now)))
	j = fold(t, log...)
	if j.Status != job.StatusRunning || j.RunnerID != "r1" {
		t.Fatalf("after start: %+v", j)
	}
	_, err := j.Start("r2", 3, now)
	wantConflict(t, err, "job_running")
	if p, err := j.Resume("r1", now); err != nil || p != nil {
		t.Fatalf("resume by the holder: %v %v", p, err)
	}
	log = append(log, must(j.Resume("r2", now)))
	j = fold(t, log...)
	if j.RunnerID != "r2" {
		t.Fatalf("takeover: %+v", j)
	}
	_, err = j.Complete(now)
	wantConflict(t, err, "job_not_finished")
	log = append(log, must(j.Finish(now)))
	j = fold(t, log...)
	if !j.Finishing || j.Status != job.StatusRunning {
		t.Fatalf("after finish: %+v", j)
	}
	if p, err := j.Finish(now); err != nil || p != nil {
		t.Fatalf("second finish: %v %v", p, err)
	}
	_, err = j.Cancel(now)
	wantConflict(t, err, "job_finishing")
	log = append(log, must(j.Complete(now)))
	j = fold(t, log...)
	if j.Status != job.StatusCompleted {
		t.Fatalf("after complete: %+v", j)
	}
	for _, move := range []func() (domain.Payload, error){
		func() (domain.Payload, error) { return j.Cancel(now) },
		func() (domain.Payload, error) { return j.Fail("x", now) },
		func() (domain.Payload, error) { return j.Start("r", 0, now) },
		func() (domain.Payload, error) { return j.Skip("m", "x", now) },
		func() (domain.Payload, error) { return j.Resume("r", now) },
	} {
		_, err := move()
		wantConflict(t, err, "job_finished")
	}
}

func TestCancelQueuedAndRunning(t *testing.T) {
	must := mustFor(t)
	q := must(job.Queue(spec(), now))
	j := fold(t, q)
	c := must(j.Cancel(now))
	if got := fold(t, q, c).Status; got != job.StatusCancelled {
		t.Fatalf("status %s", got)
	}
	s := must(j.Start("r", 1, now))
	j = fold(t, q, s)
	c = must(j.Cancel(now))
	j = fold(t, q, s, c)
	if j.Status != job.StatusCancelled {
		t.Fatalf("status %s", j.Status)
	}
	_, err := j.Cancel(now)
	wantConflict(t, err, "job_finished")
}

func TestFailRecordsReason(t *testing.T) {
	must := mustFor(t)
	q := must(job.Queue(spec(), now))
	j := fold(t, q)
	if _, err := j.RecordBatchFailure(1, "down", now); err == nil {
		t.Fatal("a queued job recorded a batch failure")
	}
	f := must(j.Fail("provider down", now)).(*job.Failed)
	if f.Reason != "provider down" || !fold(t, q, f).Status.Terminal() {
		t.Fatalf("failed: %+v", f)
	}
}

func TestQueueValidates(t *testing.T) {
	bad := spec()
	bad.Types = []memory.Type{memory.Drive}
	if _, err := job.Queue(bad, now); domain.ErrorKind(err) != domain.KindInvalid {
		t.Fatalf("drives: %v", err)
	}
	bad = spec()
	bad.Dimensions = 0
	if _, err := job.Queue(bad, now); domain.ErrorKind(err) != domain.KindInvalid {
		t.Fatalf("no dimensions: %v", err)
	}
	bad = spec()
	bad.AgentID = "bad agent"
	if _, err := job.Queue(bad, now); domain.ErrorKind(err) != domain.KindInvalid {
		t.Fatalf("agent id: %v", err)
	}
	if _, err := job.New().Cancel(now); domain.ErrorKind(err) != domain.KindNotFound {
		t.Fatalf("cancel of nothing: %v", err)
	}
}

func TestClipKeepsMessagesShortAndValid(t *testing.T) {
	must := mustFor(t)
	long := ""
	for len(long) < 2000 {
		long += "é"
	}
	q := must(job.Queue(spec(), now))
	s := must(fold(t, q).Start("r", 0, now))
	b := must(fold(t, q, s).RecordBatchFailure(1, long, now)).(*job.BatchFailed)
	if len(b.Message) > 510 || !json.Valid([]byte(`"`+b.Message+`"`)) {
		t.Fatalf("message of %d bytes", len(b.Message))
	}
}

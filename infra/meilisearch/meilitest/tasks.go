package meilitest

import (
	"net/http"
	"strconv"
	"time"
)

// Task statuses, as Meilisearch names them.
const (
	statusEnqueued   = "enqueued"
	statusProcessing = "processing"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
)

// task is an asynchronous operation; apply runs with s.mu held when the
// worker processes it.
type task struct {
	UID        int64      `json:"uid"`
	IndexUID   string     `json:"indexUid"`
	Status     string     `json:"status"`
	Type       string     `json:"type"`
	Error      *apiError  `json:"error"`
	EnqueuedAt time.Time  `json:"enqueuedAt"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`

	apply func() *apiError
}

// enqueue records a task and answers 202 with its summary, as every
// Meilisearch write does.
func (s *Server) enqueue(w http.ResponseWriter, indexUID, typ string, apply func() *apiError) {
	s.mu.Lock()
	t := &task{UID: int64(len(s.tasks)), IndexUID: indexUID, Status: statusEnqueued, Type: typ, EnqueuedAt: time.Now().UTC(), apply: apply}
	s.tasks = append(s.tasks, t)
	s.pending = append(s.pending, t)
	summary := map[string]any{"taskUid": t.UID, "indexUid": t.IndexUID, "status": t.Status, "type": t.Type, "enqueuedAt": t.EnqueuedAt}
	s.mu.Unlock()
	s.poke()
	writeJSON(w, http.StatusAccepted, summary)
}

func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// work applies pending tasks in order: each stays enqueued for TaskDelay,
// then processing for TaskDelay, then succeeds or fails.
func (s *Server) work() {
	defer close(s.done)
	for {
		s.mu.Lock()
		var next *task
		if !s.held && len(s.pending) > 0 {
			next = s.pending[0]
		}
		s.mu.Unlock()
		if next == nil {
			select {
			case <-s.wake:
				continue
			case <-s.stop:
				return
			}
		}
		if d := time.Until(next.EnqueuedAt.Add(s.opts.TaskDelay)); d > 0 {
			select {
			case <-time.After(d):
			case <-s.stop:
				return
			}
		}
		s.mu.Lock()
		if s.held { // held while waiting: leave it enqueued
			s.mu.Unlock()
			continue
		}
		s.pending = s.pending[1:]
		started := time.Now().UTC()
		next.Status, next.StartedAt = statusProcessing, &started
		s.mu.Unlock()
		// Processing takes TaskDelay too; its changes show only when it
		// has succeeded, as Meilisearch commits a batch at once.
		select {
		case <-time.After(s.opts.TaskDelay):
		case <-s.stop:
			return
		}
		s.mu.Lock()
		if e := next.apply(); e != nil {
			next.Status, next.Error = statusFailed, e
		} else {
			next.Status = statusSucceeded
		}
		finished := time.Now().UTC()
		next.FinishedAt = &finished
		s.mu.Unlock()
	}
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	uid, err := strconv.ParseInt(r.PathValue("uid"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || uid < 0 || uid >= int64(len(s.tasks)) {
		writeError(w, http.StatusNotFound, newAPIError("task_not_found", "invalid_request", "Task `%s` not found.", r.PathValue("uid")))
		return
	}
	writeJSON(w, http.StatusOK, s.tasks[uid])
}

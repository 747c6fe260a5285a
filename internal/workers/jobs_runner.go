package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/job"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/internal/pause"
)

// DefaultJobMaxAttempts is how many failed attempts in a row at one batch
// fail a job unless RunnerConfig.MaxAttempts says otherwise.
const DefaultJobMaxAttempts = 5

// RunnerConfig tunes a JobRunner. Zero values take the defaults.
type RunnerConfig struct {
	// ID names this runner in the events of the jobs it holds. A runner
	// restarted with the same ID resumes its running jobs at once; other
	// runners wait for LeaseTimeout of inactivity before taking one over.
	// Default: the host name.
	ID string
	// BatchSize is the number of memories embedded and recorded per
	// append (default 128).
	BatchSize int
	// PollInterval is how often the runner looks for work when not kicked
	// (default 2 s).
	PollInterval time.Duration
	// LeaseTimeout is how long a running job may go without any event
	// before another runner takes it over (default 5 min).
	LeaseTimeout time.Duration
	// MaxAttempts consecutive failed attempts at a batch fail the job
	// (default 5); RetryBackoff is the first wait, doubled per attempt up
	// to MaxBackoff (defaults 1 s and 1 min).
	MaxAttempts  int
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// EmbedTimeout bounds one provider call for a batch (default 2 min).
	EmbedTimeout time.Duration
	// BatchDelay pauses between batches, to throttle a job (default 0).
	BatchDelay time.Duration
	// Queue, when set, is kicked after an agent switch: memories written
	// during the job got vectors in the old model only, and the embedding
	// queue gives them their new-model vectors.
	Queue Kicker
	// AfterBatch, when set, is called after each batch is recorded, with
	// the job id and the number of memories in the batch (a test hook).
	AfterBatch func(jobID string, n int)
	Logger     *slog.Logger
	Now        func() time.Time
}

func (c RunnerConfig) withDefaults() RunnerConfig {
	if c.ID == "" {
		c.ID, _ = os.Hostname()
		if c.ID == "" {
			c.ID = "engram"
		}
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 128
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.LeaseTimeout <= 0 {
		c.LeaseTimeout = 5 * time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultJobMaxAttempts
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.EmbedTimeout <= 0 {
		c.EmbedTimeout = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// JobRunner does the work of bulk re-embedding jobs: one goroutine (Run)
// that claims queued jobs and resumes running ones, one batch per Step.
// Everything it knows about progress comes from the log, so any runner over
// the same store can resume a job where another stopped.
type JobRunner struct {
	cfg      RunnerConfig
	writer   Writer
	jobs     ActiveJobs
	memories JobMemories
	catalog  domain.Embedder
	kick     chan struct{}

	mu      sync.Mutex
	rates   map[string]float64    // model → measured memories per second
	retries map[string]retryState // job id → failed attempts in a row
}

type retryState struct {
	attempts  int
	notBefore time.Time
}

// NewJobRunner returns a runner; call Run to start it.
func NewJobRunner(writer Writer, jobs ActiveJobs, memories JobMemories, catalog domain.Embedder, cfg RunnerConfig) *JobRunner {
	return &JobRunner{
		cfg: cfg.withDefaults(), writer: writer, jobs: jobs, memories: memories, catalog: catalog,
		kick:    make(chan struct{}, 1),
		rates:   map[string]float64{},
		retries: map[string]retryState{},
	}
}

// ID is the runner's name in job events.
func (r *JobRunner) ID() string { return r.cfg.ID }

// Kick wakes the runner now instead of at its next poll.
func (r *JobRunner) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run works on jobs until ctx ends, and returns ctx's error.
func (r *JobRunner) Run(ctx context.Context) error {
	for {
		did, err := r.Step(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			r.cfg.Logger.ErrorContext(ctx, "re-embedding runner step failed; retrying", "runner", r.cfg.ID, "error", err)
			did = false
		}
		if did {
			if r.cfg.BatchDelay > 0 && !pause.For(ctx, r.cfg.BatchDelay) {
				return ctx.Err()
			}
			continue
		}
		timer := time.NewTimer(r.idleWait())
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-r.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// idleWait is how long to sleep when there is nothing to do: the poll
// interval, or less when a retry falls due sooner.
func (r *JobRunner) idleWait() time.Duration {
	wait := r.cfg.PollInterval
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.retries {
		if d := st.notBefore.Sub(now); d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	return wait
}

// activeScan bounds how many active jobs one Step considers.
const activeScan = 100

// Step does one unit of work on the oldest job this runner may work on:
// claim it, embed and record one batch, or finish it. It reports whether
// there was anything to do.
func (r *JobRunner) Step(ctx context.Context) (bool, error) {
	views, err := r.jobs.ActiveJobs(ctx, activeScan)
	if err != nil {
		return false, err
	}
	now := r.cfg.Now()
	for _, v := range views {
		heldElsewhere := v.Status == job.StatusRunning && v.RunnerID != r.cfg.ID && now.Sub(v.LastActivityAt) < r.cfg.LeaseTimeout
		if heldElsewhere || r.backingOff(v.JobID, now) {
			continue
		}
		if err := r.advance(ctx, v); err != nil {
			return true, fmt.Errorf("job %s: %w", v.JobID, err)
		}
		return true, nil
	}
	return false, nil
}

// advance moves one job a step, deciding on its stream (the read model may
// lag behind other runners' writes).
func (r *JobRunner) advance(ctx context.Context, v job.View) error {
	j, err := job.Read(ctx, r.writer.Store(), v.JobID)
	if err != nil {
		return err
	}
	if !j.Exists() || j.Status.Terminal() {
		r.clearRetries(v.JobID)
		return nil
	}
	now := r.cfg.Now()
	if j.Status == job.StatusQueued {
		total, err := r.memories.CountMemories(ctx, j.UserID, j.AgentID, j.Types)
		if err != nil {
			return err
		}
		return r.appendJob(ctx, j, func() (domain.Payload, error) { return j.Start(r.cfg.ID, total, now) })
	}
	if j.RunnerID != r.cfg.ID {
		r.cfg.Logger.InfoContext(ctx, "taking over re-embedding job", "job", j.ID, "from", j.RunnerID, "runner", r.cfg.ID)
		return r.appendJob(ctx, j, func() (domain.Payload, error) { return j.Resume(r.cfg.ID, now) })
	}
	agent, ok, err := r.memories.Agent(ctx, j.UserID, j.AgentID)
	if err != nil {
		return err
	}
	if !ok {
		return r.fail(ctx, j, fmt.Sprintf("agent %s was deleted", j.AgentID))
	}
	if j.Finishing {
		return r.finish(ctx, j, agent)
	}
	batch, err := r.memories.MemoryIDsAfter(ctx, j.UserID, j.AgentID, j.Types, v.Cursor, r.cfg.BatchSize)
	if err != nil {
		return err
	}
	if len(batch) == 0 {
		// Finishing first: from here a cancel cannot race with the switch.
		return r.appendJob(ctx, j, func() (domain.Payload, error) { return j.Finish(now) })
	}
	return r.embedBatch(ctx, j, batch)
}

// appendJob appends the event decide returns (if any) to the job stream at
// the version j was loaded from. A conflict means another writer moved the
// job: the next Step decides again on fresh state.
func (r *JobRunner) appendJob(ctx context.Context, j *job.Job, decide func() (domain.Payload, error)) error {
	ev, err := decide()
	if err != nil || ev == nil {
		return err
	}
	_, err = r.writer.Append(ctx, job.Stream(j.ID), j.Version, r.meta(j), ev)
	if errors.Is(err, domain.ErrWrongExpectedVersion) {
		return nil
	}
	return err
}

func (r *JobRunner) meta(j *job.Job) domain.Metadata {
	return domain.Metadata{
		Actor:     domain.Actor{Kind: domain.ActorSystem, ID: "reembed-runner:" + r.cfg.ID, UserID: j.UserID},
		RequestID: "job-" + j.ID,
		Source:    domain.SourceSystem,
	}
}

// finish switches the agent to the job's model, unless it already is on it
// (a resumed finish, or a job that only refreshed vectors), and completes
// the job. Search moves to the new vectors in one event.
func (r *JobRunner) finish(ctx context.Context, j *job.Job, agent memory.AgentView) error {
	if agent.EmbeddingModel != j.Model || agent.Dimensions != j.Dimensions {
		sw := memory.AgentModelSwitched{AgentRef: j.AgentRef(), Model: j.Model, Dimensions: j.Dimensions, JobID: j.ID}
		if _, err := r.writer.Append(ctx, memory.AgentStream(j.UserID, j.AgentID), domain.ExpectAny, r.meta(j), sw); err != nil {
			return err
		}
		if r.cfg.Queue != nil {
			r.cfg.Queue.Kick()
		}
	}
	if err := r.appendJob(ctx, j, func() (domain.Payload, error) { return j.Complete(r.cfg.Now()) }); err != nil {
		return err
	}
	r.cfg.Logger.InfoContext(ctx, "re-embedding job completed", "job", j.ID, "agent", j.AgentID, "model", j.Model)
	r.clearRetries(j.ID)
	return nil
}

// fail closes the job with reason.
func (r *JobRunner) fail(ctx context.Context, j *job.Job, reason string) error {
	r.cfg.Logger.WarnContext(ctx, "re-embedding job failed", "job", j.ID, "agent", j.AgentID, "reason", reason)
	r.clearRetries(j.ID)
	return r.appendJob(ctx, j, func() (domain.Payload, error) { return j.Fail(reason, r.cfg.Now()) })
}

// clearRetries forgets a job's failed attempts (it succeeded or ended).
func (r *JobRunner) clearRetries(jobID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.retries, jobID)
}

// holds reports whether this runner may still record work for j: it runs,
// is held here, and is not finishing.
func (r *JobRunner) holds(j *job.Job) bool {
	return j.Status == job.StatusRunning && j.RunnerID == r.cfg.ID && !j.Finishing
}

func (r *JobRunner) backingOff(jobID string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Before(r.retries[jobID].notBefore)
}

// Rate is the measured embedding pace of model in memories per second, once
// a job has used it.
func (r *JobRunner) Rate(model string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rate, ok := r.rates[model]
	return rate, ok
}

func (r *JobRunner) observeRate(model string, n int, d time.Duration) {
	if d <= 0 || n == 0 {
		return
	}
	rate := float64(n) / d.Seconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.rates[model]; ok {
		rate = 0.7*old + 0.3*rate // smooth: batches vary
	}
	r.rates[model] = rate
}

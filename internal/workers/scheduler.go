package workers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// SchedulerConfig wires a Scheduler.
type SchedulerConfig struct {
	Pipeline ScheduledProcessor // required
	Agents   AgentDirectory     // required
	Interval time.Duration      // between sweeps; must be > 0
	// Concurrency bounds the agents processed at once (default
	// DefaultSchedulerConcurrency).
	Concurrency int
	// Ticks, when set, replaces the interval's ticker: a sweep starts at
	// each value received (tests drive the scheduler with it).
	Ticks  <-chan time.Time
	Logger *slog.Logger // nil discards
}

// DefaultSchedulerConcurrency is how many agents a sweep processes at once
// unless told otherwise.
const DefaultSchedulerConcurrency = 2

// schedulerPage is how many agents a sweep lists at a time.
const schedulerPage = 500

// Scheduler runs processing in the background: every interval it visits
// each agent and runs the transitions whose triggers fire (Pipeline.
// ScheduledPass), so raw captures become suggestions without anyone
// calling /process.
type Scheduler struct {
	cfg    SchedulerConfig
	logger *slog.Logger
}

// NewScheduler checks cfg.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.Pipeline == nil || cfg.Agents == nil {
		return nil, errors.New("workers: the scheduler needs the pipeline and the agent directory")
	}
	if cfg.Interval <= 0 && cfg.Ticks == nil {
		return nil, errors.New("workers: the scheduler needs a positive interval")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultSchedulerConcurrency
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, logger: logger.With("component", "processing-scheduler")}, nil
}

// Run sweeps at every tick until ctx ends. A sweep in progress when ctx
// ends starts no further agent and waits for the passes under way.
func (s *Scheduler) Run(ctx context.Context) error {
	ticks := s.cfg.Ticks
	if ticks == nil {
		t := time.NewTicker(s.cfg.Interval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
			st := s.Sweep(ctx)
			if st.Passes > 0 || st.Errors > 0 {
				s.logger.Info("processing sweep", "agents", st.Agents, "passes", st.Passes, "maintenance", st.Maintenance, "errors", st.Errors)
			}
		}
	}
}

// SweepStats counts what a sweep did.
type SweepStats struct {
	Agents      int // visited
	Passes      int // transitions run
	Maintenance int // stacks skipped in maintenance
	Errors      int
}

// Sweep visits every agent once, at most Concurrency at a time, and
// returns when every visit it started has finished. Once ctx ends it
// starts no further visit; a visit under way runs to its end, detached
// from ctx, so a pass is never cut between its processor's answer and its
// append.
func (s *Scheduler) Sweep(ctx context.Context) SweepStats {
	var (
		mu  sync.Mutex
		st  SweepStats
		wg  sync.WaitGroup
		sem = make(chan struct{}, s.cfg.Concurrency)
	)
	s.visitAll(ctx, sem, &wg, func(agent memory.AgentRef, passes int, maintenance bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		if agent.AgentID != "" { // "": the listing failed
			st.Agents++
		}
		st.Passes += passes
		if maintenance {
			st.Maintenance++
		}
		if err != nil {
			st.Errors++
		}
	})
	wg.Wait()
	return st
}

// visitAll starts a visit of every agent, each once a slot of sem is
// free, and reports each to done; it returns when ctx ends or every visit
// has started.
func (s *Scheduler) visitAll(ctx context.Context, sem chan struct{}, wg *sync.WaitGroup, done func(agent memory.AgentRef, passes int, maintenance bool, err error)) {
	var after memory.AgentRef
	for {
		agents, err := s.cfg.Agents.AgentsAfter(ctx, after, schedulerPage)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Error("list agents", "error", err)
				done(memory.AgentRef{}, 0, false, err)
			}
			return
		}
		for _, agent := range agents {
			if ctx.Err() != nil { // a select with a free slot might still pick it
				return
			}
			select {
			case <-ctx.Done():
				return
			case sem <- struct{}{}:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				passes, maintenance, err := s.cfg.Pipeline.ScheduledPass(context.WithoutCancel(ctx), agent)
				if domain.ErrorKind(err) == domain.KindNotFound {
					err = nil // deleted since it was listed
				}
				if err != nil {
					s.logger.Warn("scheduled pass", "user_id", agent.UserID, "agent_id", agent.AgentID, "error", err)
				}
				done(agent, len(passes), maintenance, err)
			}()
		}
		if len(agents) < schedulerPage {
			return
		}
		after = agents[len(agents)-1]
	}
}

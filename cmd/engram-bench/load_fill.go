package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/engram-memory/engram/client"
)

// ingestStats is the fill phase of the load benchmark.
type ingestStats struct {
	Memories   int     `json:"memories"`
	Batches    int     `json:"batches"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"memories_per_second"`
	Model      string  `json:"model"`
	Dimensions int     `json:"dimensions"`
	Pending    int     `json:"pending_embeddings"` // memories not embedded when their write returned (2xx answers only)
	// NotYetVisible counts the batches answered 503 write_not_yet_visible:
	// stored, but not applied by every projection within the server's
	// visibility timeout. Each was waited for, not sent again.
	NotYetVisible int `json:"not_yet_visible_answers"`
	// Curve is the rate per stretch of the fill (every 10 batches), to
	// show whether ingest slows down as the agent grows.
	Curve []ingestPoint `json:"curve"`
}

// ingestPoint is the ingest rate over the memories (From, To].
type ingestPoint struct {
	From      int     `json:"from"`
	To        int     `json:"to"`
	PerSecond float64 `json:"memories_per_second"`
	// ServerCPUMsPerMemory is the server's CPU time (all threads) per
	// memory over the stretch, when this program started the server: on a
	// shared machine it shows whether a memory costs more as the agent
	// grows, which the rate alone cannot tell from the neighbours' load.
	ServerCPUMsPerMemory *float64 `json:"server_cpu_ms_per_memory,omitempty"`
}

// fill stores cfg.n synthetic notes in one agent through the batch
// endpoint. Batches are generated up front so the generator's time is not
// counted as ingest time, and so that concurrent senders share no RNG.
func fill(ctx context.Context, c *client.Client, meter cpuMeter, gen *synth, cfg loadConfig, log io.Writer) (ingestStats, error) {
	size := min(max(cfg.batchSize, 1), client.MaxBatch)
	// Creation times spread over the year before a fixed day, so time
	// filters have something to cut and runs stay reproducible.
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var batches []client.BatchRequest
	for start := 0; start < cfg.n; start += size {
		items := make([]client.BatchMemory, min(size, cfg.n-start))
		for i := range items {
			text, t := gen.memory()
			created := end.Add(-time.Duration(gen.rng.Int64N(int64(365 * 24 * time.Hour)))).Truncate(time.Second)
			items[i] = client.BatchMemory{
				Type:      "notes",
				Content:   client.NoteContent{Content: text, NoteType: "observation"},
				Tags:      []string{fmt.Sprintf("topic-%d", t)},
				CreatedAt: &created,
			}
		}
		batches = append(batches, client.BatchRequest{AgentID: cfg.agent, Memories: items})
	}

	var (
		mu       sync.Mutex
		st       = ingestStats{Batches: len(batches)}
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan client.BatchRequest)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	began := time.Now()
	mark, markAt, markCPU := 0, began, meter.sample() // start of the current stretch of the curve
	for range cfg.ingestConc {
		wg.Go(func() {
			for b := range next {
				out, late, err := storeBatch(ctx, c, b)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				for _, m := range out {
					st.Memories++
					st.Model, st.Dimensions = m.Embedding.Model, m.Embedding.Dimensions
					if m.Embedding.Status != "embedded" {
						st.Pending++
					}
				}
				if late != nil {
					st.Memories += len(b.Memories)
					st.NotYetVisible++
					fmt.Fprintf(log, "  a batch of %d memories was answered 503 %s: stored, so not sent again; its write %s was visible %.1fs later\n",
						len(b.Memories), client.CodeWriteNotYetVisible, late.token, late.waited.Seconds())
				}
				done := st.Memories
				if err == nil && (done%(10*size) < size || done == cfg.n) {
					now, cpu := time.Now(), meter.sample()
					pt := ingestPoint{From: mark, To: done, PerSecond: float64(done-mark) / now.Sub(markAt).Seconds()}
					cpuNote := ""
					if use := cpuBetween(markCPU, cpu, done-mark, now.Sub(markAt)); use.ServerMSPerRequest != nil {
						pt.ServerCPUMsPerMemory = use.ServerMSPerRequest
						cpuNote = fmt.Sprintf(", server CPU %.2f ms/memory", *use.ServerMSPerRequest)
					}
					st.Curve = append(st.Curve, pt)
					mark, markAt, markCPU = done, now, cpu
					fmt.Fprintf(log, "  %d/%d memories, %.0f/s overall, %.0f/s since %d%s\n", done, cfg.n, float64(done)/now.Sub(began).Seconds(), pt.PerSecond, pt.From, cpuNote)
				}
				mu.Unlock()
			}
		})
	}
send:
	for _, b := range batches {
		select {
		case next <- b:
		case <-ctx.Done():
			break send
		}
	}
	close(next)
	wg.Wait()
	st.Seconds = time.Since(began).Seconds()
	st.PerSecond = float64(st.Memories) / st.Seconds
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return st, fmt.Errorf("fill: %w", firstErr)
	}
	// The agent's own count shows that no batch was stored twice (or lost).
	held, err := agentMemories(ctx, c, cfg.agent)
	if err != nil {
		return st, fmt.Errorf("fill: count the agent's memories: %w", err)
	}
	if held != cfg.n || st.Memories != cfg.n {
		return st, fmt.Errorf("fill: agent %s holds %d memories and the answers counted %d, want the %d sent", cfg.agent, held, st.Memories, cfg.n)
	}
	return st, nil
}

// notYetVisibleWait bounds the wait for a batch answered 503
// write_not_yet_visible: the server gave up after its visibility timeout
// (30 s), so the projections are far behind, but a longer wait than this
// means they are stuck.
const notYetVisibleWait = 5 * time.Minute

// lateWrite is a batch answered 503 write_not_yet_visible and then waited
// for until its consistency token was visible.
type lateWrite struct {
	token  string
	waited time.Duration
}

// storeBatch sends one batch (again after a 429) and returns the memories
// the server created. A 503 write_not_yet_visible means the batch is
// stored and sending it again would store a second copy: storeBatch then
// waits, honouring Retry-After and at most notYetVisibleWait, until the
// write's consistency token is visible, and returns no memories and the
// lateWrite. Any other failure is returned.
func storeBatch(ctx context.Context, c *client.Client, b client.BatchRequest) ([]client.CreatedMemory, *lateWrite, error) {
	var out []client.CreatedMemory
	err := retry429(ctx, func() (err error) {
		out, err = c.CreateMemories(ctx, b)
		return err
	})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeWriteNotYetVisible {
		return out, nil, err
	}
	began := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, notYetVisibleWait)
	defer cancel()
	select {
	case <-waitCtx.Done():
	case <-time.After(e.RetryAfter):
	}
	if werr := c.WaitVisible(waitCtx, e.ConsistencyToken); werr != nil {
		return nil, nil, fmt.Errorf("%w; then waiting (at most %s) for it to be visible: %w", err, notYetVisibleWait, werr)
	}
	return nil, &lateWrite{token: e.ConsistencyToken, waited: time.Since(began)}, nil
}

// agentMemories is the number of memories (not forgotten) the agent holds,
// from the agents listing, which keeps the count (GET /agents/{id}/stats
// would scan all of them).
func agentMemories(ctx context.Context, c *client.Client, agentID string) (int, error) {
	agents, err := allAgents(ctx, c)
	if err != nil {
		return 0, err
	}
	for _, a := range agents {
		if a.AgentID == agentID {
			return a.MemoryCount, nil
		}
	}
	return 0, nil
}

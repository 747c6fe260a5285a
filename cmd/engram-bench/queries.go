package main

import (
	"context"
	"sync"
	"time"

	"github.com/engram-memory/engram/client"
)

// modeRun is every query of a split answered in one search mode.
type modeRun struct {
	Mode        string
	Results     []resultLine // in query order
	QueryTimeMS []float64    // server-side query_time_ms, in query order
	Unmapped    int          // returned ids that no ingested record has
	Elapsed     time.Duration
}

// queryPlan is what every search of a run shares.
type queryPlan struct {
	mode        string
	types       []string
	limit       int
	concurrency int
}

// runQueries searches every query's agent with its text, maps the service
// ids back to benchmark ids and keeps the ranking. The first error stops
// the run.
func runQueries(ctx context.Context, c *client.Client, qs []queryRecord, plan queryPlan, idmap map[string]string) (modeRun, error) {
	run := modeRun{Mode: plan.mode, Results: make([]resultLine, len(qs)), QueryTimeMS: make([]float64, len(qs))}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	jobs := make(chan int)
	start := time.Now()
	for range max(plan.concurrency, 1) {
		wg.Go(func() {
			for i := range jobs {
				q := qs[i]
				var res *client.SearchResponse
				err := retry429(ctx, func() (err error) {
					res, err = c.Search(ctx, client.SearchRequest{
						AgentID: q.AgentID, Query: q.Query, Limit: plan.limit, Types: plan.types, Mode: plan.mode,
					})
					return err
				})
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				ranked := make([]string, 0, len(res.Results))
				for _, r := range res.Results {
					if id, ok := idmap[r.ID]; ok {
						ranked = append(ranked, id)
					} else {
						run.Unmapped++
					}
				}
				run.Results[i] = resultLine{QueryID: q.ID, RankedIDs: ranked}
				run.QueryTimeMS[i] = res.QueryTimeMS
				mu.Unlock()
			}
		})
	}
feed:
	for i := range qs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	run.Elapsed = time.Since(start)
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return run, firstErr
}

package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-memory/engram/client"
)

// modeResult is the latency of one search mode under load.
type modeResult struct {
	Mode       string   `json:"mode"`
	Requests   int      `json:"requests"` // measured, successful
	Errors     int      `json:"errors"`
	ErrorLog   []string `json:"error_samples,omitempty"`
	Seconds    float64  `json:"seconds"`
	Throughput float64  `json:"requests_per_second"`
	EndToEnd   summary  `json:"end_to_end"`  // client clock: request sent → response decoded
	ServerSide summary  `json:"server_side"` // the server's query_time_us (query_time_ms from servers without it)
	// ServerWholeMS is set when every server time was an integer number of
	// milliseconds (a server without query_time_us): the server-side
	// percentiles then have a resolution of 1 ms.
	ServerWholeMS bool    `json:"server_whole_ms"`
	MeanHits      float64 `json:"mean_results"`
	// CPU is what the measured phase cost in CPU time on each side.
	CPU cpuUse `json:"cpu"`
}

// requestTimeout bounds one search, so that a stuck server cannot hold a
// run past its duration by more than this.
const requestTimeout = 30 * time.Second

// measureMode runs cfg.concurrency workers that search back to back:
// first for cfg.warmup (discarded), then for cfg.duration (measured).
// Workers start no request after the deadline; in-flight ones finish.
func measureMode(ctx context.Context, searchers []searchFunc, meter cpuMeter, cfg loadConfig, mode string, queries []string) (modeResult, error) {
	var next atomic.Uint64 // index into queries, shared so workers don't repeat each other
	var cpuFrom, cpuTo cpuSample
	phase := func(d time.Duration) ([]workerLog, time.Duration) {
		deadline := time.Now().Add(d)
		logs := make([]workerLog, cfg.concurrency)
		cpuFrom = meter.sample()
		start := time.Now()
		var wg sync.WaitGroup
		for w := range logs {
			wg.Go(func() {
				for ctx.Err() == nil && time.Now().Before(deadline) {
					q := queries[int(next.Add(1)-1)%len(queries)]
					logs[w].search(ctx, searchers[w], client.SearchRequest{AgentID: cfg.agent, Query: q, Limit: cfg.limit, Mode: mode})
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		cpuTo = meter.sample()
		return logs, elapsed
	}
	if cfg.warmup > 0 {
		phase(cfg.warmup)
	}
	logs, elapsed := phase(cfg.duration)
	if err := ctx.Err(); err != nil {
		return modeResult{}, err
	}

	res := modeResult{Mode: mode, Seconds: elapsed.Seconds()}
	var e2e, server []float64
	hits := 0
	for _, l := range logs {
		e2e = append(e2e, l.e2e...)
		server = append(server, l.server...)
		hits += l.hits
		res.Errors += l.errors
		for _, e := range l.errSamples {
			if len(res.ErrorLog) < 5 {
				res.ErrorLog = append(res.ErrorLog, e)
			}
		}
	}
	res.Requests = len(e2e)
	if res.Requests == 0 {
		return res, fmt.Errorf("no search succeeded (%d errors): %v", res.Errors, res.ErrorLog)
	}
	res.Throughput = float64(res.Requests) / res.Seconds
	res.EndToEnd, res.ServerSide = summarize(e2e), summarize(server)
	res.ServerWholeMS = wholeNumbers(server)
	res.MeanHits = float64(hits) / float64(res.Requests)
	res.CPU = cpuBetween(cpuFrom, cpuTo, res.Requests, elapsed)
	return res, nil
}

// workerLog is what one worker measured; workers share nothing while
// running, so no lock sits in the measured path.
type workerLog struct {
	e2e, server []float64
	hits        int
	errors      int
	errSamples  []string
}

func (l *workerLog) search(ctx context.Context, search searchFunc, req client.SearchRequest) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	t0 := time.Now()
	hits, serverMS, err := search(rctx, req)
	d := time.Since(t0)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return // interrupted, not a server error
		}
		l.errors++
		if len(l.errSamples) < 5 {
			l.errSamples = append(l.errSamples, err.Error())
		}
		return
	}
	l.e2e = append(l.e2e, float64(d.Microseconds())/1000)
	if serverMS >= 0 {
		l.server = append(l.server, serverMS)
	}
	l.hits += hits
}

// searchFunc runs one search: the results' count and the server's own
// time in milliseconds (negative when the answer does not report it).
type searchFunc func(ctx context.Context, req client.SearchRequest) (hits int, serverMS float64, err error)

// restSearch searches with POST /v1/search, which reports its own time.
func restSearch(c *client.Client) searchFunc {
	return func(ctx context.Context, req client.SearchRequest) (int, float64, error) {
		res, err := c.Search(ctx, req)
		if err != nil {
			return 0, 0, err
		}
		server := res.QueryTimeMS
		if res.QueryTimeUS != nil {
			server = float64(*res.QueryTimeUS) / 1000
		}
		return len(res.Results), server, nil
	}
}

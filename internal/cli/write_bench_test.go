package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// BenchmarkWriteMemory measures POST /v1/memories end to end over loopback
// HTTP (embed, append, wait until every projection has applied it) for both
// durability settings and 1, 8 and 64 concurrent writers, each to its own
// agent: writes/s and the p99 latency of one write. The server runs in
// process, so client and server share the cores.
func BenchmarkWriteMemory(b *testing.B) {
	for _, durability := range []string{"durable", "relaxed"} {
		for _, writers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("durability=%s/writers=%d", durability, writers), func(b *testing.B) {
				url, key := startInProcess(b, durability)
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
				defer client.CloseIdleConnections()
				latencies := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							body := fmt.Sprintf(`{"agent_id":"agent-%d","type":"notes","content":{"content":"note %d: the deploy pipeline needs a manual approval step"}}`, w, i)
							start := time.Now()
							if err := postMemory(client, url, key, body); err != nil {
								b.Error(err)
								return
							}
							latencies[i] = time.Since(start)
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				slices.Sort(latencies)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
				b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// startInProcess wires a server over a fresh data dir as `engram serve`
// would, serves it on a loopback port and returns its API URL and the API
// key of a registered user.
func startInProcess(b *testing.B, durability string) (apiURL, key string) {
	b.Helper()
	ctx := context.Background()
	dataDir := b.TempDir()
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), []string{"--data-dir", dataDir, "--durability", durability, "--rate-limit", "0", "--ip-rate-limit", "0"}); err != nil {
		b.Fatal(err)
	}
	cfg.fillFromStandardEnv()
	a, err := newServer(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(a.handler)
	b.Cleanup(func() {
		srv.Close()
		a.close(ctx)
	})
	key, err = testserver.RegisterUser(ctx, srv.URL, cfg.MailOutbox, "bench@example.com")
	if err != nil {
		b.Fatal(err)
	}
	return srv.URL + "/v1", key
}

func postMemory(client *http.Client, apiURL, key, body string) error {
	req, err := http.NewRequest(http.MethodPost, apiURL+"/memories", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /memories: %d %s", resp.StatusCode, msg)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

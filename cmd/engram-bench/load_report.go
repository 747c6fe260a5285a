package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/engram-memory/engram/internal/testserver"
)

// loadReport is the JSON that `engram-bench load` writes.
type loadReport struct {
	StartedAt       time.Time   `json:"started_at"`
	Server          string      `json:"server"`
	PID             int         `json:"pid,omitempty"` // 0 for --server
	Model           string      `json:"model"`
	Dimensions      int         `json:"dimensions"`
	N               int         `json:"n"`
	Concurrency     int         `json:"concurrency"`
	DurationPerMode string      `json:"duration_per_mode"`
	Limit           int         `json:"limit"`
	Seed            uint64      `json:"seed"`
	Via             string      `json:"via"`                  // rest or mcp
	MCPClient       string      `json:"mcp_client,omitempty"` // raw or sdk, with via mcp
	Ingest          ingestStats `json:"ingest"`
	// SettleSeconds is how long the started server took to go idle after
	// the fill (background vector indexing) before searches were measured.
	SettleSeconds float64 `json:"settle_seconds"`
	// LoadAverage and LoadAverageAfter are the machine's load averages
	// (1, 5, 15 min) before and after the measured searches.
	LoadAverage      string       `json:"load_average,omitempty"`
	LoadAverageAfter string       `json:"load_average_after,omitempty"`
	Memory           memoryReport `json:"memory"`
	Modes            []modeResult `json:"modes"`
	// Recall is the vector index's recall@10 against exact search; nil
	// for --server (the driver reads the stored vectors from the data
	// directory of a server it started).
	Recall *recallReport `json:"recall,omitempty"`
}

// memoryReport is the server's resident memory around the fill. Only for
// a server this program started (it reads /proc/PID/status).
type memoryReport struct {
	BeforeFill  *testserver.MemStat `json:"before_fill,omitempty"`
	AfterFill   *testserver.MemStat `json:"after_fill,omitempty"`
	AfterSearch *testserver.MemStat `json:"after_search,omitempty"`
	// VectorBytes is n × dimensions × 4, the raw float32 size of the
	// vectors, to hold the RSS growth against.
	VectorBytes int64 `json:"vector_bytes"`
}

func (r loadReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "load: %d memories (%s, %d dims), concurrency %d, %s per mode, limit %d\n",
		r.N, r.Model, r.Dimensions, r.Concurrency, r.DurationPerMode, r.Limit)
	fmt.Fprintf(&b, "ingest: %d memories in %.1fs = %.0f memories/s (batches of ≤1000)\n",
		r.Ingest.Memories, r.Ingest.Seconds, r.Ingest.PerSecond)
	if m := r.Memory; m.BeforeFill != nil && m.AfterFill != nil {
		fmt.Fprintf(&b, "server RSS: %s before fill, %s after fill (+%s; raw vectors %s)",
			mib(m.BeforeFill.RSSBytes), mib(m.AfterFill.RSSBytes), mib(m.AfterFill.RSSBytes-m.BeforeFill.RSSBytes), mib(m.VectorBytes))
		if m.AfterSearch != nil {
			fmt.Fprintf(&b, ", %s after search", mib(m.AfterSearch.RSSBytes))
			if a := m.AfterSearch.AnonBytes; a > 0 {
				fmt.Fprintf(&b, " (%s anonymous, the rest mapped file pages)", mib(a))
			}
			fmt.Fprintf(&b, ", peak %s", mib(m.AfterSearch.PeakRSSBytes))
		}
		b.WriteString("\n")
	}
	if r.SettleSeconds > 0 {
		fmt.Fprintf(&b, "server idle %.1fs after the fill (background indexing) before measuring\n", r.SettleSeconds)
	}
	if r.LoadAverage != "" {
		fmt.Fprintf(&b, "machine load average (1/5/15 min): %s before searching, %s after\n", r.LoadAverage, r.LoadAverageAfter)
	}
	switch {
	case r.Via == viaMCP && r.MCPClient == mcpClientSDK:
		b.WriteString("searches via the MCP tool search_memories over /mcp, with the Go MCP SDK's client (one session per worker)\n")
	case r.Via == viaMCP:
		b.WriteString("searches via the MCP tool search_memories over /mcp, with a raw client of the stateless 2026-07-28 revision (one POST per call)\n")
	}
	fmt.Fprintf(&b, "%-8s %8s %8s %6s | %-26s | %-26s | %s\n", "mode", "requests", "req/s", "errors",
		"end-to-end p50/p95/p99 ms", "server p50/p95/p99 ms", "CPU ms/request server/driver")
	whole := false
	for _, m := range r.Modes {
		fmt.Fprintf(&b, "%-8s %8d %8.0f %6d | %-26s | %-26s | %s / %s\n", m.Mode, m.Requests, m.Throughput, m.Errors,
			triple(m.EndToEnd), triple(m.ServerSide), optMS(m.CPU.ServerMSPerRequest), optMS(m.CPU.DriverMSPerRequest))
		whole = whole || m.ServerWholeMS
	}
	if whole {
		b.WriteString("(the server reports query_time_ms in whole milliseconds, rounded down)\n")
	}
	if rc := r.Recall; rc != nil {
		fmt.Fprintf(&b, "vector recall@10 against exact search: %.4f over %d queries (worst query %.2f; exact scan of %d stored vectors, %.1fs)\n",
			rc.Recall, rc.Queries, rc.Worst, rc.Vectors, rc.ExactSeconds)
	}
	return b.String()
}

// optMS formats an optional number of milliseconds ("-" when unknown).
func optMS(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *v)
}

func triple(s summary) string { return fmt.Sprintf("%.2f / %.2f / %.2f", s.P50, s.P95, s.P99) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

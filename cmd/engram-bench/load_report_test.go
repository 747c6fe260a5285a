package main

import (
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

func TestLoadReportTable(t *testing.T) {
	rep := loadReport{
		Model: "engram-hash-384", Dimensions: 384, N: 10000, Concurrency: 8, DurationPerMode: "20s", Limit: 10,
		Ingest: ingestStats{Memories: 10000, Seconds: 12.5, PerSecond: 800},
		Memory: memoryReport{
			BeforeFill:  &testserver.MemStat{RSSBytes: 16 << 20},
			AfterFill:   &testserver.MemStat{RSSBytes: 48 << 20},
			AfterSearch: &testserver.MemStat{RSSBytes: 40 << 20, PeakRSSBytes: 50 << 20, AnonBytes: 30 << 20},
			VectorBytes: 10000 * 384 * 4,
		},
		Modes: []modeResult{{
			Mode: "hybrid", Requests: 1200, Throughput: 600, ServerWholeMS: true,
			EndToEnd:   summary{P50: 1.234, P95: 5, P99: 9.999},
			ServerSide: summary{P50: 1, P95: 3, P99: 7},
			CPU:        cpuUse{ServerMSPerRequest: ptr(0.8125), DriverMSPerRequest: ptr(0.25)},
		}},
		SettleSeconds: 3.25, LoadAverage: "1.00 0.50 0.25", LoadAverageAfter: "2.00 1.00 0.50",
		Recall: &recallReport{Queries: 100, Recall: 0.987, Worst: 0.8, Vectors: 10000, ExactSeconds: 1.25},
	}
	got := rep.table()
	for _, want := range []string{
		"load: 10000 memories (engram-hash-384, 384 dims), concurrency 8, 20s per mode, limit 10\n",
		"ingest: 10000 memories in 12.5s = 800 memories/s",
		"server RSS: 16.0 MiB before fill, 48.0 MiB after fill (+32.0 MiB; raw vectors 14.6 MiB), 40.0 MiB after search (30.0 MiB anonymous, the rest mapped file pages), peak 50.0 MiB\n",
		"hybrid       1200      600      0 | 1.23 / 5.00 / 10.00",
		"| 1.00 / 3.00 / 7.00",
		"whole milliseconds",
		"| 0.812 / 0.250\n",
		"server idle 3.2s after the fill",
		"load average (1/5/15 min): 1.00 0.50 0.25 before searching, 2.00 1.00 0.50 after",
		"vector recall@10 against exact search: 0.9870 over 100 queries (worst query 0.80; exact scan of 10000 stored vectors, 1.2s)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	// Without CPU readings the column says so.
	rep.Modes[0].CPU = cpuUse{}
	if got := rep.table(); !strings.Contains(got, "| - / -\n") {
		t.Errorf("unknown CPU not shown as -:\n%s", got)
	}
	// A --server run has no RSS line.
	rep.Memory = memoryReport{}
	if strings.Contains(rep.table(), "RSS") {
		t.Error("RSS line without measurements")
	}
}

func ptr(v float64) *float64 { return &v }

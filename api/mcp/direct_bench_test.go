package mcp

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// The two parts of a stateless search_memories call that are the MCP
// layer's own work rather than the search's or the encoding's, which
// POST /v1/search pays alike (BenchmarkMCPSearch in package api measures
// the whole call beside the REST one).

// BenchmarkPlainCall: reading a tools/call request's envelope and _meta,
// as the raw client (engram-bench's, capabilities only) and the Go SDK's
// client (its name and the roots capability too) send it.
func BenchmarkPlainCall(b *testing.B) {
	bodies := []struct{ name, meta string }{
		{"raw client", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`},
		{"sdk client", `{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"engram-bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`},
	}
	for _, body := range bodies {
		raw := []byte(`{"jsonrpc":"2.0","id":1234,"method":"tools/call","params":{"name":"search_memories","arguments":{"agent_id":"bench-load","query":"postgres vacuum tuning","limit":10,"mode":"hybrid"},"_meta":` + body.meta + `}}`)
		b.Run(body.name, func(b *testing.B) {
			benchCPU(b, func() {
				if _, ok := plainCall(raw, "search_memories"); !ok {
					b.Fatal("not a plain call")
				}
			})
		})
	}
}

// BenchmarkSearchText: the text block of a search's ten results.
func BenchmarkSearchText(b *testing.B) {
	r := SearchResults{}
	for i := range 10 {
		r.Results = append(r.Results, SearchResult{
			Type: "note", ID: fmt.Sprintf("0193c5a2-7f1e-7b3c-9d4e-%012d", i), Score: 0.9 - float64(i)/50,
			Content:   json.RawMessage(fmt.Sprintf(`{"content":"note %d about postgres and vacuum in service %d","note_type":"observation","strength":0.8}`, i, i%31)),
			CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Strength: 0.8,
		})
	}
	benchCPU(b, func() {
		if searchText(r) == "" {
			b.Fatal("no text")
		}
	})
}

// benchCPU runs op b.N times and reports, beside its allocations, the
// process's CPU time per op: on a shared machine steadier than ns/op, the
// wall time, which waits for a core.
func benchCPU(b *testing.B, op func()) {
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu_ns/op")
}

// processCPU is the user + system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExportImport fills one agent with ENGRAM_BENCH_TRANSFER_N notes
// (default 10,000; docs/benchmarks.md quotes 100,000) with their vectors,
// exports it (the lossless events form) over HTTP, and imports the export
// into a fresh agent of another user in requests of 4 MiB, as engram
// import sends it. It reports both rates and the process's CPU seconds
// per phase (server and client share the process).
func BenchmarkExportImport(b *testing.B) {
	n := 10_000
	if v := os.Getenv("ENGRAM_BENCH_TRANSFER_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	s := newStack(b, stackOptions{discardLogs: true, maxBody: 10 << 20})
	userA, keyA := s.user(b, "bench-export@example.com")
	_, keyB := s.user(b, "bench-import@example.com")
	fillStart := time.Now()
	s.seed(userA, "source", n)
	b.Logf("filled %d notes in %s", n, time.Since(fillStart).Round(time.Millisecond))
	for i := range b.N {
		cpu := cpuSeconds()
		start := time.Now()
		status, export := s.exportAgent(b, keyA, "source", "")
		if status != http.StatusOK {
			b.Fatalf("export: %d", status)
		}
		exportSecs, exportCPU := time.Since(start).Seconds(), cpuSeconds()-cpu
		lines := bytes.Count(export, []byte("\n"))

		cpu = cpuSeconds()
		start = time.Now()
		appended := 0
		header, rest, _ := bytes.Cut(export, []byte("\n"))
		header = append(header, '\n')
		for len(rest) > 0 {
			cut := min(len(rest), 4<<20-len(header))
			if cut < len(rest) {
				cut = bytes.LastIndexByte(rest[:cut], '\n') + 1
			}
			var res importResult
			s.importAgent(b, keyB, fmt.Sprintf("copy-%d", i), append(bytes.Clone(header), rest[:cut]...)).must(b, http.StatusOK, &res)
			appended += res.Appended
			rest = rest[cut:]
		}
		importSecs, importCPU := time.Since(start).Seconds(), cpuSeconds()-cpu
		if appended != lines-1 {
			b.Fatalf("imported %d of %d events", appended, lines-1)
		}
		b.ReportMetric(float64(lines-1)/exportSecs, "export-events/s")
		b.ReportMetric(float64(len(export))/exportSecs/(1<<20), "export-MiB/s")
		b.ReportMetric(float64(lines-1)/importSecs, "import-events/s")
		b.ReportMetric(float64(n)/importSecs, "import-memories/s")
		b.Logf("n=%d: export %d events (%.1f MiB) in %.1fs (%.1f CPU s); import in %.1fs (%.1f CPU s)",
			n, lines-1, float64(len(export))/(1<<20), exportSecs, exportCPU, importSecs, importCPU)
	}
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkImport measures POST /v1/agents/{id}/import alone: the lossless
// export of 10,000 notes (creations and their vectors) into a fresh server
// in one request, in events per second of wall time and per CPU-second of
// the whole process (the server, the projections that apply the import
// before it answers, and the client), the figure that holds on a shared
// machine. Profile it with -cpuprofile.
func BenchmarkImport(b *testing.B) {
	const n = 10_000
	src := newStack(b, stackOptions{fixedAuth: true, discardLogs: true, noRun: true})
	src.seed(alice, "claire", n)
	_, export := src.exportAgent(b, aliceKey, "claire", "")
	src.closeAll()
	b.SetBytes(int64(len(export)))
	for range b.N {
		b.StopTimer()
		dst := newStack(b, stackOptions{fixedAuth: true, discardLogs: true, noRun: true, maxBody: 256 << 20})
		cpu := cpuSeconds()
		start := time.Now()
		b.StartTimer()
		var res importResult
		dst.importAgent(b, bobKey, "restored", export).must(b, http.StatusOK, &res)
		b.StopTimer()
		wall, used := time.Since(start).Seconds(), cpuSeconds()-cpu
		if res.Appended < 2*n {
			b.Fatalf("import appended %d events, want at least %d", res.Appended, 2*n)
		}
		b.ReportMetric(float64(res.Appended)/wall, "events/s")
		b.ReportMetric(float64(res.Appended)/used, "events/cpu-s")
		dst.closeAll()
	}
}

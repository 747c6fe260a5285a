package sqlite_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/sqlite"
)

// BenchmarkOpenQueryClose measures what every command of the command line
// pays SQLite on a current database: Open (with its schema check), the
// first query, Close. cpu-ms/op is the process's CPU time (user + sys) per
// open, the figure to compare on a shared machine.
func BenchmarkOpenQueryClose(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	start := cpuTime(b)
	for b.Loop() {
		db, err := sqlite.Open(ctx, dir, sqlite.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var n int
		if err := db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM projection_checkpoints`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's CPU time so far (user + sys).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

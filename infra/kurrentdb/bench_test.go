package kurrentdb_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
)

// The benchmarks run against the package's target: the in-memory test
// server unless ENGRAM_TEST_KURRENTDB_URL is set. Test-server figures say
// nothing about a real KurrentDB's speed (no disk, no replication); they
// measure the adapter's own overhead: encoding, gRPC round trips and the
// client library. Each benchmark gets a fresh test server, so ReadAll does
// not page through the other benchmarks' events.

func benchStore(b *testing.B) *kurrentdb.EventStore {
	if os.Getenv("ENGRAM_TEST_KURRENTDB_URL") != "" {
		return open(b, target)
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	return open(b, kurrentdb.Config{URL: srv.URL()})
}

// filledBenchStore is a bench store holding total events (a multiple of
// 100), appended 100 at a time across 64 streams.
func filledBenchStore(b *testing.B, total int) *kurrentdb.EventStore {
	s := benchStore(b)
	events := eventstoretest.BenchEvents(100)
	for i := 0; i < total/100; i++ {
		if _, err := s.Append(context.Background(), fmt.Sprintf("agent-%d", i%64), domain.ExpectAny, events); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkAppend: events/s is the figure to report.
func BenchmarkAppend(b *testing.B) {
	eventstoretest.BenchAppend(b, func(b *testing.B) domain.EventStore { return benchStore(b) })
}

// BenchmarkReadAll pages through 10,000 events 1,000 at a time, as a
// projection rebuild does; events/s is the figure to report.
func BenchmarkReadAll(b *testing.B) {
	const total, page = 10_000, 1000
	s := filledBenchStore(b, total)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var after uint64
		n := 0
		for {
			got, err := s.ReadAll(ctx, after, page)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) == 0 {
				break
			}
			n += len(got)
			after = got[len(got)-1].Position
		}
		if n != total {
			b.Fatalf("read %d events, want %d", n, total)
		}
	}
	b.ReportMetric(float64(b.N*total)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSubscribeCatchUp delivers 10,000 stored events through a
// catch-up subscription; events/s is the figure to report.
func BenchmarkSubscribeCatchUp(b *testing.B) {
	const total = 10_000
	s := filledBenchStore(b, total)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		subCtx, cancel := context.WithCancel(ctx)
		n := 0
		s.SubscribeAll(subCtx, 0, func(_ context.Context, got []domain.Event) error {
			if n += len(got); n >= total {
				cancel()
			}
			return nil
		})
		cancel()
		if n != total {
			b.Fatalf("delivered %d events, want %d", n, total)
		}
	}
	b.ReportMetric(float64(b.N*total)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReadAllAmongForeignEvents: a KurrentDB shared with another
// application that wrote 1,000,000 events, then Engram's 1,000; one
// ReadAll of 1,000 from the start, as a projection rebuild's first page.
// events/s counts Engram's events only; rounds/op is the number of $all
// read requests (or subscriptions) one ReadAll made.
func BenchmarkReadAllAmongForeignEvents(b *testing.B) {
	const foreign, mine = 1_000_000, 1000
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.Fill("orders-1", foreign, []byte(`{"order":12345,"total":"99.95"}`))
	s := open(b, kurrentdb.Config{URL: srv.URL()})
	ctx := context.Background()
	events := eventstoretest.BenchEvents(100)
	for i := 0; i < mine/100; i++ {
		if _, err := s.Append(ctx, fmt.Sprintf("agent-%d", i%64), domain.ExpectAny, events); err != nil {
			b.Fatal(err)
		}
	}
	reads := srv.Reads()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := s.ReadAll(ctx, 0, mine)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != mine {
			b.Fatalf("read %d events, want %d", len(got), mine)
		}
	}
	b.ReportMetric(float64(b.N*mine)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(srv.Reads()-reads)/float64(b.N), "rounds/op")
}

// BenchmarkEventPlaces looks up the ids of one sync push (10 events, one
// of them new) in a log of 10,000 events, after a first lookup: what each
// push or import after the first costs; ns/op is the figure to report.
func BenchmarkEventPlaces(b *testing.B) {
	const total = 10_000
	s := filledBenchStore(b, total)
	ctx := context.Background()
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("0193a1f0-0000-7000-8000-%012d", i)
	}
	if _, err := s.EventPlaces(ctx, ids); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := s.Append(ctx, "agent-new", domain.ExpectAny, eventstoretest.BenchEvents(1)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.EventPlaces(ctx, ids); err != nil {
			b.Fatal(err)
		}
	}
}

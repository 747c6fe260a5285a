package postgres_test

import (
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventstoretest"
	"github.com/engram-memory/engram/infra/postgres"
)

// The shared shapes of eventstoretest, so every log compares figure for
// figure. Note the pgtest cluster runs with fsync and synchronous_commit
// off: these are the costs of the protocol and the append lock, not of
// durability.

// BenchmarkAppend measures appends of one and of 100 events; events/s is
// the figure to report.
func BenchmarkAppend(b *testing.B) {
	eventstoretest.BenchAppend(b, func(b *testing.B) domain.EventStore { return postgres.NewEventStore(openDB(b), time.Second) })
}

// BenchmarkAppendConcurrent: the append lock serialises concurrent
// writers, which is what keeps positions visible in order.
func BenchmarkAppendConcurrent(b *testing.B) {
	eventstoretest.BenchAppendConcurrent(b, func(b *testing.B) domain.EventStore { return postgres.NewEventStore(openDB(b), time.Second) })
}

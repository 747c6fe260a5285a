package anxiety_test

import (
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/anxiety"
)

// BenchmarkCompute: a report over a full window (1000 memories' worth of
// inputs) must stay far below a request's budget.
func BenchmarkCompute(b *testing.B) {
	now := time.Now()
	in := anxiety.Inputs{Now: now, ActiveGoals: 3, Drives: 2, Relationships: 4, PendingSuggestions: 12, Searchable: 900, EmbedPending: 30}
	for i := range 300 {
		in.Episodes = append(in.Episodes, anxiety.Episode{HasLessons: i%3 == 0})
		in.BeliefConfs = append(in.BeliefConfs, float64(i%10)/10)
		in.UnprocessedRaw = append(in.UnprocessedRaw, anxiety.Raw{Length: i, CapturedAt: now.Add(-time.Duration(i) * time.Hour)})
	}
	for range 100 {
		in.ValuePriorities = append(in.ValuePriorities, 60)
	}
	b.ReportAllocs()
	for b.Loop() {
		anxiety.Compute(in)
	}
}

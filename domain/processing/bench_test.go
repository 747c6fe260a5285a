package processing_test

import (
	"testing"

	"github.com/engram-memory/engram/domain/processing"
)

// BenchmarkRuleExtractor: one raw_to_note pass of the largest batch
// (100 raw entries) with the rule-based extractor.
func BenchmarkRuleExtractor(b *testing.B) {
	r := processing.NewRuleExtractor()
	texts := []string{
		"I think caching always helps latency because it avoids the database",
		"Yesterday we deployed the billing service and it failed, then I learned to check migrations",
		"Reminder: the docs are at https://example.com/docs, see step 2 for the install command",
		"blue green red yellow purple",
	}
	batch := make([]processing.Source, processing.MaxBatchSize)
	for i := range batch {
		batch[i] = processing.Source{ID: string(rune('a' + i%26)), Text: texts[i%len(texts)]}
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Extract(processing.RawToNote, batch)
	}
}

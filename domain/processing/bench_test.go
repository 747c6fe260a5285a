package processing_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
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

// BenchmarkFold10k: the decisions and the processing view fold the agent's
// cognition stream; this is its cost for 10,000 events (about 1,400
// process requests).
func BenchmarkFold10k(b *testing.B) {
	ref := processing.AgentRef{UserID: "u", AgentID: "a"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := make([]domain.Event, 10000)
	for i := range events {
		var p domain.Payload = processing.PassRecorded{AgentRef: ref, Pass: processing.Pass{PassID: strconv.Itoa(i), Transition: processing.RawToNote, At: at,
			Consumed: []processing.Consumed{{ID: strconv.Itoa(i), Into: []string{"suggestion:" + strconv.Itoa(i)}}}}}
		if i%2 == 1 {
			p = processing.SuggestionCreated{AgentRef: ref, SuggestionID: strconv.Itoa(i), Sources: []string{"raw_entry:" + strconv.Itoa(i)},
				Content: json.RawMessage(`{"content":"a note of some length"}`), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		}
		raw, _ := json.Marshal(p)
		events[i] = domain.Event{Version: uint64(i), Type: p.EventType(), Payload: raw}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := processing.Fold(events, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}

// cognitionEvents is an agent's stream of n events: passes, suggestions
// they made, some of them resolved.
func cognitionEvents(n int) []domain.Event {
	ref := processing.AgentRef{UserID: "u", AgentID: "a"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := make([]domain.Event, n)
	for i := range events {
		var p domain.Payload = processing.PassRecorded{AgentRef: ref, Pass: processing.Pass{PassID: strconv.Itoa(i), Transition: processing.RawToNote, At: at,
			Consumed: []processing.Consumed{{ID: strconv.Itoa(i), Into: []string{"suggestion:" + strconv.Itoa(i)}}}}}
		switch i % 4 {
		case 1, 3:
			p = processing.SuggestionCreated{AgentRef: ref, SuggestionID: strconv.Itoa(i), Sources: []string{"raw_entry:" + strconv.Itoa(i)},
				Content: json.RawMessage(`{"content":"a note of some length"}`), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		case 2:
			if i > 2 {
				p = processing.SuggestionResolved{AgentRef: ref, SuggestionID: strconv.Itoa(i - 1), Status: processing.Rejected, ResolvedAt: at}
			}
		}
		raw, _ := json.Marshal(p)
		events[i] = domain.Event{Version: uint64(i), Type: p.EventType(), Payload: raw}
	}
	return events
}

// BenchmarkSnapshotAdvance10k: what a call costs with the snapshot the
// pipeline keeps (commands.stackSnapshots) once the agent's 10,000 events
// are folded and one event was appended since: copying the snapshot and
// applying that event (a call with nothing new costs neither). Compare
// with BenchmarkFold10k, what every call cost before.
func BenchmarkSnapshotAdvance10k(b *testing.B) {
	events := cognitionEvents(10001)
	st, err := processing.Fold(events[:10000], time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	next := events[10000:]
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Clone().ApplyAll(next); err != nil {
			b.Fatal(err)
		}
	}
}

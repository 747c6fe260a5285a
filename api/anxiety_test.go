package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/anxiety"
)

type anxietyJSON struct {
	OverallScore      int                                `json:"overall_score"`
	OverallLevel      string                             `json:"overall_level"`
	OverallConfidence float64                            `json:"overall_confidence"`
	Dimensions        map[string]anxiety.DimensionReport `json:"dimensions"`
	Recommendations   []anxiety.Recommendation           `json:"recommendations"`
	ComputedAt        time.Time                          `json:"computed_at"`
}

// The report of a known stack, dimension by dimension, through the API;
// processing the raw entries then moves raw aging and the suggestion
// backlog.
func TestAnxietyReport(t *testing.T) {
	s := newStack(t, stackOptions{fixedAuth: true})
	for i := range 4 {
		s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "task " + itoa(i), "outcome": "done"})
	}
	s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "task 4", "outcome": "done", "lessons": []string{"check first"}})
	for i := range 3 {
		s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "unsure claim " + itoa(i), "confidence": 0.3})
	}
	old := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	long := "I think we should always run the migrations before the deploy because it matters. " + strings.Repeat("More context about the deploy. ", 6)
	for range 2 {
		s.request(t, "POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "claire", "type": "raw_entry", "content": map[string]any{"content": long}, "created_at": old}).must(t, http.StatusCreated, nil)
	}
	var rep anxietyJSON
	s.request(t, "GET", "/v1/agents/claire/anxiety", aliceKey, nil).must(t, http.StatusOK, &rep)
	want := map[string]int{
		anxiety.ConsolidationDebt: 31, // 4 episodes without lessons
		anxiety.MemoryUncertainty: 45, // 3 beliefs below 0.5
		anxiety.RawAging:          60, // 2 long raws older than 24h: weighted 2 of 2 aging
		anxiety.IdentityCoherence: 89, // identity confidence 0.105
		anxiety.SuggestionBacklog: 0,
	}
	for name, score := range want {
		if rep.Dimensions[name].Score != score {
			t.Errorf("%s = %+v, want score %d", name, rep.Dimensions[name], score)
		}
	}
	emb := rep.Dimensions[anxiety.EmbeddingBacklog].Score
	if wantOverall := (31*15 + 60*10 + 89*10 + 45*10 + emb*5) / 60; rep.OverallScore != wantOverall || rep.OverallLevel != anxiety.Level(wantOverall) {
		t.Errorf("overall %d %s, want %d", rep.OverallScore, rep.OverallLevel, wantOverall)
	}
	if rep.Dimensions[anxiety.RawAging].Confidence != 0.5 || rep.Dimensions[anxiety.IdentityCoherence].RawValue != 0.105 || rep.ComputedAt.IsZero() {
		t.Errorf("report: %+v", rep)
	}
	if len(rep.Recommendations) == 0 || rep.Recommendations[0].Dimension != anxiety.IdentityCoherence {
		t.Errorf("recommendations: %+v", rep.Recommendations)
	}

	s.process(t, aliceKey, "claire", map[string]any{"force": true, "transition": "raw_to_note"})
	s.request(t, "GET", "/v1/agents/claire/anxiety", aliceKey, nil).must(t, http.StatusOK, &rep)
	if rep.Dimensions[anxiety.RawAging].Score != 0 || rep.Dimensions[anxiety.SuggestionBacklog].RawValue != 2 || rep.Dimensions[anxiety.SuggestionBacklog].Score != 10 {
		t.Errorf("after processing: raw %+v suggestions %+v", rep.Dimensions[anxiety.RawAging], rep.Dimensions[anxiety.SuggestionBacklog])
	}
	// The backlog follows the injected clock: past the expiry it is empty.
	s.clock.Advance(169 * time.Hour)
	s.request(t, "GET", "/v1/agents/claire/anxiety", aliceKey, nil).must(t, http.StatusOK, &rep)
	if rep.Dimensions[anxiety.SuggestionBacklog].RawValue != 0 {
		t.Errorf("expired suggestions still count: %+v", rep.Dimensions[anxiety.SuggestionBacklog])
	}
}

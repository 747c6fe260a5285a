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
	t.Parallel()
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

type hysteresisJSON struct {
	OverallScore    int    `json:"overall_score"`
	OverallLevel    string `json:"overall_level"`
	HysteresisLevel string `json:"hysteresis_level"`
	PreviousLevel   *struct {
		Level string    `json:"level"`
		At    time.Time `json:"at"`
	} `json:"previous_level"`
}

func (s *stack) anxiety(t testing.TB, bearer, agent string) hysteresisJSON {
	t.Helper()
	var rep hysteresisJSON
	s.request(t, "GET", "/v1/agents/"+agent+"/anxiety", bearer, nil).must(t, http.StatusOK, &rep)
	return rep
}

// The hysteresis walks from the level a processing request recorded in
// the agent's stream: a score in Aware's band (31-34) does not enter
// Aware from a recorded Calm; the GET never records, the next process
// does.
func TestAnxietyHysteresisFromRecordedLevel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.create(t, aliceKey, "claire", "note", map[string]any{"content": "hello"})
	if rep := s.anxiety(t, aliceKey, "claire"); rep.PreviousLevel != nil || rep.HysteresisLevel != rep.OverallLevel {
		t.Fatalf("before any processing: %+v", rep)
	}
	s.process(t, aliceKey, "claire", nil)
	calm := s.anxiety(t, aliceKey, "claire")
	if calm.PreviousLevel == nil || calm.PreviousLevel.Level != anxiety.Calm || calm.HysteresisLevel != anxiety.Calm {
		t.Fatalf("after processing a calm stack: %+v", calm)
	}
	// Ten beliefs below 0.5: memory uncertainty 100, identity 87 → 31.
	for i := range 10 {
		s.create(t, aliceKey, "claire", "belief", map[string]any{"statement": "unsure claim " + itoa(i), "confidence": 0.3})
	}
	head := s.head(t)
	rep := s.anxiety(t, aliceKey, "claire")
	if rep.OverallScore < 31 || rep.OverallScore >= 35 {
		t.Fatalf("setup: score %d is not in the gap 31-34", rep.OverallScore)
	}
	if rep.OverallLevel != anxiety.Aware || rep.HysteresisLevel != anxiety.Calm || rep.PreviousLevel.Level != anxiety.Calm {
		t.Errorf("score %d from recorded Calm: band %s, hysteresis %s, previous %+v", rep.OverallScore, rep.OverallLevel, rep.HysteresisLevel, rep.PreviousLevel)
	}
	if s.head(t) != head {
		t.Error("GET /anxiety wrote to the log")
	}
	// Five episodes without lessons push it past 35: the report says
	// Aware at once, and the next process records it.
	for i := range 5 {
		s.create(t, aliceKey, "claire", "episode", map[string]any{"objective": "task " + itoa(i), "outcome": "done"})
	}
	if rep := s.anxiety(t, aliceKey, "claire"); rep.OverallScore < 35 || rep.HysteresisLevel != anxiety.Aware || rep.PreviousLevel.Level != anxiety.Calm {
		t.Fatalf("past 35 before processing: %+v", rep)
	}
	s.process(t, aliceKey, "claire", nil)
	if rep := s.anxiety(t, aliceKey, "claire"); rep.PreviousLevel.Level != anxiety.Aware || !rep.PreviousLevel.At.After(calm.PreviousLevel.At) {
		t.Errorf("after processing: %+v", rep)
	}
	// Processing again at the same level records nothing new.
	head = s.head(t)
	passes := s.process(t, aliceKey, "claire", nil)
	if got := s.head(t) - head; got != uint64(len(passes)) {
		t.Errorf("a process at an unchanged level appended %d events for %d passes", got, len(passes))
	}
}

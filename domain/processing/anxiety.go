package processing

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain/anxiety"
	"github.com/engram-memory/engram/domain/memory"
)

// AnxietyWindow is how many of the agent's latest memories the anxiety
// report reads.
const AnxietyWindow = memory.MaxListLimit

// AnxietyReport computes the anxiety report of the agent whose state is st
// from its latest memories (at most AnxietyWindow, newest first) and its
// pending suggestions; its hysteresis starts from the level st last
// recorded. The read side shows it, the write side records its level.
func AnxietyReport(st *State, memories []memory.View, pendingSuggestions int, now time.Time) anxiety.Report {
	in := anxiety.Inputs{Now: now, PendingSuggestions: pendingSuggestions}
	if st.AnxietyLevel != "" {
		in.Previous = &anxiety.Observation{Level: st.AnxietyLevel, At: st.AnxietyLevelAt}
	}
	for _, v := range memories {
		var f struct {
			Lessons    []string `json:"lessons"`
			Confidence *float64 `json:"confidence"`
			Priority   *int     `json:"priority"`
			Status     string   `json:"status"`
			Content    string   `json:"content"`
		}
		_ = json.Unmarshal(v.Content, &f) // read-model content is canonical JSON
		switch v.Type {
		case memory.Episode:
			in.Episodes = append(in.Episodes, anxiety.Episode{HasLessons: len(f.Lessons) > 0, Checkpoint: slices.Contains(v.Tags, "checkpoint")})
		case memory.Belief:
			conf := 0.0
			if f.Confidence != nil {
				conf = *f.Confidence
			}
			in.BeliefConfs = append(in.BeliefConfs, conf)
		case memory.RawEntry:
			if !v.Processed {
				in.UnprocessedRaw = append(in.UnprocessedRaw, anxiety.Raw{Length: utf8.RuneCountInString(f.Content), CapturedAt: v.CreatedAt})
			}
		case memory.Value:
			p := 50
			if f.Priority != nil {
				p = *f.Priority
			}
			in.ValuePriorities = append(in.ValuePriorities, p)
		case memory.Goal:
			if f.Status == "" || f.Status == "active" {
				in.ActiveGoals++
			}
		case memory.Drive:
			in.Drives++
		case memory.Relationship:
			in.Relationships++
		}
		if v.Type.Searchable() {
			in.Searchable++
			if v.Embedding.Status == memory.StatusPending {
				in.EmbedPending++
			}
		}
	}
	return anxiety.Compute(in)
}

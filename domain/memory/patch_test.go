package memory_test

import (
	"encoding/json"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

func TestContentChangesAndApply(t *testing.T) {
	base, err := memory.NormalizeContent(memory.Note, json.RawMessage(`{"content":"base","speaker":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, patch, want string // want: the changes recorded, as JSON
	}{
		{"one field", `{"content":"new"}`, `{"content":"new"}`},
		{"same value records nothing", `{"content":"base"}`, `null`},
		{"null restores a default", `{"confidence":null}`, `null`},
		{"null removes an optional field", `{"speaker":null}`, `{"speaker":null}`},
		{"a default set explicitly is no change", `{"note_type":"note"}`, `null`},
		{"several fields", `{"note_type":"quote","reason":"r"}`, `{"note_type":"quote","reason":"r"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := memory.ParseContentPatch(json.RawMessage(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			after, err := memory.ApplyContentChanges(memory.Note, base, changes)
			if err != nil {
				t.Fatal(err)
			}
			recorded, err := memory.ContentChanges(base, after)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(recorded); string(got) != tc.want {
				t.Errorf("recorded %s, want %s", got, tc.want)
			}
			// Applying what was recorded to the base gives the same bytes
			// as the decision: what projections do on every replay.
			replayed, err := memory.ApplyContentChanges(memory.Note, base, recorded)
			if err != nil || string(replayed) != string(after) {
				t.Errorf("replayed %s, %v; want %s", replayed, err, after)
			}
		})
	}
	for _, bad := range []string{`[]`, `"x"`, `null`, `{`} {
		if _, err := memory.ParseContentPatch(json.RawMessage(bad)); domain.ErrorKind(err) != domain.KindInvalid {
			t.Errorf("patch %s: err = %v", bad, err)
		}
	}
	if _, err := memory.ApplyContentChanges(memory.Note, base, map[string]json.RawMessage{"content": json.RawMessage(`null`)}); domain.ErrorKind(err) != domain.KindInvalid {
		t.Errorf("removing a required field: err = %v", err)
	}
}

func TestQuotas(t *testing.T) {
	q := memory.Quotas{MemoriesPerAgent: 10, AgentsPerUser: 2, TextBytesPerUser: 100}
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"memories up to the limit", q.CheckMemories("a", 8, 2), ""},
		{"memories past the limit", q.CheckMemories("a", 8, 3), memory.CodeQuotaMemoriesPerAgent},
		{"an agent up to the limit", q.CheckAgents(1), ""},
		{"an agent past the limit", q.CheckAgents(2), memory.CodeQuotaAgents},
		{"bytes up to the limit", q.CheckTextBytes(60, 40), ""},
		{"bytes past the limit", q.CheckTextBytes(60, 41), memory.CodeQuotaTextBytes},
		{"shrinking over the limit passes", q.CheckTextBytes(200, -10), ""},
		{"zero is no limit", memory.Quotas{}.CheckMemories("a", 1e9, 1e9), ""},
	} {
		de, _ := domain.AsError(tc.err)
		switch {
		case tc.code == "" && tc.err != nil:
			t.Errorf("%s: %v", tc.name, tc.err)
		case tc.code != "" && (de == nil || de.Kind != domain.KindQuotaExceeded || de.PublicCode() != tc.code):
			t.Errorf("%s: err = %v, want %s", tc.name, tc.err, tc.code)
		}
	}
}

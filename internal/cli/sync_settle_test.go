package cli

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/engram-memory/engram/client"
)

// settle's outcome for a fetched page: which events a pull applies (with
// the payloads it applies) and which conflicts it reports.
func TestSettleKeepsWhatTheCloudsLogEndsWith(t *testing.T) {
	patch := func(id, memory, content string, tags bool) client.SyncEvent {
		p := map[string]any{"memory_id": memory, "content": json.RawMessage(content)}
		if tags {
			p["tags"] = []string{"t"}
		}
		raw, _ := json.Marshal(p)
		return client.SyncEvent{ID: id, Type: "MemoryPatched", Payload: raw}
	}
	update := func(id, memory string) client.SyncEvent {
		return client.SyncEvent{ID: id, Type: "MemoryUpdated", Payload: json.RawMessage(`{"memory_id":"` + memory + `","content":{"text":"x"}}`)}
	}
	other := client.SyncEvent{ID: "o", Type: "MemoryForgotten", Payload: json.RawMessage(`{"memory_id":"m"}`)}
	for _, tc := range []struct {
		name     string
		fetched  []client.SyncEvent
		known    []string
		wantKept []string
		// wantFields are the fields a kept patch still sets, by event id.
		wantFields map[string]string
		wantLosers []string
	}{
		{name: "events this stack has are not applied again, others are",
			fetched: []client.SyncEvent{other, update("u", "m")}, known: []string{"o"},
			wantKept: []string{"u"}},
		{name: "a replacement before a known change of the memory is dropped",
			fetched: []client.SyncEvent{update("u", "m"), patch("k", "m", `{"text":"y"}`, false)}, known: []string{"k"},
			wantLosers: []string{"u"}},
		{name: "a patch before a known patch keeps the fields it alone sets",
			fetched: []client.SyncEvent{patch("p", "m", `{"text":"a","title":"b"}`, true), patch("k", "m", `{"text":"y"}`, false)}, known: []string{"k"},
			wantKept: []string{"p"}, wantFields: map[string]string{"p": `{"content":{"title":"b"},"tags":["t"]}`}, wantLosers: []string{"p"}},
		{name: "a patch before a known replacement is dropped",
			fetched: []client.SyncEvent{patch("p", "m", `{"title":"b"}`, false), update("k", "m")}, known: []string{"k"},
			wantLosers: []string{"p"}},
		{name: "a patch all of whose fields a known patch sets is dropped",
			fetched: []client.SyncEvent{patch("p", "m", `{"text":"a"}`, false), patch("k", "m", `{"text":"y"}`, false)}, known: []string{"k"},
			wantLosers: []string{"p"}},
		{name: "an unreadable patch known later counts as replacing everything",
			fetched: []client.SyncEvent{patch("p", "m", `{"title":"b"}`, false), {ID: "k", Type: "MemoryPatched", Payload: json.RawMessage(`{"memory_id":"m","content":7}`)}}, known: []string{"k"},
			wantLosers: []string{"p"}},
		{name: "a change of the cloud after a known one of this stack is taken",
			fetched: []client.SyncEvent{patch("k", "m", `{"text":"y"}`, false), update("u", "m")}, known: []string{"k"},
			wantKept: []string{"u"}, wantLosers: []string{"k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			known := map[string]bool{}
			for _, id := range tc.known {
				known[id] = true
			}
			keep, resolved := settle(tc.fetched, known)
			var kept, losers []string
			for _, e := range keep {
				kept = append(kept, e.ID)
				if want, ok := tc.wantFields[e.ID]; ok {
					var p struct {
						Content json.RawMessage `json:"content"`
						Tags    json.RawMessage `json:"tags"`
					}
					if err := json.Unmarshal(e.Payload, &p); err != nil {
						t.Fatal(err)
					}
					if got := `{"content":` + string(p.Content) + `,"tags":` + string(p.Tags) + `}`; got != want {
						t.Errorf("kept %s setting %s, want %s", e.ID, got, want)
					}
				}
			}
			for _, r := range resolved {
				losers = append(losers, r.Loser)
			}
			if !slices.Equal(kept, tc.wantKept) || !slices.Equal(losers, tc.wantLosers) {
				t.Fatalf("kept %v and overrode %v, want %v and %v", kept, losers, tc.wantKept, tc.wantLosers)
			}
		})
	}
}

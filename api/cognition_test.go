package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/audit"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

const day = 24 * time.Hour

func (s *stack) settings(t testing.TB, bearer, agentID string, patch any) agentsettings.View {
	t.Helper()
	var v agentsettings.View
	s.request(t, "PATCH", "/v1/agents/"+agentID+"/settings", bearer, patch).must(t, http.StatusOK, &v)
	return v
}

func (s *stack) createFrom(t testing.TB, bearer, agentID, typ string, content any, from ...string) memCreated {
	t.Helper()
	var c memCreated
	s.request(t, "POST", "/v1/memories", bearer, map[string]any{"agent_id": agentID, "type": typ, "content": content, "derived_from": from}).
		must(t, http.StatusCreated, &c)
	return c
}

func TestCogSettings(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "settings-a@example.com")
	_, keyB := s.user(t, "settings-b@example.com")
	note := s.create(t, keyA, "a", "note", map[string]any{"content": "a note"})

	var got agentsettings.View
	s.request(t, "GET", "/v1/agents/a/settings", keyA, nil).must(t, http.StatusOK, &got)
	if want := agentsettings.Defaults(); got.Settings != want || got.UpdatedAt != nil || got.AgentID != "a" {
		t.Fatalf("defaults = %+v, want %+v and no updated_at", got, want)
	}
	got = s.settings(t, keyA, "a", map[string]any{"lazy_decay": false, "lint_rules": map[string]any{"max_length": 500}})
	if got.LazyDecay || got.LintRules.MaxLength != 500 || got.LintRules.MinLength != 10 || got.UpdatedAt == nil {
		t.Fatalf("after patch: %+v", got)
	}

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{"stack_state": "frozen"}, "stack_state"},
			{map[string]any{"lazy_decay": "no"}, "lazy_decay"},
			{map[string]any{"unknown": 1}, "unknown"},
			{map[string]any{"lint_rules": map[string]any{"min_length": 9000, "max_length": 10}}, "lint_rules"},
			{map[string]any{"promotion_gates": map[string]any{"belief_min_confidence": 2}}, "promotion_gates.belief_min_confidence"},
		} {
			s.request(t, "PATCH", "/v1/agents/a/settings", keyA, tc.body).invalid(t, tc.field)
		}
		wantError(t, s.request(t, "PATCH", "/v1/agents/a/settings", keyA, "{}"), http.StatusBadRequest, "invalid_request")
		var after agentsettings.View
		s.request(t, "GET", "/v1/agents/a/settings", keyA, nil).must(t, http.StatusOK, &after)
		if after.Settings != got.Settings {
			t.Fatalf("a rejected patch changed the settings: %+v", after)
		}
	})

	t.Run("isolation", func(t *testing.T) {
		for _, path := range []string{"/v1/agents/a/settings", "/v1/agents/nobody/settings", "/v1/agents/../settings"} {
			wantError(t, s.request(t, "GET", path, keyB, nil), http.StatusNotFound, "not_found")
			wantError(t, s.request(t, "PATCH", path, keyB, map[string]any{"lazy_decay": true}), http.StatusNotFound, "not_found")
		}
		wantError(t, s.request(t, "GET", "/v1/agents/a/settings", "", nil), http.StatusUnauthorized, "unauthorized")
	})

	t.Run("maintenance rejects memory writes", func(t *testing.T) {
		s.settings(t, keyA, "a", map[string]any{"stack_state": "maintenance"})
		for _, w := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/memories", map[string]any{"agent_id": "a", "type": "note", "content": map[string]any{"content": "x"}}},
			{"POST", "/v1/memories/batch", map[string]any{"agent_id": "a", "memories": []any{map[string]any{"type": "note", "content": map[string]any{"content": "x"}}}}},
			{"PATCH", "/v1/memories/" + note.ID, map[string]any{"tags": []string{"x"}}},
			{"DELETE", "/v1/memories/" + note.ID, nil},
			{"DELETE", "/v1/memories/" + note.ID + "?purge=true", nil},
			{"POST", "/v1/memories/" + note.ID + "/weaken", nil},
			{"POST", "/v1/memories/" + note.ID + "/verify", nil},
			{"POST", "/v1/memories/" + note.ID + "/protect", nil},
		} {
			r := s.request(t, w.method, w.path, keyA, w.body)
			wantError(t, r, http.StatusConflict, "stack_in_maintenance")
			if !strings.Contains(r.errorMessage(), "maintenance") {
				t.Errorf("%s %s: message %q does not say why", w.method, w.path, r.errorMessage())
			}
		}
		// Other agents of the user are not affected.
		s.create(t, keyA, "other", "note", map[string]any{"content": "elsewhere"})
		if v := s.get(t, keyA, note.ID); v.Version != 1 || len(v.Tags) != 0 {
			t.Fatalf("a refused write changed the memory: %+v", v)
		}
		s.settings(t, keyA, "a", map[string]any{"stack_state": "active", "enforce_provenance": false})
		s.create(t, keyA, "a", "note", map[string]any{"content": "writes again"})
	})
}

func TestCogProvenance(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "prov-a@example.com")
	_, keyB := s.user(t, "prov-b@example.com")

	// Initializing: anything goes, as for seeding.
	seed := s.create(t, keyA, "a", "episode", map[string]any{"objective": "seeded", "outcome": "without a source"})
	s.settings(t, keyA, "a", map[string]any{"stack_state": "active"})

	raw := s.create(t, keyA, "a", "raw_entry", map[string]any{"content": "shipped the release, users happy"})
	for _, tc := range []struct {
		typ     string
		content map[string]any
		from    []string
	}{
		{"episode", map[string]any{"objective": "o", "outcome": "x"}, nil},
		{"episode", map[string]any{"objective": "o", "outcome": "x"}, []string{"episode:" + seed.ID}},
		{"belief", map[string]any{"statement": "s"}, []string{"raw:" + raw.ID}},
		{"value", map[string]any{"name": "n", "statement": "s"}, []string{"episode:" + seed.ID}},
	} {
		r := s.request(t, "POST", "/v1/memories", keyA, map[string]any{"agent_id": "a", "type": tc.typ, "content": tc.content, "derived_from": tc.from})
		wantError(t, r, http.StatusBadRequest, memory.CodeProvenanceViolation)
		if r.details()["field"] != "derived_from" {
			t.Errorf("%s from %v: details %v do not name derived_from", tc.typ, tc.from, r.details())
		}
	}
	// In a batch the error names the item.
	r := s.request(t, "POST", "/v1/memories/batch", keyA, map[string]any{"agent_id": "a", "memories": []any{
		map[string]any{"type": "raw_entry", "content": map[string]any{"content": "fine"}},
		map[string]any{"type": "note", "content": map[string]any{"content": "no source"}},
	}})
	wantError(t, r, http.StatusBadRequest, memory.CodeProvenanceViolation)
	if r.details()["index"] != float64(1) {
		t.Fatalf("batch error details %v, want index 1", r.details())
	}

	ep := s.createFrom(t, keyA, "a", "episode", map[string]any{"objective": "release", "outcome": "went well"}, "raw:"+raw.ID)
	note := s.createFrom(t, keyA, "a", "note", map[string]any{"content": "release notes"}, "raw_entry:"+raw.ID)
	belief := s.createFrom(t, keyA, "a", "belief", map[string]any{"statement": "small releases are safer"}, "episode:"+ep.ID, "note:"+note.ID)
	value := s.createFrom(t, keyA, "a", "value", map[string]any{"name": "care", "statement": "ship carefully"}, "belief:"+belief.ID)
	s.createFrom(t, keyA, "a", "goal", map[string]any{"title": "weekly releases"}, "belief:"+belief.ID)

	type tree struct {
		ID        string                 `json:"id"`
		Direction string                 `json:"direction"`
		Depth     int                    `json:"depth"`
		Up        *memory.ProvenanceNode `json:"up"`
		Down      *memory.ProvenanceNode `json:"down"`
	}
	var render func(n *memory.ProvenanceNode) string
	render = func(n *memory.ProvenanceNode) string {
		if n == nil {
			return "<nil>"
		}
		name := map[string]string{raw.ID: "raw", ep.ID: "ep", note.ID: "note", belief.ID: "belief", value.ID: "value"}[n.ID]
		if name == "" {
			name = string(n.Type)
		}
		if n.Truncated {
			name += "…"
		}
		if len(n.Nodes) == 0 {
			return name
		}
		parts := make([]string, len(n.Nodes))
		for i, c := range n.Nodes {
			parts[i] = render(c)
		}
		return name + "(" + strings.Join(parts, " ") + ")"
	}
	get := func(id, query string) tree {
		var tr tree
		s.request(t, "GET", "/v1/memories/"+id+"/provenance"+query, keyA, nil).must(t, http.StatusOK, &tr)
		return tr
	}
	up := get(value.ID, "?direction=up")
	if got := render(up.Up); up.Down != nil || !(got == "value(belief(ep(raw) note(raw)))" || got == "value(belief(note(raw) ep(raw)))") {
		t.Fatalf("up tree = %s (down %v)", got, up.Down)
	}
	down := get(raw.ID, "?direction=down&depth=2")
	if got := render(down.Down); !strings.HasPrefix(got, "raw(") || !strings.Contains(got, "ep(belief…)") || !strings.Contains(got, "note(belief…)") || down.Up != nil {
		t.Fatalf("down tree to depth 2 = %s", got)
	}
	both := get(belief.ID, "")
	if both.Direction != "both" || both.Depth != memory.DefaultProvenanceDepth || both.Up == nil || both.Down == nil || len(both.Down.Nodes) != 2 {
		t.Fatalf("both = %+v", both)
	}

	for _, q := range []string{"?direction=sideways", "?depth=0", "?depth=-1", fmt.Sprintf("?depth=%d", memory.MaxProvenanceDepth+1), "?depth=x"} {
		field := "depth"
		if strings.Contains(q, "direction") {
			field = "direction"
		}
		s.request(t, "GET", "/v1/memories/"+raw.ID+"/provenance"+q, keyA, nil).invalid(t, field)
	}
	wantError(t, s.request(t, "GET", "/v1/memories/"+raw.ID+"/provenance", keyB, nil), http.StatusNotFound, "not_found")
	wantError(t, s.request(t, "GET", "/v1/memories/nope/provenance", keyA, nil), http.StatusNotFound, "not_found")

	// A purged memory leaves the tree.
	s.request(t, "DELETE", "/v1/memories/"+note.ID+"?purge=true", keyA, nil).must(t, http.StatusOK, nil)
	if got := render(get(belief.ID, "?direction=up").Up); got != "belief(ep(raw))" {
		t.Fatalf("after purging the note, up tree = %s", got)
	}

	// Off switch: active without enforcement accepts sourceless memories.
	s.settings(t, keyA, "a", map[string]any{"enforce_provenance": false})
	s.create(t, keyA, "a", "belief", map[string]any{"statement": "no source needed now"})
}

func TestCogStrength(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "strength-a@example.com")
	_, keyB := s.user(t, "strength-b@example.com")
	note := s.create(t, keyA, "a", "note", map[string]any{"content": "the walrus sleeps on the ice"})
	value := s.create(t, keyA, "a", "value", map[string]any{"name": "honesty", "statement": "tell the truth"})
	goal := s.create(t, keyA, "a", "goal", map[string]any{"title": "see the aurora", "goal_type": "aspiration"})

	listed := func(query string) map[string]memory.View {
		out := map[string]memory.View{}
		for _, v := range s.listAll(t, keyA, "agent_id=a"+query, 100) {
			out[v.ID] = v
		}
		return out
	}
	strengthOf := func(id string) (float64, memory.Tier) {
		v := s.get(t, keyA, id)
		return v.Strength, v.Tier
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

	if st, tier := strengthOf(note.ID); !near(st, 1) || tier != memory.TierStrong {
		t.Fatalf("new note: %v %s", st, tier)
	}
	if v := s.get(t, keyA, value.ID); !v.Protected {
		t.Fatal("values are protected by default")
	}
	// Content sets the initial strength and protection, and a patch of
	// those fields sets them again.
	given := s.create(t, keyA, "b", "note", map[string]any{"content": "born weak", "strength": 0.3, "is_protected": true})
	if v := s.get(t, keyA, given.ID); !near(v.Strength, 0.3) || v.Tier != memory.TierWeak || !v.Protected {
		t.Fatalf("content strength 0.3 and is_protected: %+v", v)
	}
	var patched memory.View
	s.request(t, "PATCH", "/v1/memories/"+given.ID, keyA, map[string]any{"content": map[string]any{"strength": 0.9, "is_protected": false}}).must(t, http.StatusOK, &patched)
	if !near(patched.Strength, 0.9) || patched.Protected || patched.Version != 2 {
		t.Fatalf("after patching content.strength 0.9 and is_protected false: %+v", patched)
	}
	s.request(t, "PATCH", "/v1/memories/"+value.ID, keyA, map[string]any{"content": map[string]any{"is_protected": nil}}).must(t, http.StatusOK, &patched)
	if !patched.Protected {
		t.Fatal("a null is_protected restores the type's default (values are protected)")
	}

	// Band edges, 1 % per 30 days from the moment the log recorded it.
	for _, tc := range []struct {
		at   time.Duration
		tier memory.Tier
	}{
		{600*day - time.Hour, memory.TierStrong},
		{600*day + 3*time.Hour, memory.TierFading},
		{1500*day - time.Hour, memory.TierFading},
		{1500*day + 3*time.Hour, memory.TierWeak},
		{2400*day - time.Hour, memory.TierWeak},
		{2400*day + 3*time.Hour, memory.TierDormant},
	} {
		s.clock.offset.Store(int64(tc.at))
		if _, tier := strengthOf(note.ID); tier != tc.tier {
			t.Errorf("after %v: tier %s, want %s", tc.at, tier, tc.tier)
		}
		_, weak := listed("")[note.ID]
		_, all := listed("&include_weak=true")[note.ID]
		wantListed := tc.tier == memory.TierStrong || tc.tier == memory.TierFading
		if weak != wantListed || !all {
			t.Errorf("after %v (%s): in the default list %v, with include_weak %v", tc.at, tc.tier, weak, all)
		}
	}
	// At 1530 days: the note is weak, the protected value strong, the
	// aspiration (180-day half-life) barely faded.
	s.clock.offset.Store(int64(1530 * day))
	if st, tier := strengthOf(value.ID); !near(st, 1) || tier != memory.TierStrong {
		t.Errorf("protected value after 1530 days: %v %s", st, tier)
	}
	if st, _ := strengthOf(goal.ID); !near(st, 1-1530.0/180*0.01) {
		t.Errorf("aspiration after 1530 days: %v", st)
	}
	wantError(t, s.request(t, "GET", "/v1/memories?agent_id=a&include_weak=maybe", keyA, nil), http.StatusBadRequest, "invalid_request")

	// lazy_decay off: strength is what the events set.
	s.settings(t, keyA, "a", map[string]any{"lazy_decay": false})
	if st, _ := strengthOf(note.ID); !near(st, 1) {
		t.Errorf("with lazy_decay off: %v", st)
	}
	s.settings(t, keyA, "a", map[string]any{"lazy_decay": true})

	// Verify from weak (0.49) and weaken.
	var v memory.View
	s.request(t, "POST", "/v1/memories/"+note.ID+"/verify", keyA, map[string]any{"reason": "seen again"}).must(t, http.StatusOK, &v)
	if !near(v.Strength, 0.59) || v.Tier != memory.TierFading || v.VerificationCount != 1 || v.LastVerifiedAt == nil {
		t.Fatalf("after verify: %+v", v)
	}
	s.request(t, "POST", "/v1/memories/"+note.ID+"/weaken", keyA, map[string]any{"by": 0.3}).must(t, http.StatusOK, &v)
	if !near(v.Strength, 0.29) || v.Tier != memory.TierWeak {
		t.Fatalf("after weaken 0.3: %+v", v)
	}
	s.request(t, "POST", "/v1/memories/"+note.ID+"/weaken", keyA, nil).must(t, http.StatusOK, &v)
	if !near(v.Strength, 0.19) || v.Tier != memory.TierDormant {
		t.Fatalf("after a default weaken: %+v", v)
	}
	for _, body := range []any{map[string]any{"by": 0}, map[string]any{"by": 1.5}, map[string]any{"reason": strings.Repeat("r", 501)}, map[string]any{"extra": 1}} {
		wantError(t, s.request(t, "POST", "/v1/memories/"+note.ID+"/weaken", keyA, body), http.StatusBadRequest, "invalid_request")
	}
	s.request(t, "POST", "/v1/memories/"+note.ID+"/verify", keyA, map[string]any{"by": 0.2}).invalid(t, "by")

	// Protection freezes the strength and refuses forget and weaken.
	s.request(t, "POST", "/v1/memories/"+note.ID+"/protect", keyA, nil).must(t, http.StatusOK, &v)
	s.clock.offset.Store(int64(3000 * day))
	if st, _ := strengthOf(note.ID); !near(st, 0.19) {
		t.Errorf("protected strength moved: %v", st)
	}
	wantError(t, s.request(t, "DELETE", "/v1/memories/"+note.ID, keyA, nil), http.StatusConflict, "memory_protected")
	wantError(t, s.request(t, "POST", "/v1/memories/"+note.ID+"/weaken", keyA, nil), http.StatusConflict, "memory_protected")
	wantError(t, s.request(t, "POST", "/v1/memories/"+note.ID+"/protect", keyA, "{}"), http.StatusBadRequest, "invalid_request")
	s.request(t, "POST", "/v1/memories/"+note.ID+"/unprotect", keyA, nil).must(t, http.StatusOK, &v)
	if v.Protected || !near(v.Strength, 0.19) {
		t.Fatalf("after unprotect: %+v", v)
	}

	// Forget: strength 0, out of search unless include_forgotten; recover:
	// weak, searchable again with include_weak. The note is weak (0.19)
	// here, so default searches never find it.
	searchWith := func(flags map[string]any) []string {
		var res struct {
			Results []struct{ ID string } `json:"results"`
		}
		body := map[string]any{"agent_id": "a", "query": "walrus ice", "mode": "keyword"}
		maps.Copy(body, flags)
		s.request(t, "POST", "/v1/search", keyA, body).must(t, http.StatusOK, &res)
		var ids []string
		for _, r := range res.Results {
			ids = append(ids, r.ID)
		}
		return ids
	}
	searchIDs := func() []string { return searchWith(map[string]any{"include_weak": true}) }
	// inVectorSearch tells whether the note is among the vector side's
	// results (every memory of the agent is a candidate there).
	inVectorSearch := func() bool {
		var res struct {
			Results []struct{ ID string } `json:"results"`
		}
		s.request(t, "POST", "/v1/search", keyA, map[string]any{"agent_id": "a", "query": "the walrus sleeps on the ice", "mode": "vector", "limit": 100, "include_weak": true}).
			must(t, http.StatusOK, &res)
		for _, r := range res.Results {
			if r.ID == note.ID {
				return true
			}
		}
		return false
	}
	if !inVectorSearch() {
		t.Fatal("vector search does not find the note before forget")
	}
	if ids := searchIDs(); len(ids) != 1 || ids[0] != note.ID {
		t.Fatalf("search before forget: %v", ids)
	}
	if ids := searchWith(nil); len(ids) != 0 {
		t.Fatalf("default search finds the weak note: %v", ids)
	}
	s.request(t, "DELETE", "/v1/memories/"+note.ID, keyA, nil).must(t, http.StatusOK, nil)
	if st, tier := strengthOf(note.ID); st != 0 || tier != memory.TierForgotten {
		t.Fatalf("forgotten: %v %s", st, tier)
	}
	if ids := searchIDs(); len(ids) != 0 || inVectorSearch() {
		t.Fatalf("search finds a forgotten memory: %v", ids)
	}
	if ids := searchWith(map[string]any{"include_forgotten": true}); len(ids) != 1 || ids[0] != note.ID {
		t.Fatalf("include_forgotten does not find the forgotten memory: %v", ids)
	}
	// Another user asking for forgotten memories of an agent of the same
	// name finds nothing of alice's.
	s.create(t, keyB, "a", "note", map[string]any{"content": "a walrus on bob's ice"})
	var other struct {
		Results []struct{ ID string } `json:"results"`
	}
	s.request(t, "POST", "/v1/search", keyB, map[string]any{"agent_id": "a", "query": "walrus ice", "include_forgotten": true, "include_weak": true}).must(t, http.StatusOK, &other)
	if len(other.Results) != 1 || other.Results[0].ID == note.ID {
		t.Fatalf("another user's search finds %v, want only bob's note", other.Results)
	}
	if _, ok := listed("&include_weak=true")[note.ID]; ok {
		t.Fatal("include_weak alone lists a forgotten memory")
	}
	if _, ok := listed("&include_forgotten=true")[note.ID]; !ok {
		t.Fatal("include_forgotten does not list a forgotten memory")
	}
	wantError(t, s.request(t, "POST", "/v1/memories/"+note.ID+"/verify", keyA, nil), http.StatusConflict, "memory_forgotten")
	s.request(t, "POST", "/v1/memories/"+note.ID+"/recover", keyA, nil).must(t, http.StatusOK, &v)
	if v.Forgotten || !near(v.Strength, memory.RecoveredStrength) || v.Tier != memory.TierWeak {
		t.Fatalf("recovered: %+v", v)
	}
	if ids := searchIDs(); len(ids) != 1 || ids[0] != note.ID || !inVectorSearch() {
		t.Fatalf("search after recover: %v (vector: %v)", ids, inVectorSearch())
	}
	// Recovering again changes nothing.
	before := s.get(t, keyA, note.ID).Version
	s.request(t, "POST", "/v1/memories/"+note.ID+"/recover", keyA, nil).must(t, http.StatusOK, &v)
	if v.Version != before {
		t.Fatalf("a second recover changed the version %d -> %d", before, v.Version)
	}

	for _, action := range []string{"recover", "protect", "unprotect", "weaken", "verify"} {
		wantError(t, s.request(t, "POST", "/v1/memories/"+note.ID+"/"+action, keyB, nil), http.StatusNotFound, "not_found")
	}
	// If-Match applies to every action: a stale tag is 412.
	for _, action := range []string{"recover", "protect", "unprotect", "weaken", "verify"} {
		wantError(t, s.requestIfMatch(t, "POST", "/v1/memories/"+note.ID+"/"+action, keyA, `"1"`, nil), http.StatusPreconditionFailed, "precondition_failed")
	}
}

func TestCogAuditAndStats(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "audit-a@example.com")
	_, keyB := s.user(t, "audit-b@example.com")
	raw := s.create(t, keyA, "a", "raw_entry", map[string]any{"content": "unprocessed thought"})
	s.create(t, keyA, "a", "raw_entry", map[string]any{"content": "processed thought", "processed": true})
	note := s.create(t, keyA, "a", "note", map[string]any{"content": "n"})
	s.create(t, keyA, "a", "note", map[string]any{"content": "n2"})
	s.request(t, "PATCH", "/v1/memories/"+note.ID, keyA, map[string]any{"content": map[string]any{"speaker": "me"}}).must(t, http.StatusOK, nil)
	s.request(t, "POST", "/v1/memories/"+note.ID+"/verify", keyA, map[string]any{"reason": "checked"}).must(t, http.StatusOK, nil)
	s.request(t, "DELETE", "/v1/memories/"+note.ID, keyA, nil).must(t, http.StatusOK, nil)
	s.request(t, "DELETE", "/v1/memories/"+raw.ID, keyA, nil).must(t, http.StatusOK, nil)
	s.settings(t, keyA, "a", map[string]any{"stack_state": "active"})

	var page audit.Page
	s.request(t, "GET", "/v1/agents/a/audit", keyA, nil).must(t, http.StatusOK, &page)
	var ops []string
	for _, e := range page.Entries {
		ops = append(ops, e.Operation)
		if strings.Contains(e.Actor, keyA) || strings.Contains(string(e.Details), keyA) || !strings.HasPrefix(e.Actor, "key:") {
			t.Errorf("entry %+v: actor must be the key id, never the key", e)
		}
	}
	want := "settings_changed forget forget verify update create create create create agent_created"
	if got := strings.Join(ops, " "); got != want {
		t.Fatalf("audit operations newest first:\n got %s\nwant %s", got, want)
	}
	if e := page.Entries[3]; e.MemoryID != note.ID || e.MemoryType != "note" || !strings.Contains(string(e.Details), "checked") {
		t.Fatalf("verify entry: %+v", e)
	}
	if e := page.Entries[4]; string(e.Details) != `{"content_fields":["speaker"],"tags_changed":false}` {
		t.Fatalf("the update entry names the changed fields, not their content: %s", e.Details)
	}
	for i := 1; i < len(page.Entries); i++ {
		if page.Entries[i].At.After(page.Entries[i-1].At) {
			t.Fatalf("entries not newest first at %d", i)
		}
	}

	// Paging with before.
	var seen []string
	before := ""
	for pages := 0; ; pages++ {
		path := "/v1/agents/a/audit?limit=3"
		if before != "" {
			path += "&before=" + before
		}
		var p struct {
			Entries    []audit.Entry `json:"entries"`
			NextBefore *string       `json:"next_before"`
		}
		s.request(t, "GET", path, keyA, nil).must(t, http.StatusOK, &p)
		for _, e := range p.Entries {
			seen = append(seen, e.Operation)
		}
		if p.NextBefore == nil {
			break
		}
		before = *p.NextBefore
	}
	if got := strings.Join(seen, " "); got != want {
		t.Fatalf("paged audit = %s", got)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?before=unknown"} {
		wantError(t, s.request(t, "GET", "/v1/agents/a/audit"+q, keyA, nil), http.StatusBadRequest, "invalid_request")
	}
	// Another user's entry id is not a valid cursor either.
	var pb audit.Page
	s.create(t, keyB, "b", "note", map[string]any{"content": "b"})
	s.request(t, "GET", "/v1/agents/b/audit", keyB, nil).must(t, http.StatusOK, &pb)
	wantError(t, s.request(t, "GET", "/v1/agents/a/audit?before="+pb.Entries[0].ID, keyA, nil), http.StatusBadRequest, "invalid_request")
	wantError(t, s.request(t, "GET", "/v1/agents/a/audit", keyB, nil), http.StatusNotFound, "not_found")
	wantError(t, s.request(t, "GET", "/v1/agents/a/stats", keyB, nil), http.StatusNotFound, "not_found")

	// Account audit: the account's own events, never the key itself.
	var acct audit.Page
	s.request(t, "GET", "/v1/audit", keyA, nil).must(t, http.StatusOK, &acct)
	var acctOps []string
	for _, e := range acct.Entries {
		acctOps = append(acctOps, e.Operation)
		if strings.Contains(string(e.Details), keyA) || strings.Contains(e.Actor, keyA) {
			t.Errorf("account entry leaks the key: %+v", e)
		}
	}
	if got := strings.Join(acctOps, " "); !strings.HasSuffix(got, "email_verified verification_issued register") {
		t.Fatalf("account audit = %s", got)
	}
	s.request(t, "GET", "/v1/audit", keyB, nil).must(t, http.StatusOK, &acct)
	for _, e := range acct.Entries {
		if e.Operation == "agent_deleted" {
			t.Fatalf("b sees a's entries: %+v", e)
		}
	}

	var st memory.Stats
	s.request(t, "GET", "/v1/agents/a/stats", keyA, nil).must(t, http.StatusOK, &st)
	if st.Total != 4 || st.ByType[memory.Note] != 2 || st.ByType[memory.RawEntry] != 2 || st.ByType[memory.Belief] != 0 ||
		st.Forgotten != 2 || st.ForgottenByType[memory.Note] != 1 || st.Raw.Processed != 1 || st.Raw.Unprocessed != 0 ||
		st.Suggestions["pending"] != 0 || len(st.Suggestions) != 6 || len(st.ByType) != len(memory.Types()) {
		t.Fatalf("stats = %+v", st)
	}
	s.clock.offset.Store(int64(1600 * day))
	s.request(t, "GET", "/v1/agents/a/stats", keyA, nil).must(t, http.StatusOK, &st)
	if st.Weak != 1 { // the remaining note: raw entries never decay, forgotten memories do not count
		t.Fatalf("weak after 1600 days = %d (%+v)", st.Weak, st)
	}

	// Deleting the agent removes its trail and leaves an account entry.
	s.request(t, "DELETE", "/v1/agents/a", keyA, nil).must(t, http.StatusOK, nil)
	s.request(t, "GET", "/v1/audit?limit=1", keyA, nil).must(t, http.StatusOK, &acct)
	if len(acct.Entries) != 1 || acct.Entries[0].Operation != "agent_deleted" || !strings.Contains(string(acct.Entries[0].Details), `"a"`) {
		t.Fatalf("account audit after delete: %+v", acct.Entries)
	}
	wantError(t, s.request(t, "GET", "/v1/agents/a/audit", keyA, nil), http.StatusNotFound, "not_found")
}

// dataFileHashes hashes the database files of the data dir.
func dataFileHashes(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, name := range []string{sqlite.FileName, sqlite.FileName + "-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[name] = sha256.Sum256(b)
	}
	return out
}

// TestCogReadsNeverWrite tours every GET endpoint of stack cognition (and
// the memory reads whose strength they compute) with the clock far ahead,
// where the original system would have written decayed strengths back:
// the log's head and the database files must not change.
func TestCogReadsNeverWrite(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, keyA := s.user(t, "ro-a@example.com")
	raw := s.create(t, keyA, "a", "raw_entry", map[string]any{"content": "r"})
	ep := s.createFrom(t, keyA, "a", "episode", map[string]any{"objective": "o", "outcome": "x"}, "raw:"+raw.ID)
	s.request(t, "DELETE", "/v1/memories/"+raw.ID, keyA, nil).must(t, http.StatusOK, nil)
	s.clock.offset.Store(int64(2000 * day))
	ctx := context.Background()
	tour := []string{
		"/v1/agents/a/settings", "/v1/agents/a/stats", "/v1/agents/a/audit", "/v1/audit",
		"/v1/memories/" + ep.ID + "/provenance", "/v1/memories/" + raw.ID + "/provenance?direction=down",
		"/v1/memories/" + ep.ID, "/v1/memories?agent_id=a&include_weak=true&include_forgotten=true", "/v1/memories?agent_id=a",
	}
	s.request(t, "GET", tour[0], keyA, nil).must(t, http.StatusOK, nil) // settle anything the first request does
	head, err := s.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The database copies its WAL into the main file once writes have
	// paused (sqlite's idle checkpoint), which changes the file's bytes but
	// nothing in it; both hashes are taken with the WAL copied in and
	// emptied, so only a write made by the tour can tell them apart.
	reclaim := func() {
		t.Helper()
		if err := s.db.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reclaim()
	files := dataFileHashes(t, s.dataDir)
	for round := 0; round < 3; round++ {
		for _, path := range tour {
			s.request(t, "GET", path, keyA, nil).must(t, http.StatusOK, nil)
		}
	}
	after, err := s.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != head {
		t.Fatalf("reads appended %d events", after-head)
	}
	reclaim()
	if got := dataFileHashes(t, s.dataDir); fmt.Sprint(got) != fmt.Sprint(files) {
		t.Fatal("reads changed the database files")
	}
}

// TestCogReplayEquivalence rebuilds the memories (strength and settings),
// provenance and audit read models from the log after a scenario that
// uses every new event: each export must equal the incremental one.
func TestCogReplayEquivalence(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{}, func(t *testing.T, s *stack) {
		_, keyA := s.user(t, "cog-replay-a@example.com")
		_, keyB := s.user(t, "cog-replay-b@example.com")
		raw := s.create(t, keyA, "a", "raw_entry", map[string]any{"content": "r"})
		s.settings(t, keyA, "a", map[string]any{"stack_state": "active", "lazy_decay": false})
		ep := s.createFrom(t, keyA, "a", "episode", map[string]any{"objective": "o", "outcome": "x"}, "raw:"+raw.ID)
		b := s.createFrom(t, keyA, "a", "belief", map[string]any{"statement": "s"}, "episode:"+ep.ID)
		goal := s.createFrom(t, keyA, "a", "goal", map[string]any{"title": "g", "goal_type": "task"}, "belief:"+b.ID)
		s.request(t, "PATCH", "/v1/memories/"+goal.ID, keyA, map[string]any{"content": map[string]any{"goal_type": "commitment"}}).must(t, http.StatusOK, nil)
		s.clock.offset.Store(int64(100 * day))
		s.request(t, "POST", "/v1/memories/"+ep.ID+"/weaken", keyA, map[string]any{"by": 0.25, "reason": "doubt"}).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/memories/"+b.ID+"/verify", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/memories/"+b.ID+"/protect", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/memories/"+goal.ID+"/protect", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/memories/"+goal.ID+"/unprotect", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "DELETE", "/v1/memories/"+raw.ID, keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "POST", "/v1/memories/"+raw.ID+"/recover", keyA, nil).must(t, http.StatusOK, nil)
		s.request(t, "DELETE", "/v1/memories/"+goal.ID+"?purge=true", keyA, nil).must(t, http.StatusOK, nil)
		s.create(t, keyB, "gone", "note", map[string]any{"content": "deleted with its agent"})
		s.settings(t, keyB, "gone", map[string]any{"stack_state": "maintenance"})
		s.request(t, "DELETE", "/v1/agents/gone", keyB, nil).must(t, http.StatusOK, nil)
		s.create(t, keyB, "gone", "note", map[string]any{"content": "re-created, default settings"})
		var v agentsettings.View
		s.request(t, "GET", "/v1/agents/gone/settings", keyB, nil).must(t, http.StatusOK, &v)
		if v.StackState != agentsettings.Initializing {
			t.Fatalf("a re-created agent inherited settings: %+v", v)
		}

		s.stopEngine()
		exportAll := func() []byte {
			var buf bytes.Buffer
			for _, m := range []interface {
				Export(context.Context, io.Writer) error
			}{s.memories, s.prov, s.audit} {
				if err := m.Export(context.Background(), &buf); err != nil {
					t.Fatal(err)
				}
			}
			return buf.Bytes()
		}
		incremental := exportAll()
		for _, want := range []string{`"provenance_edges"`, `"audit_entries"`, `"agent_settings"`, `"weaken"`, `"recover"`} {
			if !bytes.Contains(incremental, []byte(want)) {
				t.Fatalf("export lacks %s: the scenario did not run", want)
			}
		}
		engine := projections.NewEngine(s.store, slog.New(slog.DiscardHandler), projections.NewMemories(s.memories), projections.NewProvenance(s.prov), projections.NewAudit(s.audit))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := engine.Rebuild(ctx, projections.MemoriesProjectionName, projections.ProvenanceProjectionName, projections.AuditProjectionName); err != nil {
			t.Fatal(err)
		}
		if replayed := exportAll(); !bytes.Equal(incremental, replayed) {
			t.Fatalf("replay differs from the incremental build:\n--- incremental\n%s\n--- replayed\n%s", incremental, replayed)
		}
	})
}

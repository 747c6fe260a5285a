package client_test

import (
	"net/http"
	"testing"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// notFound fails t unless err is the API's 404 not_found.
func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !client.IsCode(err, "not_found") || !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("%s: got %v, want 404 not_found", what, err)
	}
}

func invalid(t *testing.T, what string, err error) {
	t.Helper()
	if !client.IsCode(err, "invalid_request") || !client.IsStatus(err, http.StatusBadRequest) {
		t.Errorf("%s: got %v, want 400 invalid_request", what, err)
	}
}

// The cognition surface through the public client against the real
// binary: settings, provenance, strength actions, processing, raw
// entries, suggestions, exhaust, anxiety, audit and stats — each group
// with a bad request and another user's 404.
func TestCognitionThroughTheClient(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)
	other := client.New(f.srv.APIURL(), testserver.Register(t, f.srv.APIURL(), f.srv.DataDir, "other@example.com"))
	raw := func(text string) string {
		m, err := f.c.CreateMemory(ctx, client.CreateMemoryRequest{AgentID: "claire", Type: "raw_entry", Content: client.RawEntryContent{Content: text}})
		noErr(t, err)
		return m.ID
	}
	rawID := raw("Yesterday we deployed the billing service and it failed, then I learned to check migrations")
	raw("I think caching always helps latency")
	raw("Reminder: the docs are at https://example.com/docs")

	t.Run("settings", func(t *testing.T) {
		s, err := f.c.Settings(ctx, "claire")
		noErr(t, err)
		if s.AgentID != "claire" || s.StackState == "" || s.UpdatedAt != nil {
			t.Fatalf("settings: %+v", s)
		}
		s, err = f.c.PatchSettings(ctx, "claire", map[string]any{"lint_rules": map[string]any{"min_length": 12}})
		noErr(t, err)
		if s.LintRules.MinLength != 12 || s.UpdatedAt == nil {
			t.Errorf("patched: %+v", s)
		}
		_, err = f.c.PatchSettings(ctx, "claire", map[string]any{"stack_state": "asleep"})
		invalid(t, "bad stack_state", err)
		_, err = other.Settings(ctx, "claire")
		notFound(t, "other's settings", err)
		_, err = other.PatchSettings(ctx, "claire", map[string]any{"lazy_decay": true})
		notFound(t, "other's settings patch", err)
	})

	t.Run("processing, raw and suggestions", func(t *testing.T) {
		v, err := f.c.Processing(ctx, "claire")
		noErr(t, err)
		if len(v.Triggers) != 7 || v.Raw.Unprocessed != 3 || v.Config.Layers["raw_to_episode"].QuantityThreshold != 10 {
			t.Fatalf("processing: %+v", v)
		}
		three := 3
		v, err = f.c.PatchProcessing(ctx, "claire", client.ProcessingPatch{Layers: map[string]client.LayerPatch{"raw_to_episode": {QuantityThreshold: &three}}})
		noErr(t, err)
		if v.Config.Layers["raw_to_episode"].QuantityThreshold != 3 {
			t.Errorf("patched layer: %+v", v.Config.Layers["raw_to_episode"])
		}
		zero := 0
		_, err = f.c.PatchProcessing(ctx, "claire", client.ProcessingPatch{Layers: map[string]client.LayerPatch{"raw_to_episode": {BatchSize: &zero}}})
		invalid(t, "batch_size 0", err)

		passes, err := f.c.Process(ctx, "claire", client.ProcessRequest{Force: true})
		noErr(t, err)
		if len(passes) != 7 || passes[0].Transition != "raw_to_episode" || passes[0].SourceCount != 3 || len(passes[0].Suggestions) != 1 {
			t.Fatalf("passes: %+v", passes)
		}
		_, err = f.c.Process(ctx, "claire", client.ProcessRequest{Transition: "raw_to_poem"})
		invalid(t, "unknown transition", err)

		yes := true
		done, err := f.c.RawEntries(ctx, "claire", client.RawEntriesOptions{Processed: &yes, Limit: 1})
		noErr(t, err)
		if len(done) != 1 || !done[0].Processed || len(done[0].ProcessedInto) == 0 || done[0].Type != "raw_entry" {
			t.Errorf("processed raw entries: %+v", done)
		}
		_, err = f.c.RawEntries(ctx, "claire", client.RawEntriesOptions{Limit: 501})
		invalid(t, "raw limit 501", err)

		pending, err := f.c.Suggestions(ctx, "claire", client.SuggestionsOptions{Status: "pending"})
		noErr(t, err)
		if len(pending) != 3 {
			t.Fatalf("pending suggestions: %+v", pending)
		}
		_, err = f.c.Suggestions(ctx, "claire", client.SuggestionsOptions{Status: "maybe"})
		invalid(t, "bad status", err)
		byType := map[string]client.Suggestion{}
		for _, sg := range pending {
			byType[sg.MemoryType] = sg
		}
		ep := byType["episode"]
		got, err := f.c.Suggestion(ctx, ep.ID)
		noErr(t, err)
		if got.ID != ep.ID || got.Sources[0] != "raw_entry:"+rawID {
			t.Errorf("suggestion: %+v", got)
		}
		acc, err := f.c.AcceptSuggestion(ctx, ep.ID, client.AcceptOptions{Tags: []string{"ops"}})
		noErr(t, err)
		if acc.Suggestion.Status != "promoted" || acc.Memory.Type != "episode" || acc.Memory.ID == "" {
			t.Errorf("accepted: %+v", acc)
		}
		_, err = f.c.AcceptSuggestion(ctx, ep.ID, client.AcceptOptions{})
		if !client.IsCode(err, "suggestion_not_pending") {
			t.Errorf("accept twice: %v", err)
		}
		rej, err := f.c.RejectSuggestion(ctx, byType["belief"].ID, "too vague")
		noErr(t, err)
		dis, err := f.c.DismissSuggestion(ctx, byType["note"].ID, "")
		noErr(t, err)
		if rej.Status != "rejected" || rej.Reason != "too vague" || dis.Status != "dismissed" {
			t.Errorf("resolved: %+v / %+v", rej, dis)
		}

		for what, err := range map[string]error{
			"processing":       errOf(other.Processing(ctx, "claire")),
			"patch processing": errOf(other.PatchProcessing(ctx, "claire", client.ProcessingPatch{})),
			"process":          errOf(other.Process(ctx, "claire", client.ProcessRequest{})),
			"raw":              errOf(other.RawEntries(ctx, "claire", client.RawEntriesOptions{})),
			"suggestions":      errOf(other.Suggestions(ctx, "claire", client.SuggestionsOptions{})),
			"suggestion":       errOf(other.Suggestion(ctx, ep.ID)),
			"accept":           errOf(other.AcceptSuggestion(ctx, byType["belief"].ID, client.AcceptOptions{})),
			"reject":           errOf(other.RejectSuggestion(ctx, byType["belief"].ID, "")),
			"dismiss":          errOf(other.DismissSuggestion(ctx, byType["belief"].ID, "")),
		} {
			notFound(t, "other's "+what, err)
		}
	})

	t.Run("exhaust", func(t *testing.T) {
		raw("Another day, another deploy: we shipped the search service and it failed, then I learned to pin versions")
		no := false
		r, err := f.c.Exhaust(ctx, "claire", client.ExhaustRequest{AutoPromote: &no})
		noErr(t, err)
		// The accepted episode is a source of medium's episode transitions,
		// which the rule-based extractor cannot run.
		if !r.Converged || r.ConvergenceReason != "inference_unavailable" || r.CyclesCompleted != 4 || r.TotalSuggestions != 1 ||
			r.Cycles[0].Intensity != "light" || !r.Cycles[3].InferenceBlocked {
			t.Errorf("exhaust: %+v", r)
		}
		_, err = f.c.Exhaust(ctx, "claire", client.ExhaustRequest{MaxCycles: 101})
		invalid(t, "max_cycles 101", err)
		_, err = other.Exhaust(ctx, "claire", client.ExhaustRequest{})
		notFound(t, "other's exhaust", err)
	})

	t.Run("provenance and strength", func(t *testing.T) {
		eps, err := f.c.ListMemories(ctx, client.ListMemoriesOptions{AgentID: "claire", Type: "episode"})
		noErr(t, err)
		if len(eps.Memories) != 1 {
			t.Fatalf("episodes: %d", len(eps.Memories))
		}
		ep := eps.Memories[0]
		p, err := f.c.Provenance(ctx, ep.ID, client.ProvenanceOptions{Direction: "up"})
		noErr(t, err)
		if p.Up == nil || len(p.Up.Nodes) != 1 || p.Up.Nodes[0].ID != rawID || p.Down != nil {
			t.Errorf("provenance: %+v", p)
		}
		_, err = f.c.Provenance(ctx, ep.ID, client.ProvenanceOptions{Direction: "sideways"})
		invalid(t, "bad direction", err)

		by := 0.3
		m, err := f.c.WeakenMemory(ctx, ep.ID, client.StrengthChange{By: &by, Reason: "stale"})
		noErr(t, err)
		if m.Strength > 0.71 || m.Strength < 0.69 {
			t.Errorf("weakened: strength %v", m.Strength)
		}
		m, err = f.c.VerifyMemory(ctx, ep.ID, client.StrengthChange{IfMatch: m.ETag()})
		noErr(t, err)
		if m.VerificationCount != 1 || m.LastVerifiedAt == nil {
			t.Errorf("verified: %+v", m)
		}
		m, err = f.c.ProtectMemory(ctx, ep.ID, "")
		noErr(t, err)
		if !m.IsProtected {
			t.Errorf("protect: %+v", m)
		}
		m, err = f.c.UnprotectMemory(ctx, ep.ID, m.ETag())
		noErr(t, err)
		if m.IsProtected {
			t.Errorf("unprotect: %+v", m)
		}
		_, err = f.c.ProtectMemory(ctx, ep.ID, `"1"`)
		if !client.IsCode(err, "precondition_failed") {
			t.Errorf("protect at a stale version: %v", err)
		}
		_, err = f.c.ForgetMemory(ctx, ep.ID, client.ForgetOptions{})
		noErr(t, err)
		m, err = f.c.RecoverMemory(ctx, ep.ID, "")
		noErr(t, err)
		if m.Forgotten || m.Tier == "forgotten" {
			t.Errorf("recovered: %+v", m)
		}
		_, err = f.c.WeakenMemory(ctx, ep.ID, client.StrengthChange{By: new(float64)})
		invalid(t, "weaken by 0", err)

		for what, err := range map[string]error{
			"provenance": errOf(other.Provenance(ctx, ep.ID, client.ProvenanceOptions{})),
			"weaken":     errOf(other.WeakenMemory(ctx, ep.ID, client.StrengthChange{})),
			"verify":     errOf(other.VerifyMemory(ctx, ep.ID, client.StrengthChange{})),
			"protect":    errOf(other.ProtectMemory(ctx, ep.ID, "")),
			"unprotect":  errOf(other.UnprotectMemory(ctx, ep.ID, "")),
			"recover":    errOf(other.RecoverMemory(ctx, ep.ID, "")),
		} {
			notFound(t, "other's "+what, err)
		}
	})

	t.Run("anxiety, audit and stats", func(t *testing.T) {
		rep, err := f.c.Anxiety(ctx, "claire")
		noErr(t, err)
		if len(rep.Dimensions) != 6 || rep.OverallLevel == "" || rep.PreviousLevel == nil || rep.HysteresisLevel == "" {
			t.Errorf("anxiety: %+v", rep)
		}
		page, err := f.c.AgentAudit(ctx, "claire", client.AuditOptions{Limit: 2})
		noErr(t, err)
		if len(page.Entries) != 2 || page.NextBefore == "" || page.Entries[0].Actor == "" {
			t.Errorf("agent audit: %+v", page)
		}
		next, err := f.c.AgentAudit(ctx, "claire", client.AuditOptions{Limit: 2, Before: page.NextBefore})
		noErr(t, err)
		if len(next.Entries) == 0 || next.Entries[0].ID == page.Entries[0].ID {
			t.Errorf("second audit page: %+v", next)
		}
		acct, err := f.c.AccountAudit(ctx, client.AuditOptions{})
		noErr(t, err)
		ops := map[string]bool{}
		for _, e := range acct.Entries {
			ops[e.Operation] = true
			if e.AgentID != "" {
				t.Errorf("agent entry in the account trail: %+v", e)
			}
		}
		if !ops["register"] || !ops["email_verified"] {
			t.Errorf("account audit operations: %v", ops)
		}
		_, err = f.c.AccountAudit(ctx, client.AuditOptions{Limit: 1001})
		invalid(t, "audit limit 1001", err)
		otherAcct, err := other.AccountAudit(ctx, client.AuditOptions{})
		noErr(t, err)
		for _, e := range otherAcct.Entries {
			for _, mine := range acct.Entries {
				if e.ID == mine.ID {
					t.Errorf("the other user sees %+v", e)
				}
			}
		}

		st, err := f.c.Stats(ctx, "claire")
		noErr(t, err)
		if st.ByType["raw_entry"] != 4 || st.ByType["episode"] != 1 || st.Suggestions["promoted"] != 1 || st.Suggestions["rejected"] != 1 || st.Suggestions["dismissed"] != 1 {
			t.Errorf("stats: %+v", st)
		}
		for what, err := range map[string]error{
			"anxiety": errOf(other.Anxiety(ctx, "claire")),
			"audit":   errOf(other.AgentAudit(ctx, "claire", client.AuditOptions{})),
			"stats":   errOf(other.Stats(ctx, "claire")),
		} {
			notFound(t, "other's "+what, err)
		}
		_, err = f.c.Stats(ctx, "nobody")
		notFound(t, "a missing agent's stats", err)
	})
}

// errOf keeps the error of a call.
func errOf[T any](_ T, err error) error { return err }

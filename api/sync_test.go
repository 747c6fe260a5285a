package api_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/agentsettings"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/projections"
)

// syncEvent is a pushed event of type typ with a fresh canonical id.
func syncEvent(typ string, payload any) commands.SyncEvent {
	raw, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return commands.SyncEvent{ID: uuid.NewString(), Type: typ, Time: time.Now().UTC(), Payload: raw}
}

// pushedNote is a MemoryCreated of a note with a fresh id.
func pushedNote(text string) commands.SyncEvent {
	return syncEvent("MemoryCreated", map[string]any{"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": text}})
}

// push sends events to the agent with POST /v1/sync/events.
func (s *stack) push(t testing.TB, bearer, agentID string, events ...commands.SyncEvent) response {
	t.Helper()
	return s.request(t, "POST", "/v1/sync/events", bearer, map[string]any{"agent_id": agentID, "events": events})
}

// streamLength is how many events the user's agent stream holds.
func (s *stack) streamLength(t testing.TB, userID, agentID string) int {
	t.Helper()
	events, err := s.store.ReadStream(context.Background(), memory.AgentStream(userID, agentID), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(events)
}

// vectorOf encodes floats as memory.Vector marshals them.
func vectorOf(xs ...float32) string {
	buf := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// TestSyncPushObeysTheWriteRules pushes, for each rule of the API's
// writes, a push that breaks it after valid events: the push is refused
// with the error the API gives, and nothing of it is appended.
func TestSyncPushObeysTheWriteRules(t *testing.T) {
	t.Parallel()
	quotas := memory.Quotas{MemoriesPerAgent: 5, AgentsPerUser: 3, TextBytesPerUser: 3000}
	onEachReadModelBackend(t, stackOptions{quotas: quotas, syncMaxPushBytes: 256 << 10}, testSyncPushObeysTheWriteRules)
}

func testSyncPushObeysTheWriteRules(t *testing.T, s *stack) {
	ctx := context.Background()
	users := 0
	// newUser is a fresh user, so that quotas do not carry over between
	// cases.
	newUser := func(t *testing.T) (userID, key string) {
		users++
		return s.user(t, fmt.Sprintf("sync-rules-%d@example.com", users))
	}
	createNote := func(t *testing.T, userID, agentID string) string {
		c, err := s.memCmds.Create(ctx, metaFor(userID), agentID, commands.MemoryInput{Type: "note", Content: json.RawMessage(`{"content":"kept"}`)})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	setState := func(t *testing.T, userID, agentID, state string) {
		if _, err := s.memCmds.PatchSettings(ctx, metaFor(userID), agentID, json.RawMessage(`{"stack_state":"`+state+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// events builds the push to the user's agent "a" (setup may
		// prepare the user's state first).
		events func(t *testing.T, userID string) []commands.SyncEvent
		status int
		code   string
		field  string // details.field of a 400
	}{
		{"more memories than the agent quota", func(t *testing.T, _ string) []commands.SyncEvent {
			var evs []commands.SyncEvent
			for i := range 20 {
				evs = append(evs, pushedNote(fmt.Sprintf("note %d", i)))
			}
			return evs
		}, http.StatusForbidden, memory.CodeQuotaMemoriesPerAgent, ""},
		{"more agents than the agent quota", func(t *testing.T, userID string) []commands.SyncEvent {
			for _, agent := range []string{"b", "c", "d"} {
				createNote(t, userID, agent)
			}
			return []commands.SyncEvent{pushedNote("a fourth agent")}
		}, http.StatusForbidden, memory.CodeQuotaAgents, ""},
		{"content past the text quota", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("small"), pushedNote(strings.Repeat("x", 30_000))}
		}, http.StatusForbidden, memory.CodeQuotaTextBytes, ""},
		{"a memory created in an agent in maintenance", func(t *testing.T, userID string) []commands.SyncEvent {
			createNote(t, userID, "a")
			setState(t, userID, "a", "maintenance")
			return []commands.SyncEvent{pushedNote("while in maintenance")}
		}, http.StatusConflict, "stack_in_maintenance", ""},
		{"a change of a memory of an agent in maintenance", func(t *testing.T, userID string) []commands.SyncEvent {
			id := createNote(t, userID, "a")
			setState(t, userID, "a", "maintenance")
			return []commands.SyncEvent{syncEvent("MemoryForgotten", map[string]any{"memory_id": id, "forgotten_at": time.Now().UTC()})}
		}, http.StatusConflict, "stack_in_maintenance", ""},
		{"a belief without derived_from in an active agent", func(t *testing.T, userID string) []commands.SyncEvent {
			createNote(t, userID, "a")
			setState(t, userID, "a", "active")
			return []commands.SyncEvent{syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "belief", "content": map[string]any{"statement": "unfounded", "confidence": 0.5}})}
		}, http.StatusBadRequest, memory.CodeProvenanceViolation, "events[0].payload.derived_from"},
		{"derived_from naming a memory that does not exist", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "derived"}, "derived_from": []string{"note:" + uuid.NewString()}})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.derived_from"},
		{"derived_from naming another user's memory", func(t *testing.T, _ string) []commands.SyncEvent {
			other, _ := newUser(t)
			theirs := createNote(t, other, "a")
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "derived"}, "derived_from": []string{"note:" + theirs}})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.derived_from"},
		{"derived_from naming a memory purged earlier in the push", func(t *testing.T, userID string) []commands.SyncEvent {
			id := createNote(t, userID, "a")
			return []commands.SyncEvent{syncEvent("MemoryPurged", map[string]any{"memory_id": id}), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "derived"}, "derived_from": []string{"note:" + id}})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.derived_from"},
		{"a created_at of 9999-12-31", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "from the future"}, "created_at": "9999-12-31T00:00:00Z"})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.created_at"},
		{"an event time of 9999-12-31", func(t *testing.T, _ string) []commands.SyncEvent {
			ev := pushedNote("from the future")
			ev.Time = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
			return []commands.SyncEvent{pushedNote("fine"), ev}
		}, http.StatusBadRequest, "invalid_request", "events[1].time"},
		{"a MemoryWeakened reason of 200,000 characters", func(t *testing.T, _ string) []commands.SyncEvent {
			created := pushedNote("to weaken")
			var m struct {
				MemoryID string `json:"memory_id"`
			}
			_ = json.Unmarshal(created.Payload, &m)
			return []commands.SyncEvent{created, syncEvent("MemoryWeakened", map[string]any{
				"memory_id": m.MemoryID, "by": 0.1, "strength": 0.9, "reason": strings.Repeat("r", 200_000), "at": time.Now().UTC()})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.reason"},
		{"a MemoryWeakened by outside (0, 1]", func(t *testing.T, userID string) []commands.SyncEvent {
			id := createNote(t, userID, "a")
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryWeakened", map[string]any{
				"memory_id": id, "by": 7, "strength": 0.9, "at": time.Now().UTC()})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.by"},
		{"a promotion of a suggestion under another memory id", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "promoted"}, "promotes": map[string]any{"suggestion_id": uuid.NewString()}})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.promotes"},
		{"a push past the byte limit", func(t *testing.T, _ string) []commands.SyncEvent {
			var evs []commands.SyncEvent
			for range 30 {
				evs = append(evs, pushedNote(strings.Repeat("y", 10_000)))
			}
			return evs
		}, http.StatusRequestEntityTooLarge, "push_too_large", ""},
		{"a payload field its type does not have", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("MemoryCreated", map[string]any{
				"memory_id": uuid.NewString(), "type": "note", "content": map[string]any{"content": "x"}, "colour": "blue"})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload"},
		{"an event type sync does not carry", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("SuggestionCreated", map[string]any{"suggestion_id": uuid.NewString()})}
		}, http.StatusBadRequest, "invalid_request", "events[1].type"},
		{"settings a write could not make", func(t *testing.T, _ string) []commands.SyncEvent {
			return []commands.SyncEvent{pushedNote("fine"), syncEvent("StackSettingsChanged", map[string]any{"settings": map[string]any{
				"stack_state": "maintenance", "lint_rules": map[string]any{"min_length": 50, "max_length": 10}}})}
		}, http.StatusBadRequest, "invalid_request", "events[1].payload.lint_rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			userID, key := newUser(t)
			events := tc.events(t, userID)
			before := s.streamLength(t, userID, "a")
			r := s.push(t, key, "a", events...)
			wantError(t, r, tc.status, tc.code)
			if tc.field != "" {
				if got, _ := r.details()["field"].(string); got != tc.field {
					t.Errorf("details.field = %q, want %q: %s", got, tc.field, r.raw)
				}
			}
			if after := s.streamLength(t, userID, "a"); after != before {
				t.Errorf("the refused push appended %d events", after-before)
			}
		})
	}
}

// TestSyncPushOfAValidHistoryIsAppended: what the rules refuse is only
// what breaks them: in an agent that enforces provenance, a push of a raw
// entry, a note derived from it and a belief derived from the note (each
// naming a memory created earlier in the same push), a patch and a
// weaken is appended whole.
func TestSyncPushOfAValidHistoryIsAppended(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	ctx := context.Background()
	if _, err := s.memCmds.Create(ctx, metaFor(alice), "a", commands.MemoryInput{Type: "raw_entry", Content: json.RawMessage(`{"content":"first"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.memCmds.PatchSettings(ctx, metaFor(alice), "a", json.RawMessage(`{"stack_state":"active"}`)); err != nil {
		t.Fatal(err)
	}
	raw, note, belief := uuid.NewString(), uuid.NewString(), uuid.NewString()
	events := []commands.SyncEvent{
		syncEvent("MemoryCreated", map[string]any{"memory_id": raw, "type": "raw_entry", "content": map[string]any{"content": "shipped the release"}}),
		syncEvent("MemoryCreated", map[string]any{"memory_id": note, "type": "note", "content": map[string]any{"content": "releases ship on fridays"}, "derived_from": []string{"raw:" + raw}}),
		syncEvent("MemoryCreated", map[string]any{"memory_id": belief, "type": "belief", "content": map[string]any{"statement": "fridays are for releases", "confidence": 0.6}, "derived_from": []string{"note:" + note}}),
		syncEvent("MemoryPatched", map[string]any{"memory_id": note, "content": map[string]any{"content": "releases ship on thursdays"}, "updated_at": time.Now().UTC()}),
		syncEvent("MemoryWeakened", map[string]any{"memory_id": belief, "by": 0.2, "strength": 0.8, "reason": "one counterexample", "at": time.Now().UTC()}),
	}
	before := s.streamLength(t, alice, "a")
	var res commands.SyncPushResult
	s.push(t, aliceKey, "a", events...).must(t, http.StatusOK, &res)
	if res.Appended != len(events) || s.streamLength(t, alice, "a") != before+len(events) {
		t.Fatalf("appended %d of %d events: %+v", s.streamLength(t, alice, "a")-before, len(events), res)
	}
	if v := s.get(t, aliceKey, belief); len(v.DerivedFrom) != 1 || v.DerivedFrom[0] != "note:"+note {
		t.Errorf("belief derived from %v, want note:%s", v.DerivedFrom, note)
	}
}

// TestSyncPushSkipsEventsOfAMemoryAfterItsPurge: in a push, the events
// of a memory that follow its purge are skipped, as a change of a memory
// the agent does not have is: neither its vector nor its new text enters
// the log after the purge.
func TestSyncPushSkipsEventsOfAMemoryAfterItsPurge(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	id := uuid.NewString()
	events := []commands.SyncEvent{
		syncEvent("MemoryCreated", map[string]any{"memory_id": id, "type": "note", "content": map[string]any{"content": "the secret to purge"}}),
		syncEvent("MemoryPurged", map[string]any{"memory_id": id}),
		syncEvent("MemoryEmbedded", map[string]any{"memory_id": id, "model": "default", "dimensions": 2, "text_hash": "x", "vector": vectorOf(0.5, 0.25)}),
		syncEvent("MemoryPatched", map[string]any{"memory_id": id, "content": map[string]any{"content": "the secret, patched"}, "updated_at": time.Now().UTC()}),
		syncEvent("MemoryPurged", map[string]any{"memory_id": id}),
	}
	var res commands.SyncPushResult
	s.push(t, aliceKey, "a", events...).must(t, http.StatusOK, &res)
	if res.Appended != 2 || res.Skipped != 3 {
		t.Fatalf("push answered %+v; want the create and the purge appended, the three events after the purge skipped", res)
	}
	stream, err := s.store.ReadStream(context.Background(), memory.AgentStream(alice, "a"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := stream[len(stream)-1]; last.Type != "MemoryPurged" {
		t.Fatalf("the agent's stream ends with %s; want the purge last", last.Type)
	}
}

// TestSyncPushRefusesVectorsSearchCannotUse: a pushed MemoryEmbedded with
// NaN, an infinity or all zeros is refused as the API refuses such a
// vector, and nothing of the push is stored.
func TestSyncPushRefusesVectorsSearchCannotUse(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	for _, tc := range []struct {
		name   string
		vector []float32
	}{
		{"NaN", []float32{1, float32(math.NaN()), 0}},
		{"infinity", []float32{1, float32(math.Inf(1)), 0}},
		{"zeros", []float32{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := "vec-" + tc.name
			created := pushedNote("a note to embed")
			var m struct {
				MemoryID string `json:"memory_id"`
			}
			_ = json.Unmarshal(created.Payload, &m)
			embedded := syncEvent("MemoryEmbedded", map[string]any{"memory_id": m.MemoryID, "model": "some-model", "dimensions": 3,
				"text_hash": "x", "vector": vectorOf(tc.vector...)})
			s.push(t, aliceKey, agent, created, embedded).invalid(t, "events[1].payload.vector")
			if n := s.streamLength(t, alice, agent); n != 0 {
				t.Errorf("the refused push appended %d events", n)
			}
		})
	}
}

// TestSyncPushAcceptsOnlyCanonicalEventIDs: one UUID has one spelling,
// so the same event cannot be appended once per spelling.
func TestSyncPushAcceptsOnlyCanonicalEventIDs(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	id := uuid.New()
	canonical := id.String()
	for _, tc := range []struct{ name, id string }{
		{"upper case", strings.ToUpper(canonical)},
		{"urn prefix", "urn:uuid:" + canonical},
		{"braces", "{" + canonical + "}"},
		{"32 hex digits", strings.ReplaceAll(canonical, "-", "")},
		{"nil UUID", uuid.Nil.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := pushedNote("spelled " + tc.name)
			ev.ID = tc.id
			s.push(t, aliceKey, "ids", ev).invalid(t, "events[0].id")
		})
	}
	if n := s.streamLength(t, alice, "ids"); n != 0 {
		t.Fatalf("refused ids appended %d events", n)
	}
	ev := pushedNote("spelled canonically")
	ev.ID = canonical
	s.push(t, aliceKey, "ids", ev).must(t, http.StatusOK, nil)
	// A memory id is held to the same form.
	bad := syncEvent("MemoryCreated", map[string]any{"memory_id": strings.ToUpper(uuid.NewString()), "type": "note", "content": map[string]any{"content": "x"}})
	s.push(t, aliceKey, "ids", bad).invalid(t, "events[0].payload.memory_id")
}

// TestSyncPushOfAnotherTenantsEventIDSaysNothingOfIt: an event id taken
// in another user's log gets the answer any taken id gets, without
// saying where it is taken.
func TestSyncPushOfAnotherTenantsEventIDSaysNothingOfIt(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	ev := pushedNote("bob's")
	s.push(t, bobKey, "b", ev).must(t, http.StatusOK, nil)

	theirs := pushedNote("alice's")
	theirs.ID = ev.ID
	acrossTenants := s.push(t, aliceKey, "a", theirs)
	wantError(t, acrossTenants, http.StatusConflict, "event_conflict")

	// The same id twice in one push, as two different events.
	first, second := pushedNote("one"), pushedNote("two")
	second.ID = first.ID
	withinPush := s.push(t, aliceKey, "a", first, second)
	wantError(t, withinPush, http.StatusConflict, "event_conflict")

	for _, r := range []response{acrossTenants, withinPush} {
		msg := strings.ReplaceAll(r.errorMessage(), first.ID, ev.ID)
		msg = strings.Replace(msg, "events[1]", "events[0]", 1)
		if msg != acrossTenants.errorMessage() {
			t.Errorf("the answers differ:\n%s\n%s", acrossTenants.errorMessage(), r.errorMessage())
		}
		if strings.Contains(r.errorMessage(), "another log") || strings.Contains(r.errorMessage(), "account") {
			t.Errorf("the answer tells where the id is taken: %s", r.errorMessage())
		}
	}
}

// TestSyncPullCursorBounds: a cursor past what a stream can hold is a
// 400, and a cursor past the end reports the stream's real head.
func TestSyncPullCursorBounds(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.push(t, aliceKey, "a", pushedNote("one"), pushedNote("two")).must(t, http.StatusOK, nil)
	head := s.streamLength(t, alice, "a")
	for _, after := range []string{"9223372036854775808", "18446744073709551615"} {
		s.request(t, "GET", "/v1/sync/events?agent_id=a&after="+after, aliceKey, nil).invalid(t, "after")
	}
	for _, after := range []int{0, head, head + 5, 1 << 40} {
		var page commands.SyncPage
		s.request(t, "GET", fmt.Sprintf("/v1/sync/events?agent_id=a&after=%d", after), aliceKey, nil).must(t, http.StatusOK, &page)
		if page.Head != uint64(head) {
			t.Errorf("after=%d: head %d, want %d", after, page.Head, head)
		}
	}
}

// TestSyncPullOfAnUnknownAgent: pulling an agent the caller does not have
// (none of that name, or another user's) is 404 not_found, alike, so a
// pull tells nothing of other tenants.
func TestSyncPullOfAnUnknownAgent(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.push(t, bobKey, "b", pushedNote("bob's")).must(t, http.StatusOK, nil)
	for _, agent := range []string{"nobody", "b"} {
		r := s.request(t, "GET", "/v1/sync/events?agent_id="+agent, aliceKey, nil)
		if r.status != http.StatusNotFound || r.errorCode() != "not_found" {
			t.Errorf("agent %s: %d %s, want 404 not_found", agent, r.status, r.raw)
		}
	}
}

// TestSyncConcurrentPushesOfOneMemoryID: two users pushing the same
// memory id at once over HTTP: exactly one push wins, the other gets 409
// memory_exists, and the memory exists once.
func TestSyncConcurrentPushesOfOneMemoryID(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{fixedAuth: true}, testSyncConcurrentPushesOfOneMemoryID)
}

func testSyncConcurrentPushesOfOneMemoryID(t *testing.T, s *stack) {
	const rounds = 40
	var bothWon atomic.Int32
	for round := range rounds {
		memoryID := uuid.NewString()
		statuses := make([]int, 2)
		codes := make([]string, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, key := range []string{aliceKey, bobKey} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev := syncEvent("MemoryCreated", map[string]any{"memory_id": memoryID, "type": "note", "content": map[string]any{"content": "race " + key}})
				<-start
				r := s.push(t, key, fmt.Sprintf("race-%d", round), ev)
				statuses[i], codes[i] = r.status, r.errorCode()
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for i := range statuses {
			switch {
			case statuses[i] == http.StatusOK:
				won++
			case statuses[i] != http.StatusConflict || codes[i] != "memory_exists":
				t.Fatalf("round %d: push answered %d %s, want 200 or 409 memory_exists", round, statuses[i], codes[i])
			}
		}
		if won != 1 {
			bothWon.Add(1)
			t.Errorf("round %d: %d pushes won, want exactly 1 (%v)", round, won, statuses)
		}
	}
	if n := bothWon.Load(); n > 0 {
		t.Errorf("%d of %d rounds did not have exactly one winner", n, rounds)
	}
}

// TestSyncConcurrentPushesToOneAgentAllLand: pushes to one agent at once
// decide again when another came first, and every one of them lands.
func TestSyncConcurrentPushesToOneAgentAllLand(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	const pushes, perPush = 8, 10
	statuses := make([]int, pushes)
	var wg sync.WaitGroup
	for i := range pushes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var evs []commands.SyncEvent
			for j := range perPush {
				evs = append(evs, pushedNote(fmt.Sprintf("push %d note %d", i, j)))
			}
			statuses[i] = s.push(t, aliceKey, "shared", evs...).status
		}()
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK {
			t.Errorf("push %d answered %d", i, st)
		}
	}
	if got := len(s.listAll(t, aliceKey, "agent_id=shared", 100)); got != pushes*perPush {
		t.Fatalf("the agent holds %d memories, want %d", got, pushes*perPush)
	}
}

// TestSyncPushOfPartOfTheSettingsTakesTheDefaults: a pushed settings event
// that leaves settings out (as an engram older than them wrote it) or
// sends them as null stands for the defaults, down to each field of
// lint_rules, not for Go's zero values (lint off, decay off, gates of 0);
// the settings read back are the same after a replay of the log.
func TestSyncPushOfPartOfTheSettingsTakesTheDefaults(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true})
	s.push(t, aliceKey, "a", pushedNote("the agent exists"), syncEvent("StackSettingsChanged", map[string]any{"settings": map[string]any{
		"stack_state": "active", "lazy_decay": nil, "lint_rules": map[string]any{"min_length": 5}}})).must(t, http.StatusOK, nil)
	want := agentsettings.Defaults()
	want.StackState, want.LintRules.MinLength = agentsettings.Active, 5
	read := func() agentsettings.Settings {
		var v agentsettings.View
		s.request(t, "GET", "/v1/agents/a/settings", aliceKey, nil).must(t, http.StatusOK, &v)
		return v.Settings
	}
	if got := read(); got != want {
		t.Fatalf("settings after the push = %+v, want %+v", got, want)
	}
	s.stopEngine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.engine.Rebuild(ctx, projections.MemoriesProjectionName); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != want {
		t.Fatalf("settings after a replay = %+v, want %+v", got, want)
	}
}

package kurrentdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/kurrentdb"
)

// claimed is one event of payload n claiming keys.
func claimed(n int, keys ...string) []domain.NewEvent {
	e := event(n)
	e.ID = uuid.NewString()
	e.Claims = keys
	return []domain.NewEvent{e}
}

// TestClaimThenAppendJudgesAttemptsByTheLog: a claim is an attempt in the
// key's claim stream, judged by where its event lands. An attempt whose
// appender stopped before appending (as after a crash) holds its key
// against other streams only while its slot is empty: a retry into the
// same slot may take it, and once the stream moves on without the event
// the key is free. An append refused for one taken key withdraws its
// other attempts at once.
func TestClaimThenAppendJudgesAttemptsByTheLog(t *testing.T) {
	ctx := context.Background()
	cfg := target
	cfg.StreamPrefix = uniquePrefix()
	s := open(t, cfg)
	raw := plainClient(t, cfg)
	// An attempt for revision 0 of agent-a, whose event never came.
	stranded := fmt.Sprintf(`{"stream":"agent-a","revision":0,"event_id":%q}`, uuid.NewString())
	if _, err := raw.AppendToStream(ctx, cfg.StreamPrefix+"~claims.memory/m1", kdb.AppendToStreamOptions{StreamState: kdb.NoStream{}},
		kdb.EventData{EventID: uuid.New(), EventType: "ClaimAttempted", ContentType: kdb.ContentTypeJson, Data: []byte(stranded)}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		stream   string
		expected int64
		events   []domain.NewEvent
		taken    string
	}{
		{"another stream, while the slot is empty", "agent-b", domain.ExpectNoStream, claimed(1, "memory/m1"), "memory/m1"},
		{"the stranded slot itself moves on without it", "agent-a", domain.ExpectNoStream, []domain.NewEvent{event(2)}, ""},
		{"another stream, once the attempt is dead", "agent-b", domain.ExpectNoStream, claimed(3, "memory/m1"), ""},
		{"a free key beside a taken one", "agent-c", domain.ExpectNoStream, append(claimed(4, "memory/m2"), claimed(5, "memory/m1")...), "memory/m1"},
		{"the free key, from yet another stream", "agent-d", domain.ExpectNoStream, claimed(6, "memory/m2"), ""},
	}
	for _, st := range steps {
		_, err := s.Append(ctx, st.stream, st.expected, st.events)
		var taken *domain.ClaimTakenError
		switch {
		case st.taken == "" && err != nil:
			t.Fatalf("%s: %v", st.name, err)
		case st.taken != "" && (!errors.As(err, &taken) || taken.Key != st.taken):
			t.Fatalf("%s: err = %v, want the claim of %s refused", st.name, err, st.taken)
		}
	}
	// A stranded attempt does not hold its key against the retry of its
	// own slot.
	retryCfg := cfg
	retryCfg.StreamPrefix = uniquePrefix()
	s2 := open(t, retryCfg)
	raw2 := plainClient(t, retryCfg)
	if _, err := raw2.AppendToStream(ctx, retryCfg.StreamPrefix+"~claims.memory/m9", kdb.AppendToStreamOptions{StreamState: kdb.NoStream{}},
		kdb.EventData{EventID: uuid.New(), EventType: "ClaimAttempted", ContentType: kdb.ContentTypeJson, Data: []byte(stranded)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Append(ctx, "agent-a", domain.ExpectNoStream, claimed(7, "memory/m9")); err != nil {
		t.Fatalf("the retry into the stranded attempt's slot: %v", err)
	}
	// Claim streams stay out of Engram's log.
	for _, store := range []*kurrentdb.EventStore{s, s2} {
		all, err := store.ReadAll(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			if e.Type != "TestHappened" {
				t.Fatalf("ReadAll returned a %s of %s: claim records are not Engram events", e.Type, e.Stream)
			}
		}
	}
}

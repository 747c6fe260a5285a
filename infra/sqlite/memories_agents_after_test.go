package sqlite_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/engram-memory/engram/domain/memory"
)

// AgentsAfter pages through every user's agents in (user, agent) order:
// no agent repeats or is skipped across a user boundary, and a deleted
// agent is gone.
func TestAgentsAfterPagesAcrossUsers(t *testing.T) {
	l := newMemLog(t)
	refs := []memory.AgentRef{
		{UserID: "user-a", AgentID: "a1"}, {UserID: "user-a", AgentID: "b2"}, {UserID: "user-a", AgentID: "c3"},
		{UserID: "user-b", AgentID: "a1"}, {UserID: "user-c", AgentID: "z9"},
	}
	for _, r := range refs {
		l.append(r, memAgentCreated(r, "m1", 4))
	}
	var got []memory.AgentRef
	var after memory.AgentRef
	for {
		page, err := l.rm.AgentsAfter(context.Background(), after, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1]
	}
	if !reflect.DeepEqual(got, refs) {
		t.Fatalf("pages: %v, want %v", got, refs)
	}
	l.append(refs[1], memory.AgentDeleted{AgentRef: refs[1]})
	page, err := l.rm.AgentsAfter(context.Background(), refs[0], 1)
	if err != nil || len(page) != 1 || page[0] != refs[2] {
		t.Errorf("after deleting %v: %v %v", refs[1], page, err)
	}
}

package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

func TestCheckProvenanceRules(t *testing.T) {
	ref := func(t memory.Type) memory.Ref { return memory.Ref{Type: t, ID: "x"} }
	for _, tc := range []struct {
		typ  memory.Type
		refs []memory.Ref
		ok   bool
	}{
		{memory.RawEntry, nil, true},
		{memory.Playbook, nil, true},
		{memory.Episode, nil, false},
		{memory.Episode, []memory.Ref{ref(memory.RawEntry)}, true},
		{memory.Episode, []memory.Ref{ref(memory.Belief)}, false},
		{memory.Note, []memory.Ref{ref(memory.RawEntry)}, true},
		{memory.Note, []memory.Ref{ref(memory.Episode)}, false},
		{memory.Belief, []memory.Ref{ref(memory.Episode), ref(memory.Note)}, true},
		{memory.Belief, []memory.Ref{ref(memory.RawEntry)}, false},
		{memory.Belief, nil, false},
		{memory.Goal, []memory.Ref{ref(memory.Belief)}, true},
		{memory.Goal, []memory.Ref{ref(memory.Note)}, false},
		{memory.Relationship, []memory.Ref{ref(memory.Episode)}, true},
		{memory.Relationship, []memory.Ref{ref(memory.Belief)}, false},
		{memory.Value, []memory.Ref{ref(memory.Belief)}, true},
		{memory.Value, []memory.Ref{ref(memory.Episode)}, false},
		{memory.Drive, []memory.Ref{ref(memory.Episode)}, true},
		{memory.Drive, []memory.Ref{ref(memory.Belief), ref(memory.Note)}, false},
	} {
		err := memory.CheckProvenance("derived_from", tc.typ, tc.refs)
		if (err == nil) != tc.ok {
			t.Errorf("%s from %v: err = %v, want ok=%v", tc.typ, tc.refs, err, tc.ok)
			continue
		}
		if err != nil {
			de, _ := domain.AsError(err)
			if de.PublicCode() != memory.CodeProvenanceViolation || de.Kind != domain.KindInvalid {
				t.Errorf("%s: error %v, want invalid_request with code %s", tc.typ, err, memory.CodeProvenanceViolation)
			}
		}
	}
}

// graph is a provenance relation for the tree tests: id -> neighbours.
type graph map[string][]string

func (g graph) next(calls *int) memory.Neighbours {
	return func(_ context.Context, ids []string) (map[string][]memory.Ref, error) {
		*calls++
		out := map[string][]memory.Ref{}
		for _, id := range ids {
			for _, n := range g[id] {
				out[id] = append(out[id], memory.Ref{Type: memory.Note, ID: n})
			}
		}
		return out, nil
	}
}

// shape renders a tree compactly: id(children) with markers.
func shape(n *memory.ProvenanceNode) string {
	s := n.ID
	if n.Cycle {
		s += "!cycle"
	}
	if n.Truncated {
		s += "!cut"
	}
	if len(n.Nodes) > 0 {
		s += "("
		for i, c := range n.Nodes {
			if i > 0 {
				s += " "
			}
			s += shape(c)
		}
		s += ")"
	}
	return s
}

func TestBuildProvenanceTree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     graph
		depth int
		want  string
		calls int
	}{
		{"leaf", graph{}, 10, "a", 1},
		{"chain", graph{"a": {"b"}, "b": {"c"}}, 10, "a(b(c))", 3},
		{"depth limit marks the cut", graph{"a": {"b"}, "b": {"c"}, "c": {"d"}}, 2, "a(b(c!cut))", 3},
		{"depth exactly enough", graph{"a": {"b"}, "b": {"c"}}, 2, "a(b(c))", 3},
		{"diamond shows the shared ancestor twice", graph{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}, 10, "a(b(d) c(d))", 3},
		{"self loop", graph{"a": {"a"}}, 10, "a(a!cycle)", 1},
		{"two-step cycle", graph{"a": {"b"}, "b": {"a"}}, 10, "a(b(a!cycle))", 2},
		{"cycle below the root", graph{"a": {"b"}, "b": {"c"}, "c": {"b"}}, 10, "a(b(c(b!cycle)))", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			tree, err := memory.BuildProvenanceTree(context.Background(), memory.Ref{Type: memory.Note, ID: "a"}, tc.depth, tc.g.next(&calls))
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(tree); got != tc.want {
				t.Fatalf("tree = %s, want %s", got, tc.want)
			}
			if calls != tc.calls {
				t.Fatalf("%d neighbour queries, want one per level (%d)", calls, tc.calls)
			}
		})
	}
}

func TestBuildProvenanceTreeNodeLimit(t *testing.T) {
	// Every level doubles: a full binary lineage of depth 20 would be 2^21
	// nodes; the tree stops at MaxProvenanceNodes.
	next := func(_ context.Context, ids []string) (map[string][]memory.Ref, error) {
		out := map[string][]memory.Ref{}
		for _, id := range ids {
			out[id] = []memory.Ref{{Type: memory.Note, ID: id + "0"}, {Type: memory.Note, ID: id + "1"}}
		}
		return out, nil
	}
	tree, err := memory.BuildProvenanceTree(context.Background(), memory.Ref{Type: memory.Note, ID: "r"}, 20, next)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tree)
	var count func(n *memory.ProvenanceNode) int
	count = func(n *memory.ProvenanceNode) int {
		c := 1
		for _, k := range n.Nodes {
			c += count(k)
		}
		return c
	}
	if n := count(tree); n != memory.MaxProvenanceNodes {
		t.Fatalf("%d nodes (%d bytes of JSON), want the limit %d", n, len(b), memory.MaxProvenanceNodes)
	}
}

func TestBuildProvenanceTreeError(t *testing.T) {
	boom := errors.New("boom")
	_, err := memory.BuildProvenanceTree(context.Background(), memory.Ref{Type: memory.Note, ID: "a"}, 3,
		func(context.Context, []string) (map[string][]memory.Ref, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the neighbour query's error", err)
	}
}

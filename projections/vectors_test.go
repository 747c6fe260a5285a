package projections_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
)

// vectorRig runs the vector projection alone over a real SQLite store and
// event log, fed by events appended directly.
type vectorRig struct {
	t      *testing.T
	db     *sqlite.DB
	writer *commands.EventWriter
	index  *vectorindex.Index
	port   *vectorindex.Port
	proj   *projections.Vectors
	ref    memory.AgentRef
}

func newVectorRig(t *testing.T) *vectorRig {
	db, err := sqlite.Open(context.Background(), sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := sqlite.NewEventStore(db, 10*time.Millisecond)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &vectorRig{t: t, db: db, index: vectorindex.New(vectorindex.Options{}), ref: memory.AgentRef{UserID: "u1", AgentID: "a"}}
	r.port = vectorindex.NewPort(r.index)
	r.proj = projections.NewVectors(sqlite.NewVectorStore(db), r.port, true, logger)
	engine := projections.NewEngine(store, logger, r.proj)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); engine.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; r.index.Close() })
	r.writer = commands.NewEventWriter(store, engine, 0)
	return r
}

func (r *vectorRig) append(payloads ...domain.Payload) {
	r.t.Helper()
	meta := domain.Metadata{Actor: domain.Actor{Kind: domain.ActorSystem, ID: "test"}}
	if _, err := r.writer.Append(context.Background(), memory.AgentStream(r.ref.UserID, r.ref.AgentID), domain.ExpectAny, meta, payloads...); err != nil {
		r.t.Fatal(err)
	}
}

func (r *vectorRig) created(id, hash string) *memory.MemoryCreated {
	content, _ := json.Marshal(map[string]string{"content": id})
	return &memory.MemoryCreated{AgentRef: r.ref, MemoryID: id, Type: memory.Note, Content: content, TextHash: hash, CreatedAt: time.Unix(1700000000, 0).UTC()}
}

func (r *vectorRig) embedded(id, model, hash string, v ...float32) *memory.MemoryEmbedded {
	return &memory.MemoryEmbedded{AgentRef: r.ref, MemoryID: id, Model: model, Dimensions: len(v), TextHash: hash, Vector: v}
}

// hits searches the agent's active space with q.
func (r *vectorRig) hits(q ...float32) (domain.VectorSpace, []string) {
	r.t.Helper()
	sp, ok := r.proj.AgentSpace(r.ref.UserID, r.ref.AgentID)
	if !ok {
		return sp, nil
	}
	scope := domain.IndexScope{UserID: r.ref.UserID, AgentID: r.ref.AgentID}
	hs, err := r.port.SearchVectors(context.Background(), domain.VectorQuery{Scope: scope, Space: sp, Vector: q, Limit: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.MemoryID)
	}
	slices.Sort(out)
	return sp, out
}

func TestVectorProjectionModelSwitchAndStaleVectors(t *testing.T) {
	r := newVectorRig(t)
	r.append(&memory.AgentCreated{AgentRef: r.ref, EmbeddingModel: "m-a", Dimensions: 2},
		&memory.AgentCreated{AgentRef: r.ref, EmbeddingModel: "ignored", Dimensions: 9}, // a racing second create changes nothing
		r.created("x", "hx"), r.created("y", "hy"), r.created("z", "hz"),
		r.embedded("x", "m-a", "hx", 1, 0), r.embedded("y", "m-a", "hy", 0, 1),
		r.embedded("z", "m-a", "stale", 1, 1)) // not of z's current text
	if sp, got := r.hits(1, 0); sp.Model != "m-a" || sp.Dimensions != 2 || !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("space %+v hits %v", sp, got)
	}

	// A re-embedding job writes m-b vectors: kept aside, m-a still serves.
	r.append(r.embedded("x", "m-b", "hx", 1, 0, 0), r.embedded("y", "m-b", "hy", 0, 1, 0), r.embedded("z", "m-b", "hz", 0, 0, 1))
	if sp, got := r.hits(1, 0); sp.Model != "m-a" || len(got) != 2 {
		t.Fatalf("during the job: space %+v hits %v", sp, got)
	}
	if n := len(r.index.Collections("u1/a/")); n != 2 {
		t.Fatalf("want the active and the job's collection, have %d", n)
	}

	// The switch makes m-b active and drops m-a.
	r.append(&memory.AgentModelSwitched{AgentRef: r.ref, Model: "m-b", Dimensions: 3})
	if sp, got := r.hits(1, 0, 0); sp.Model != "m-b" || !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("after the switch: space %+v hits %v", sp, got)
	}
	if cols := r.index.Collections("u1/a/"); len(cols) != 1 {
		t.Fatalf("old model's collection not dropped: %v", cols)
	}

	// An update to a new text removes the vector until the new text's
	// vector arrives; forgetting removes it for good.
	upd := &memory.MemoryUpdated{AgentRef: r.ref, MemoryID: "x", Content: json.RawMessage(`{"content":"x2"}`), TextHash: "hx2"}
	r.append(upd)
	if _, got := r.hits(1, 0, 0); !slices.Equal(got, []string{"y", "z"}) {
		t.Fatalf("after the update: %v", got)
	}
	r.append(r.embedded("x", "m-b", "hx2", 1, 1, 0), &memory.MemoryForgotten{AgentRef: r.ref, MemoryID: "y"},
		r.embedded("y", "m-b", "hy", 0, 1, 0))
	if _, got := r.hits(1, 0, 0); !slices.Equal(got, []string{"x", "z"}) {
		t.Fatalf("after re-embedding x and forgetting y: %v", got)
	}
	r.append(&memory.MemoryPurged{AgentRef: r.ref, MemoryID: "z"})
	if _, got := r.hits(1, 0, 0); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("after purging z: %v", got)
	}

	// A fresh projection over the same store loads exactly this state.
	fresh := vectorindex.New(vectorindex.Options{})
	defer fresh.Close()
	freshPort := vectorindex.NewPort(fresh)
	p2 := projections.NewVectors(sqlite.NewVectorStore(r.db), freshPort, true, nil)
	if err := p2.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	sp, ok := p2.AgentSpace("u1", "a")
	n, err := freshPort.CountVectors(context.Background(), domain.IndexScope{UserID: "u1", AgentID: "a"}, sp)
	if err != nil || !ok || sp.Model != "m-b" || n != 1 || len(fresh.Collections("")) != 1 {
		t.Fatalf("reloaded: %+v %v (%d vectors, %v), collections %v", sp, ok, n, err, fresh.Collections(""))
	}

	r.append(&memory.AgentDeleted{AgentRef: r.ref})
	if _, ok := r.proj.AgentSpace("u1", "a"); ok || len(r.index.Collections("")) != 0 {
		t.Fatalf("agent delete left state: %v", r.index.Collections(""))
	}
	// Memory events of the deleted agent are ignored until it exists again.
	r.append(r.created("w", "hw"), r.embedded("w", "m-b", "hw", 1, 0, 0))
	if len(r.index.Collections("")) != 0 {
		t.Fatalf("a memory of a deleted agent was indexed")
	}
}

// On a node without the vector projection's lease, Follow brings the
// agents' spaces (which searches check) up to the shared state another
// node applies: created, switched and deleted agents show after it.
func TestVectorsFollowTheSharedState(t *testing.T) {
	r := newVectorRig(t)
	follower := projections.NewVectors(sqlite.NewVectorStore(r.db), r.port, false, nil)
	follow := func(want domain.VectorSpace, exists bool) {
		t.Helper()
		pos, err := follower.Follow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		applied, _ := r.proj.Position(context.Background())
		if pos != applied {
			t.Fatalf("Follow returned checkpoint %d, want the applied %d", pos, applied)
		}
		if got, ok := follower.AgentSpace(r.ref.UserID, r.ref.AgentID); ok != exists || got != want {
			t.Fatalf("followed agent space = %v, %v; want %v, %v", got, ok, want, exists)
		}
	}
	follow(domain.VectorSpace{}, false)
	r.append(&memory.AgentCreated{AgentRef: r.ref, EmbeddingModel: "m-a", Dimensions: 2})
	follow(domain.VectorSpace{Model: "m-a", Dimensions: 2}, true)
	r.append(&memory.AgentModelSwitched{AgentRef: r.ref, Model: "m-b", Dimensions: 3})
	follow(domain.VectorSpace{Model: "m-b", Dimensions: 3}, true)
	r.append(&memory.AgentDeleted{AgentRef: r.ref})
	follow(domain.VectorSpace{}, false)
}

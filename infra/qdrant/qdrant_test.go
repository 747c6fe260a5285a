package qdrant_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qdrant/go-client/qdrant"

	"github.com/engram-memory/engram/domain"
	engramqdrant "github.com/engram-memory/engram/infra/qdrant"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
	"github.com/engram-memory/engram/infra/vectorindextest"
)

const testKey = "test-api-key"

var (
	alice = domain.IndexScope{UserID: "u-alice", AgentID: "claire"}
	space = domain.VectorSpace{Model: "model-a", Dimensions: 4}
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func open(t *testing.T, cfg engramqdrant.Config) *engramqdrant.Index {
	t.Helper()
	ix, err := engramqdrant.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestConformanceAgainstTestServer(t *testing.T) {
	vectorindextest.Run(t, vectorindextest.Target{
		Open: func(t *testing.T) domain.VectorIndex {
			srv := qdranttest.Start(t, testKey)
			return open(t, engramqdrant.Config{URL: srv.Addr, APIKey: testKey})
		},
		Unreachable: func(t *testing.T) domain.VectorIndex {
			return open(t, engramqdrant.Config{URL: closedAddr(t), Timeout: 2 * time.Second})
		},
	})
}

var realPrefixSeq atomic.Int64

// TestConformanceAgainstRealServer runs the suite against a real Qdrant,
// each subtest in collections of its own prefix, dropped afterwards.
func TestConformanceAgainstRealServer(t *testing.T) {
	url := os.Getenv("ENGRAM_TEST_QDRANT_URL")
	if url == "" {
		t.Skip("set ENGRAM_TEST_QDRANT_URL (host:6334 or http(s)://host:6334, gRPC) and ENGRAM_TEST_QDRANT_API_KEY to run the suite against a real Qdrant")
	}
	key := os.Getenv("ENGRAM_TEST_QDRANT_API_KEY")
	vectorindextest.Run(t, vectorindextest.Target{
		Open: func(t *testing.T) domain.VectorIndex {
			prefix := fmt.Sprintf("engramtest-%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, realPrefixSeq.Add(1))
			ix := open(t, engramqdrant.Config{URL: url, APIKey: key, CollectionPrefix: prefix})
			t.Cleanup(func() {
				if err := ix.DropAll(context.Background()); err != nil {
					t.Errorf("dropping the test collections: %v", err)
				}
			})
			return ix
		},
		Unreachable: func(t *testing.T) domain.VectorIndex {
			return open(t, engramqdrant.Config{URL: closedAddr(t), Timeout: 2 * time.Second})
		},
	})
}

func TestWrongAPIKeyIsUnavailable(t *testing.T) {
	srv := qdranttest.Start(t, testKey)
	for _, key := range []string{"", "wrong-key"} {
		ix := open(t, engramqdrant.Config{URL: srv.Addr, APIKey: key})
		if err := ix.Ready(context.Background()); !errors.Is(err, domain.ErrIndexUnavailable) {
			t.Errorf("Ready with key %q: %v, want ErrIndexUnavailable", key, err)
		}
		err := ix.UpsertVectors(context.Background(), domain.VectorPoint{
			MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Vector: []float32{1, 0, 0, 0},
		})
		if !errors.Is(err, domain.ErrIndexUnavailable) {
			t.Errorf("UpsertVectors with key %q: %v, want ErrIndexUnavailable", key, err)
		}
	}
	if got := srv.Collections(); len(got) != 0 {
		t.Fatalf("a refused key created collections %v", got)
	}
}

// TestCollectionLayout: one collection per space, with the payload and its
// indexes the filters need; the point id is derived from the memory.
func TestCollectionLayout(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ix := open(t, engramqdrant.Config{URL: srv.Addr, CollectionPrefix: "eng"})
	ctx := context.Background()
	err := ix.UpsertVectors(ctx,
		domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, TextHash: "h1",
			Type: "note", Tags: []string{"a", "b"}, CreatedAt: t0.Add(1500 * time.Microsecond), Vector: []float32{1, 0, 0, 0}},
		domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: domain.VectorSpace{Model: "OpenAI/text-3", Dimensions: 3},
			TextHash: "h1", Type: "note", CreatedAt: t0, Vector: []float32{1, 0, 0}},
	)
	if err != nil {
		t.Fatal(err)
	}
	other := ix.CollectionName(domain.VectorSpace{Model: "OpenAI/text-3", Dimensions: 3})
	if want := []string{"eng_model-a_4", other}; !slices.Equal(srv.Collections(), want) {
		t.Fatalf("collections %v, want %v", srv.Collections(), want)
	}
	wantIndexes := map[string]qdrant.FieldType{
		"user": qdrant.FieldType_FieldTypeKeyword, "agent": qdrant.FieldType_FieldTypeKeyword,
		"memory_id": qdrant.FieldType_FieldTypeKeyword, "type": qdrant.FieldType_FieldTypeKeyword,
		"tags": qdrant.FieldType_FieldTypeKeyword, "created_at": qdrant.FieldType_FieldTypeInteger,
		"forgotten": qdrant.FieldType_FieldTypeBool,
	}
	for _, c := range srv.Collections() {
		got := srv.FieldIndexes(c)
		if len(got) != len(wantIndexes) {
			t.Fatalf("indexes of %s: %v, want %v", c, got, wantIndexes)
		}
		for k, v := range wantIndexes {
			if got[k] != v {
				t.Fatalf("index %s of %s: %v, want %v", k, c, got[k], v)
			}
		}
	}
	payload := srv.Payload("eng_model-a_4", engramqdrant.PointID(alice.UserID, alice.AgentID, "m1"))
	if payload == nil {
		t.Fatal("no point under the derived id")
	}
	for key, want := range map[string]string{"user": alice.UserID, "agent": alice.AgentID, "memory_id": "m1", "type": "note", "text_hash": "h1"} {
		if got := payload[key].GetStringValue(); got != want {
			t.Errorf("payload %s = %q, want %q", key, got, want)
		}
	}
	if got := payload["created_at"].GetIntegerValue(); got != t0.UnixMilli()+1 {
		t.Errorf("payload created_at = %d, want Unix ms %d", got, t0.UnixMilli()+1)
	}
	if payload["forgotten"].GetKind() == nil || payload["forgotten"].GetBoolValue() {
		t.Errorf("payload forgotten = %v, want false", payload["forgotten"])
	}
	if tags := payload["tags"].GetListValue().GetValues(); len(tags) != 2 || tags[0].GetStringValue() != "a" || tags[1].GetStringValue() != "b" {
		t.Errorf("payload tags = %v", payload["tags"])
	}
}

func TestCollectionNames(t *testing.T) {
	ix := open(t, engramqdrant.Config{URL: "127.0.0.1:1"})
	for _, c := range []struct {
		space domain.VectorSpace
		want  string
	}{
		{domain.VectorSpace{Model: "glove-sif-100", Dimensions: 100}, "engram_glove-sif-100_100"},
		{domain.VectorSpace{Model: "text-embedding-3.small", Dimensions: 1536}, "engram_text-embedding-3.small_1536"},
	} {
		if got := ix.CollectionName(c.space); got != c.want {
			t.Errorf("CollectionName(%+v) = %q, want %q", c.space, got, c.want)
		}
	}
	// Models that sanitise alike still get collections of their own, and
	// a long model name still makes a name Qdrant accepts (<= 255 bytes).
	long := strings.Repeat("m", 300)
	names := map[string]bool{}
	for _, m := range []string{"org/model", "org_model", "ORG/MODEL", "", "org-model", long, long + "x"} {
		name := ix.CollectionName(domain.VectorSpace{Model: m, Dimensions: 8})
		if len(name) > 255 {
			t.Errorf("collection name of %d bytes for model %.20q...", len(name), m)
		}
		names[name] = true
	}
	if len(names) != 7 {
		t.Fatalf("distinct models share collections: %v", names)
	}
}

// TestDropAllKeepsOtherPrefixes: DropAll deletes this prefix's collections
// and no other deployment's sharing the server.
func TestDropAllKeepsOtherPrefixes(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ctx := context.Background()
	mine := open(t, engramqdrant.Config{URL: srv.Addr, CollectionPrefix: "engram"})
	theirs := open(t, engramqdrant.Config{URL: srv.Addr, CollectionPrefix: "engram-staging"})
	p := domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Vector: []float32{1, 0, 0, 0}}
	for _, ix := range []*engramqdrant.Index{mine, theirs} {
		if err := ix.UpsertVectors(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := mine.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := srv.Collections(); !slices.Equal(got, []string{"engram-staging_model-a_4"}) {
		t.Fatalf("after DropAll: %v", got)
	}
	// The dropped collection is created again on the next write.
	if err := mine.UpsertVectors(ctx, p); err != nil {
		t.Fatal(err)
	}
	if n, err := mine.CountVectors(ctx, alice, space); err != nil || n != 1 {
		t.Fatalf("count after re-creating: %d, %v", n, err)
	}
}

// TestCollectionDeletedElsewhere: a collection dropped by another Engram
// process (a rebuild) is created again rather than failing every write.
func TestCollectionDeletedElsewhere(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ctx := context.Background()
	ix := open(t, engramqdrant.Config{URL: srv.Addr})
	other := open(t, engramqdrant.Config{URL: srv.Addr})
	p := domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Vector: []float32{1, 0, 0, 0}}
	if err := ix.UpsertVectors(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := other.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.UpsertVectors(ctx, p); err != nil {
		t.Fatalf("upsert after the collection was dropped elsewhere: %v", err)
	}
	if len(srv.FieldIndexes("engram_model-a_4")) == 0 {
		t.Fatal("re-created collection has no payload indexes")
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		url    string
		prefix string
		ok     bool
	}{
		{"localhost:6334", "", true},
		{"localhost", "", true},
		{"http://qdrant:6334", "", true},
		{"https://qdrant.example.com", "", true},
		{"http://[::1]:6334/", "", true},
		{"", "", false},
		{"ftp://qdrant:6334", "", false},
		{"http://qdrant:6334/collections", "", false},
		{"qdrant:notaport", "", false},
		{"qdrant:70000", "", false},
		{"localhost:6334", "bad_prefix", false},
		{"localhost:6334", "bad/prefix", false},
	} {
		ix, err := engramqdrant.New(context.Background(), engramqdrant.Config{URL: c.url, CollectionPrefix: c.prefix})
		if (err == nil) != c.ok {
			t.Errorf("New(URL %q, prefix %q): err %v, want ok=%v", c.url, c.prefix, err, c.ok)
		}
		if ix != nil {
			_ = ix.Close()
		}
	}
}

// TestTimeFilterMillisecondBounds: created_at is stored in milliseconds; a
// bound inside a millisecond rounds up, so created_after stays inclusive
// and created_before exclusive at millisecond resolution.
func TestTimeFilterMillisecondBounds(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ix := open(t, engramqdrant.Config{URL: srv.Addr})
	ctx := context.Background()
	at := t0.Add(5 * time.Millisecond)
	if err := ix.UpsertVectors(ctx, domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, CreatedAt: at, Vector: []float32{1, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    domain.IndexFilter
		hit  bool
	}{
		{"after = created", domain.IndexFilter{CreatedAfter: at}, true},
		{"after inside the previous ms", domain.IndexFilter{CreatedAfter: at.Add(-500 * time.Microsecond)}, true},
		{"after inside the ms", domain.IndexFilter{CreatedAfter: at.Add(500 * time.Microsecond)}, false},
		{"before = created", domain.IndexFilter{CreatedBefore: at}, false},
		{"before inside the ms", domain.IndexFilter{CreatedBefore: at.Add(500 * time.Microsecond)}, true},
	} {
		hits, err := ix.SearchVectors(ctx, domain.VectorQuery{Scope: alice, Space: space, Vector: []float32{1, 0, 0, 0}, Limit: 5, Filter: c.f})
		if err != nil {
			t.Fatal(err)
		}
		if (len(hits) == 1) != c.hit {
			t.Errorf("%s: %d hits, want hit=%v", c.name, len(hits), c.hit)
		}
	}
}

func TestInvalidUTF8IsRejected(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ix := open(t, engramqdrant.Config{URL: srv.Addr})
	err := ix.UpsertVectors(context.Background(), domain.VectorPoint{
		MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Type: "note", Tags: []string{"\xff"}, Vector: []float32{1, 0, 0, 0},
	})
	if !errors.Is(err, domain.ErrIndexRejected) {
		t.Fatalf("invalid UTF-8 tag: %v, want ErrIndexRejected", err)
	}
}

// TestServerDownThenBack: while Qdrant is down every call fails with
// ErrIndexUnavailable (the projection retries, search answers 503); once
// it is back the same Index works again without being rebuilt.
func TestServerDownThenBack(t *testing.T) {
	srv := qdranttest.Start(t, testKey)
	ix := open(t, engramqdrant.Config{URL: srv.Addr, APIKey: testKey, Timeout: 2 * time.Second})
	ctx := context.Background()
	p := domain.VectorPoint{MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Vector: []float32{1, 0, 0, 0}}
	if err := ix.UpsertVectors(ctx, p); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := ix.UpsertVectors(ctx, p); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("upsert while down: %v, want ErrIndexUnavailable", err)
	}
	if _, err := ix.SearchVectors(ctx, domain.VectorQuery{Scope: alice, Space: space, Vector: []float32{1, 0, 0, 0}, Limit: 1}); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("search while down: %v, want ErrIndexUnavailable", err)
	}
	// The restarted server is empty: the write must create the collection
	// again although this Index created it before.
	qdranttest.StartOn(t, srv.Addr, testKey)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := ix.UpsertVectors(ctx, p)
		if err == nil {
			break
		}
		if !errors.Is(err, domain.ErrIndexUnavailable) || time.Now().After(deadline) {
			t.Fatalf("upsert after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	hits, err := ix.SearchVectors(ctx, domain.VectorQuery{Scope: alice, Space: space, Vector: []float32{1, 0, 0, 0}, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].MemoryID != "m1" {
		t.Fatalf("search after the restart: %v, %v", hits, err)
	}
}

// TestLargeBatchIsSplit: a projection batch of large vectors is more than
// one gRPC message may carry (4 MiB by default in gRPC servers); the
// adapter sends it in parts.
func TestLargeBatchIsSplit(t *testing.T) {
	srv := qdranttest.Start(t, "")
	ix := open(t, engramqdrant.Config{URL: srv.Addr})
	big := domain.VectorSpace{Model: "large", Dimensions: 1536}
	pts := make([]domain.VectorPoint, 1000) // about 6 MiB of vectors
	for i := range pts {
		v := make([]float32, big.Dimensions)
		v[i%big.Dimensions] = 1
		pts[i] = domain.VectorPoint{MemoryID: fmt.Sprintf("m%04d", i), UserID: alice.UserID, AgentID: alice.AgentID, Space: big, Vector: v}
	}
	if err := ix.UpsertVectors(context.Background(), pts...); err != nil {
		t.Fatal(err)
	}
	if n, err := ix.CountVectors(context.Background(), alice, big); err != nil || n != len(pts) {
		t.Fatalf("count %d, %v; want %d", n, err, len(pts))
	}
}

// TestServerVersion: the adapter needs Qdrant 1.12 or later; an older
// server that answers at start is refused by New, and one met later (down
// at start, or replaced) makes every call unavailable, saying why, rather
// than dropping every point as rejected.
func TestServerVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{"1.12.0", true}, {"1.17.1", true}, {"1.19.0-dev", true}, {"2.0.0", true},
		{"1.11.5", false}, {"1.9.0", false}, {"garbage", false},
	} {
		t.Run(c.version, func(t *testing.T) {
			srv := qdranttest.Start(t, "")
			srv.SetVersion(c.version)
			ix, err := engramqdrant.New(context.Background(), engramqdrant.Config{URL: srv.Addr})
			if c.ok {
				if err != nil {
					t.Fatalf("New against %s: %v", c.version, err)
				}
				ix.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), "1.12 or later") || !strings.Contains(err.Error(), c.version) {
				t.Fatalf("New against %s: %v, want an error asking for 1.12 or later", c.version, err)
			}
		})
	}
	t.Run("old server met after start", func(t *testing.T) {
		srv := qdranttest.Start(t, "")
		srv.Stop()
		ix := open(t, engramqdrant.Config{URL: srv.Addr})
		old := qdranttest.StartOn(t, srv.Addr, "")
		old.SetVersion("1.10.1")
		err := ix.UpsertVectors(context.Background(), domain.VectorPoint{
			MemoryID: "m1", UserID: alice.UserID, AgentID: alice.AgentID, Space: space, Vector: []float32{1, 0, 0, 0},
		})
		if !errors.Is(err, domain.ErrIndexUnavailable) || !strings.Contains(err.Error(), "1.12 or later") {
			t.Fatalf("UpsertVectors against 1.10.1: %v, want unavailable, asking for 1.12 or later", err)
		}
		if got := old.Collections(); len(got) != 0 {
			t.Fatalf("an unsupported server got collections %v", got)
		}
	})
}

package meilisearch_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/keywordindextest"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/meilisearch/meilitest"
	ms "github.com/meilisearch/meilisearch-go"
)

const testKey = "test-master-key"

// openTestServer starts a test server and an adapter on it.
func openTestServer(t *testing.T, opts meilitest.Options) (*meilisearch.Index, *meilitest.Server) {
	t.Helper()
	srv := meilitest.New(t, opts)
	ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, APIKey: opts.APIKey})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ix, srv
}

// downURL is the URL of a loopback port nothing listens on.
func downURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestConformanceAgainstTestServer(t *testing.T) {
	keywordindextest.Run(t, keywordindextest.Target{
		Open: func(t *testing.T) domain.KeywordIndex {
			ix, _ := openTestServer(t, meilitest.Options{APIKey: testKey})
			return ix
		},
		Unreachable: func(t *testing.T) domain.KeywordIndex {
			ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: downURL(t)})
			if err != nil {
				t.Fatalf("New against a down server must still return the index: %v", err)
			}
			return ix
		},
	})
}

// TestConformanceAgainstRealServer runs the suite against a real
// Meilisearch when ENGRAM_TEST_MEILISEARCH_URL is set (with
// ENGRAM_TEST_MEILISEARCH_API_KEY for a server with a master key), one
// fresh index per subtest, deleted afterwards. No server can be installed
// on the machines this was written on (docs/storage-engines.md#meilisearch).
func TestConformanceAgainstRealServer(t *testing.T) {
	url := os.Getenv("ENGRAM_TEST_MEILISEARCH_URL")
	if url == "" {
		t.Skip("ENGRAM_TEST_MEILISEARCH_URL not set: the suite ran against meilitest only")
	}
	key := os.Getenv("ENGRAM_TEST_MEILISEARCH_API_KEY")
	var n atomic.Int64
	keywordindextest.Run(t, keywordindextest.Target{
		Open: func(t *testing.T) domain.KeywordIndex {
			name := fmt.Sprintf("engram_test_%d_%d", os.Getpid(), n.Add(1))
			ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: url, APIKey: key, IndexName: name})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				opts := []ms.Option{}
				if key != "" {
					opts = append(opts, ms.WithAPIKey(key))
				}
				if info, err := ms.New(url, opts...).DeleteIndex(name); err == nil {
					_, _ = ms.New(url, opts...).WaitForTask(info.TaskUID, 0)
				}
			})
			return ix
		},
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  meilisearch.Config
		want string
	}{
		{"no URL", meilisearch.Config{}, "URL"},
		{"not http", meilisearch.Config{URL: "ftp://127.0.0.1:7700"}, "URL"},
		{"no host", meilisearch.Config{URL: "http://"}, "URL"},
		{"index name with a slash", meilisearch.Config{URL: "http://127.0.0.1:1", IndexName: "a/b"}, "index name"},
		{"index name too long", meilisearch.Config{URL: "http://127.0.0.1:1", IndexName: strings.Repeat("a", 401)}, "index name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := meilisearch.New(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New(%+v) = %v, want an error about %s", c.cfg, err, c.want)
			}
		})
	}
}

var (
	alice = domain.IndexScope{UserID: "u-alice", AgentID: "claire"}
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
)

func note(scope domain.IndexScope, id, text string, tags ...string) domain.KeywordDocument {
	return domain.KeywordDocument{MemoryID: id, UserID: scope.UserID, AgentID: scope.AgentID, Type: "note", Tags: tags, CreatedAt: t0, Text: text, TextHash: "h-" + id}
}

func searchIDs(t *testing.T, ix *meilisearch.Index, q domain.KeywordQuery) []string {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 10
	}
	hits, err := ix.SearchKeyword(context.Background(), q)
	if err != nil {
		t.Fatalf("SearchKeyword: %v", err)
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.MemoryID
	}
	return ids
}

func TestSettingsAndStoredDocument(t *testing.T) {
	ix, srv := openTestServer(t, meilitest.Options{APIKey: testKey})
	filterable, searchable, ok := srv.Settings(meilisearch.DefaultIndexName)
	if !ok {
		t.Fatalf("New did not create index %s", meilisearch.DefaultIndexName)
	}
	slices.Sort(filterable)
	if want := []string{"agent", "created_at", "forgotten", "id", "tags", "type", "user"}; !slices.Equal(filterable, want) {
		t.Fatalf("filterable = %v, want %v", filterable, want)
	}
	if want := []string{"text", "meta"}; !slices.Equal(searchable, want) {
		t.Fatalf("searchable = %v, want %v (text first)", searchable, want)
	}
	d := note(alice, "m1", "the text")
	d.Tags, d.Meta = nil, "speaker Ann"
	if err := ix.UpsertDocuments(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	got, ok := srv.Document(meilisearch.DefaultIndexName, "m1")
	if !ok {
		t.Fatal("document m1 not stored")
	}
	for field, want := range map[string]string{
		"id": `"m1"`, "user": `"u-alice"`, "agent": `"claire"`, "type": `"note"`, "tags": `[]`,
		"created_at": fmt.Sprint(t0.UnixNano()), "forgotten": `false`, "text": `"the text"`, "meta": `"speaker Ann"`, "text_hash": `"h-m1"`,
	} {
		if string(got[field]) != want {
			t.Errorf("stored %s = %s, want %s", field, got[field], want)
		}
	}
}

func TestMetadataIsSearchedAfterText(t *testing.T) {
	ix, _ := openTestServer(t, meilitest.Options{})
	inMeta := note(alice, "meta", "a walk in the park")
	inMeta.Meta = "heron"
	if err := ix.UpsertDocuments(context.Background(), inMeta, note(alice, "text", "a heron in the park")); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: "heron"}); !slices.Equal(got, []string{"text", "meta"}) {
		t.Fatalf("heron: %v, want the text match before the metadata match", got)
	}
}

// TestFilterValuesAreQuoted: ids and tags are quoted into filter strings,
// so a value cannot change the filter's meaning.
func TestFilterValuesAreQuoted(t *testing.T) {
	ix, _ := openTestServer(t, meilitest.Options{})
	odd := `say "hi" \o/`
	victim := domain.IndexScope{UserID: "u-victim", AgentID: "claire"}
	if err := ix.UpsertDocuments(context.Background(), note(alice, "a1", "lantern", odd), note(victim, "v1", "lantern")); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: "lantern", Filter: domain.IndexFilter{Tags: []string{odd}}}); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("tag %q: %v, want [a1]", odd, got)
	}
	injected := domain.IndexScope{UserID: `x" OR user = "u-victim`, AgentID: "claire"}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: injected, Text: "lantern"}); len(got) != 0 {
		t.Fatalf("a user id holding filter syntax saw %v", got)
	}
	if err := ix.DeleteAgent(context.Background(), injected); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: victim, Text: "lantern"}); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("victim's memories after an injected agent delete: %v", got)
	}
}

func TestUnusableIDsAreRejectedOthersStored(t *testing.T) {
	ix, _ := openTestServer(t, meilitest.Options{})
	err := ix.UpsertDocuments(context.Background(), note(alice, "ok-1", "otter"), note(alice, "bad/id", "otter"), note(alice, strings.Repeat("x", 512), "otter"))
	if !errors.Is(err, domain.ErrIndexRejected) || !strings.Contains(err.Error(), `"bad/id"`) {
		t.Fatalf("UpsertDocuments with unusable ids: %v, want ErrIndexRejected naming them", err)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: "otter"}); !slices.Equal(got, []string{"ok-1"}) {
		t.Fatalf("otter: %v, want the usable document stored", got)
	}
}

func TestLargeBatchesAreSplitAndAllWaitedFor(t *testing.T) {
	ix, srv := openTestServer(t, meilitest.Options{})
	docs := make([]domain.KeywordDocument, 2500)
	for i := range docs {
		docs[i] = note(alice, fmt.Sprintf("d%04d", i), "bulk")
	}
	if err := ix.UpsertDocuments(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d0000", "d0999", "d1000", "d2499"} {
		if _, ok := srv.Document(meilisearch.DefaultIndexName, id); !ok {
			t.Fatalf("%s not stored when UpsertDocuments returned", id)
		}
	}
}

// TestOnlyTheFirstTenQueryWordsCount: Meilisearch considers ten query
// words; the adapter sends no more, so the eleventh matches nothing.
func TestOnlyTheFirstTenQueryWordsCount(t *testing.T) {
	ix, _ := openTestServer(t, meilitest.Options{})
	if err := ix.UpsertDocuments(context.Background(), note(alice, "tenth", "w10"), note(alice, "eleventh", "w11")); err != nil {
		t.Fatal(err)
	}
	q := "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11"
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: q}); !slices.Equal(got, []string{"tenth"}) {
		t.Fatalf("%q: %v, want [tenth]", q, got)
	}
}

func TestAPIKeyRefusedAtStart(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{APIKey: testKey})
	for name, key := range map[string]string{"wrong key": "nope", "no key": ""} {
		t.Run(name, func(t *testing.T) {
			_, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, APIKey: key})
			if err == nil || !strings.Contains(err.Error(), "ENGRAM_MEILISEARCH_API_KEY") {
				t.Fatalf("New with %s: %v, want an error naming ENGRAM_MEILISEARCH_API_KEY", name, err)
			}
		})
	}
}

func TestServerGoingDownMakesOperationsUnavailable(t *testing.T) {
	ix, srv := openTestServer(t, meilitest.Options{})
	if err := ix.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	srv.Close()
	if err := ix.Ready(context.Background()); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("Ready after the server went down: %v", err)
	}
	if _, err := ix.SearchKeyword(context.Background(), domain.KeywordQuery{Scope: alice, Text: "x", Limit: 1}); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("search after the server went down: %v", err)
	}
	if err := ix.UpsertDocuments(context.Background(), note(alice, "m1", "x")); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("write after the server went down: %v", err)
	}
}

// TestHangingServerTimesOut: a server that accepts connections but never
// answers fails each request after HTTPTimeout, as unavailable.
func TestHangingServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	start := time.Now()
	ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: hang.URL, HTTPTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("New against a hanging server must return the index: %v", err)
	}
	if err := ix.Ready(context.Background()); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("Ready: %v, want ErrIndexUnavailable", err)
	}
	if _, err := ix.SearchKeyword(context.Background(), domain.KeywordQuery{Scope: alice, Text: "x", Limit: 1}); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("search: %v, want ErrIndexUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("three requests took %v with a 100ms timeout", took)
	}
}

// TestPendingTaskTimesOutThenRedeliverySucceeds: a write whose task is
// still enqueued after TaskTimeout fails as unavailable (the projection
// retries); setup interrupted that way is redone by the next operation.
func TestPendingTaskTimesOutThenRedeliverySucceeds(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{})
	srv.HoldTasks(true)
	ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, TaskTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("New while the server's tasks are stuck: %v", err)
	}
	d := note(alice, "m1", "kestrel")
	if err := ix.UpsertDocuments(context.Background(), d); !errors.Is(err, domain.ErrIndexUnavailable) || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("write with a stuck task: %v, want ErrIndexUnavailable (task pending)", err)
	}
	srv.HoldTasks(false)
	if err := ix.UpsertDocuments(context.Background(), d); err != nil {
		t.Fatalf("redelivery once tasks run again: %v", err)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: "kestrel"}); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("kestrel: %v", got)
	}
}

// TestIndexDeletedBehindOurBack: an index deleted out of band makes the
// next operation unavailable, and the one after re-creates and configures
// it (a rebuild then refills it).
func TestIndexDeletedBehindOurBack(t *testing.T) {
	ix, srv := openTestServer(t, meilitest.Options{APIKey: testKey})
	if err := ix.UpsertDocuments(context.Background(), note(alice, "m1", "puffin")); err != nil {
		t.Fatal(err)
	}
	admin := ms.New(srv.URL, ms.WithAPIKey(testKey))
	info, err := admin.DeleteIndex(meilisearch.DefaultIndexName)
	if err != nil {
		t.Fatal(err)
	}
	if task, err := admin.WaitForTask(info.TaskUID, time.Millisecond); err != nil || task.Status != ms.TaskStatusSucceeded {
		t.Fatalf("delete index: %v %v", task, err)
	}
	if _, err := ix.SearchKeyword(context.Background(), domain.KeywordQuery{Scope: alice, Text: "puffin", Limit: 1}); !errors.Is(err, domain.ErrIndexUnavailable) {
		t.Fatalf("search of a deleted index: %v, want ErrIndexUnavailable", err)
	}
	if err := ix.UpsertDocuments(context.Background(), note(alice, "m1", "puffin")); err != nil {
		t.Fatalf("upsert after the index was deleted: %v", err)
	}
	if filterable, _, _ := srv.Settings(meilisearch.DefaultIndexName); !slices.Contains(filterable, "user") {
		t.Fatalf("re-created index not configured: filterable %v", filterable)
	}
	if got := searchIDs(t, ix, domain.KeywordQuery{Scope: alice, Text: "puffin"}); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("puffin after re-creation: %v", got)
	}
}

// TestSecondNodeSharesTheIndex: New on an index that already exists (a
// restart, or a second Engram node) keeps it and its documents.
func TestSecondNodeSharesTheIndex(t *testing.T) {
	first, srv := openTestServer(t, meilitest.Options{APIKey: testKey})
	if err := first.UpsertDocuments(context.Background(), note(alice, "m1", "osprey")); err != nil {
		t.Fatal(err)
	}
	second, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatalf("New on an existing index: %v", err)
	}
	if err := second.Ready(context.Background()); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if got := searchIDs(t, second, domain.KeywordQuery{Scope: alice, Text: "osprey"}); !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("osprey through the second node: %v", got)
	}
}

func TestServerVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{"1.9.0", true}, {"1.12.3", true}, {"2.0.0", true}, {"1.13.0-rc.1", true},
		{"1.8.3", false}, {"0.30.5", false}, {"garbage", false},
	} {
		t.Run(c.version, func(t *testing.T) {
			srv := meilitest.New(t, meilitest.Options{Version: c.version})
			_, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL})
			if c.ok && err != nil {
				t.Fatalf("New against %s: %v", c.version, err)
			}
			if !c.ok && (err == nil || !strings.Contains(err.Error(), "1.9 or later")) {
				t.Fatalf("New against %s: %v, want an error asking for 1.9 or later", c.version, err)
			}
		})
	}
}

// TestQuickTaskDoesNotWaitAPollInterval: the first polls of a task come
// after milliseconds, not TaskPollInterval.
func TestQuickTaskDoesNotWaitAPollInterval(t *testing.T) {
	srv := meilitest.New(t, meilitest.Options{TaskDelay: time.Millisecond})
	ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, TaskPollInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ix.UpsertDocuments(context.Background(), note(alice, "m1", "wren")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a 2 ms task took %v to be seen with a 10 s poll interval", took)
	}
}

// TestSearchPastDefaultMaxTotalHits: Meilisearch cuts every search to
// pagination.maxTotalHits (1000 by default); search deepening asks for
// more, so the index's setting must allow it.
func TestSearchPastDefaultMaxTotalHits(t *testing.T) {
	ix, _ := openTestServer(t, meilitest.Options{APIKey: testKey})
	docs := make([]domain.KeywordDocument, 1500)
	for i := range docs {
		docs[i] = note(alice, fmt.Sprintf("m%04d", i), "heron")
	}
	if err := ix.UpsertDocuments(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1000, 1001, 1500, 4000} {
		hits, err := ix.SearchKeyword(context.Background(), domain.KeywordQuery{Scope: alice, Text: "heron", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(limit, len(docs)); len(hits) != want {
			t.Fatalf("limit %d: %d hits, want %d", limit, len(hits), want)
		}
	}
}

// TestIndexRecreatedBareByAWrite: an index deleted outside Engram and then
// re-created by a document addition (Meilisearch creates a missing index
// on a write, with default settings) has no filterable attributes, so
// every scoped search and deletion is refused with invalid_search_filter /
// invalid_document_filter. The adapter re-applies its settings and the
// operation succeeds, without a restart.
func TestIndexRecreatedBareByAWrite(t *testing.T) {
	for _, op := range []string{"search", "delete"} {
		t.Run(op, func(t *testing.T) {
			ix, srv := openTestServer(t, meilitest.Options{APIKey: testKey})
			ctx := context.Background()
			if err := ix.UpsertDocuments(ctx, note(alice, "m1", "puffin")); err != nil {
				t.Fatal(err)
			}
			admin := ms.New(srv.URL, ms.WithAPIKey(testKey))
			info, err := admin.DeleteIndex(meilisearch.DefaultIndexName)
			if err != nil {
				t.Fatal(err)
			}
			if task, err := admin.WaitForTask(info.TaskUID, time.Millisecond); err != nil || task.Status != ms.TaskStatusSucceeded {
				t.Fatalf("delete index: %v %v", task, err)
			}
			// The adapter still believes the index set up: this write
			// re-creates it bare.
			if err := ix.UpsertDocuments(ctx, note(alice, "m1", "puffin"), note(alice, "m2", "puffin")); err != nil {
				t.Fatal(err)
			}
			if filterable, _, _ := srv.Settings(meilisearch.DefaultIndexName); len(filterable) != 0 {
				t.Fatalf("the write re-created the index with filterable %v; the scenario needs it bare", filterable)
			}
			switch op {
			case "search":
				hits, err := ix.SearchKeyword(ctx, domain.KeywordQuery{Scope: alice, Text: "puffin", Limit: 10})
				if err != nil || len(hits) != 2 {
					t.Fatalf("search of the re-created index = %v, %v; want both memories", hits, err)
				}
			case "delete":
				if err := ix.DeleteMemory(ctx, alice, "m1"); err != nil {
					t.Fatalf("DeleteMemory on the re-created index: %v", err)
				}
				if _, ok := srv.Document(meilisearch.DefaultIndexName, "m1"); ok {
					t.Fatal("m1 still stored")
				}
			}
			if filterable, _, _ := srv.Settings(meilisearch.DefaultIndexName); !slices.Contains(filterable, "user") {
				t.Fatalf("settings not re-applied: filterable %v", filterable)
			}
		})
	}
}

// TestUpsertSplitsOnPayloadTooLarge: Meilisearch refuses a body over its
// payload limit (--http-payload-size-limit) with 413 payload_too_large
// and stores nothing of it. Batches are sized by bytes, and a request the
// server still refuses is split, never dropped; only a document too large
// on its own is left out, and said so.
func TestUpsertSplitsOnPayloadTooLarge(t *testing.T) {
	long := func(id string, n int) domain.KeywordDocument {
		return note(alice, id, "gannet "+strings.Repeat("x", n))
	}
	cases := []struct {
		name         string
		serverLimit  int64
		adapterLimit int
		docs         []domain.KeywordDocument
		wantStored   int
		wantRejected bool
	}{
		{"batch sized by bytes", 400_000, 300_000, []domain.KeywordDocument{long("a1", 100_000), long("a2", 100_000), long("a3", 100_000), long("a4", 100_000), long("a5", 100_000)}, 5, false},
		{"server limit below the adapter's: 413, split", 250_000, 0, []domain.KeywordDocument{long("b1", 100_000), long("b2", 100_000), long("b3", 100_000), long("b4", 100_000), long("b5", 100_000)}, 5, false},
		{"one document over the limit", 150_000, 0, []domain.KeywordDocument{long("c1", 100_000), long("c2", 200_000), long("c3", 100_000)}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := meilitest.New(t, meilitest.Options{APIKey: testKey, PayloadLimit: c.serverLimit})
			ix, err := meilisearch.New(context.Background(), meilisearch.Config{URL: srv.URL, APIKey: testKey, MaxPayloadBytes: c.adapterLimit})
			if err != nil {
				t.Fatal(err)
			}
			err = ix.UpsertDocuments(context.Background(), c.docs...)
			if c.wantRejected != errors.Is(err, domain.ErrIndexRejected) || (!c.wantRejected && err != nil) {
				t.Fatalf("UpsertDocuments = %v; want rejected %v", err, c.wantRejected)
			}
			if got := len(srv.Documents(meilisearch.DefaultIndexName)); got != c.wantStored {
				t.Fatalf("%d documents stored, want %d", got, c.wantStored)
			}
		})
	}
}

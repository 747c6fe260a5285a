package meilisearch_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"

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
// on the machines this was written on (README "Meilisearch").
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

// Package meilisearch is the keyword index (domain.KeywordIndex) on a
// Meilisearch server, through github.com/meilisearch/meilisearch-go.
//
// Every memory of every user is one document of one index (Config.IndexName)
// keyed by its memory id; the document carries the user and agent it
// belongs to, and every query and scoped deletion filters on them inside
// Meilisearch, so an agent never sees another's memories.
//
// Meilisearch applies writes asynchronously: a write request only enqueues
// a task. Every write here waits for its task to finish before it returns,
// so a write that returned nil is visible to the next search (the
// projection's checkpoint advances only after that).
package meilisearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/serverversion"
	ms "github.com/meilisearch/meilisearch-go"
)

// Defaults of Config's zero fields.
const (
	DefaultIndexName        = "engram_memories"
	DefaultHTTPTimeout      = 10 * time.Second
	DefaultTaskPollInterval = 50 * time.Millisecond
	DefaultTaskTimeout      = 2 * time.Minute
	// DefaultMaxPayloadBytes keeps a request of documents well under
	// Meilisearch's default payload limit (100 MB).
	DefaultMaxPayloadBytes = 20 << 20
)

// Config configures the adapter. Only URL is required.
type Config struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:7700.
	URL string
	// APIKey is sent as "Authorization: Bearer"; the wiring reads it from
	// ENGRAM_MEILISEARCH_API_KEY only (never a flag, so it stays out of
	// process listings). Empty for a server started without a master key.
	APIKey string
	// IndexName is the index's uid (DefaultIndexName when empty).
	IndexName string
	// HTTPTimeout bounds each HTTP request (DefaultHTTPTimeout when 0).
	HTTPTimeout time.Duration
	// TaskPollInterval is the longest pause between two polls of a write's
	// task; the first polls come sooner (DefaultTaskPollInterval when 0).
	TaskPollInterval time.Duration
	// TaskTimeout bounds how long a write waits for its task; a task still
	// pending then makes the write fail as unavailable, and the projection
	// retries it (DefaultTaskTimeout when 0).
	TaskTimeout time.Duration
	// MaxPayloadBytes bounds the JSON of one request of documents
	// (DefaultMaxPayloadBytes when 0). A server with a lower payload
	// limit is handled too: a request it refuses is split.
	MaxPayloadBytes int
}

// Index is the Meilisearch keyword index. It is safe for concurrent use.
type Index struct {
	client ms.ServiceManager
	index  ms.IndexManager
	cfg    Config

	// setupMu guards ready: the index is created and configured once, on
	// the first operation that reaches the server.
	setupMu sync.Mutex
	ready   bool
}

var _ domain.KeywordIndex = (*Index)(nil)

// Attributes of a document (see document).
const (
	attrID        = "id"
	attrUser      = "user"
	attrAgent     = "agent"
	attrType      = "type"
	attrTags      = "tags"
	attrCreatedAt = "created_at"
	attrForgotten = "forgotten"
	attrText      = "text"
	attrMeta      = "meta"
)

// settings are the index settings the adapter depends on: the filters it
// emits need their attributes filterable; only the text and the metadata
// are searched, text first (Meilisearch's attribute ranking rule prefers
// matches in earlier attributes); and after Meilisearch's default ranking
// rules, equally relevant documents come newer first, then by id, as the
// port orders them (custom rules do not change _rankingScore), so a limit
// cuts a run of ties where the port says. Meilisearch cuts every search to
// pagination.maxTotalHits (1000 by default) without saying so, and the
// search service deepens a short page by asking for 4 times as many hits,
// past 1000; maxTotalHits lets it.
func settings() *ms.Settings {
	return &ms.Settings{
		Pagination:           &ms.Pagination{MaxTotalHits: maxTotalHits},
		FilterableAttributes: []string{attrID, attrUser, attrAgent, attrType, attrTags, attrCreatedAt, attrForgotten},
		SearchableAttributes: []string{attrText, attrMeta},
		RankingRules:         []string{"words", "typo", "proximity", "attribute", "sort", "exactness", attrCreatedAt + ":desc", attrID + ":asc"},
	}
}

// maxTotalHits is the most hits one search can return. Meilisearch's cost
// grows with the hits a search actually asks for, not with this ceiling;
// a search deepened past it stops there, as if the index had run out.
const maxTotalHits = 100_000

// New returns the index described by cfg. It creates and configures the
// Meilisearch index when the server answers; when the server cannot be
// reached it still returns the Index (Engram starts, /readyz reports the
// index down, and the first operation that reaches the server sets it up).
// A bad configuration, a server that refuses the API key or one older than
// 1.9 is an error (later, at run time, these make the index unavailable).
func New(ctx context.Context, cfg Config) (*Index, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("meilisearch: URL %q: want http(s)://host[:port]", cfg.URL)
	}
	if cfg.IndexName == "" {
		cfg.IndexName = DefaultIndexName
	}
	if !validUID(cfg.IndexName) {
		return nil, fmt.Errorf("meilisearch: index name %q: want 1-400 of a-z A-Z 0-9 - _", cfg.IndexName)
	}
	if cfg.HTTPTimeout <= 0 {
		cfg.HTTPTimeout = DefaultHTTPTimeout
	}
	if cfg.TaskPollInterval <= 0 {
		cfg.TaskPollInterval = DefaultTaskPollInterval
	}
	if cfg.TaskTimeout <= 0 {
		cfg.TaskTimeout = DefaultTaskTimeout
	}
	if cfg.MaxPayloadBytes <= 0 {
		cfg.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	opts := []ms.Option{
		ms.WithCustomClient(&http.Client{Timeout: cfg.HTTPTimeout}),
		// The projection engine retries a failed batch itself; the
		// client's own retries would only stretch a failing call.
		ms.DisableRetries(),
	}
	if cfg.APIKey != "" {
		opts = append(opts, ms.WithAPIKey(cfg.APIKey))
	}
	client := ms.New(cfg.URL, opts...)
	ix := &Index{client: client, index: client.Index(cfg.IndexName), cfg: cfg}
	if err := ix.setup(ctx); errors.Is(err, errKeyRefused) || errors.Is(err, errUnsupportedServer) || (err != nil && !errors.Is(err, domain.ErrIndexUnavailable)) {
		return nil, err
	}
	return ix, nil
}

// Ready implements domain.KeywordIndex: the server is healthy and the
// index is set up.
func (ix *Index) Ready(ctx context.Context) error {
	h, err := ix.client.HealthWithContext(ctx)
	if err != nil {
		return classify(ctx, "health", err)
	}
	if h.Status != "available" {
		return fmt.Errorf("meilisearch: health status %q: %w", h.Status, domain.ErrIndexUnavailable)
	}
	return ix.setup(ctx)
}

// setup creates the index with primary key "id" and applies settings(),
// once. Both are idempotent on the server, so a setup interrupted by an
// outage is simply redone.
func (ix *Index) setup(ctx context.Context) error {
	ix.setupMu.Lock()
	defer ix.setupMu.Unlock()
	if ix.ready {
		return nil
	}
	v, err := ix.client.VersionWithContext(ctx)
	if err != nil {
		return setupError(ctx, classify(ctx, "version", err))
	}
	if !serverversion.AtLeast(v.PkgVersion, minMajor, minMinor) {
		return fmt.Errorf("meilisearch: server version %q: Engram needs Meilisearch %d.%d or later: %w: %w", v.PkgVersion, minMajor, minMinor, errUnsupportedServer, domain.ErrIndexUnavailable)
	}
	info, err := ix.client.CreateIndexWithContext(ctx, &ms.IndexConfig{Uid: ix.cfg.IndexName, PrimaryKey: attrID})
	if err != nil {
		return setupError(ctx, classify(ctx, "create index", err))
	}
	if err := ix.wait(ctx, "create index", info); err != nil && taskErrorCode(err) != "index_already_exists" {
		return setupError(ctx, err)
	}
	info, err = ix.index.UpdateSettingsWithContext(ctx, settings())
	if err != nil {
		return setupError(ctx, classify(ctx, "update settings", err))
	}
	if err := ix.wait(ctx, "update settings", info); err != nil {
		return setupError(ctx, err)
	}
	ix.ready = true
	return nil
}

// setupError makes a refusal during setup (a bad key, settings the server
// rejects) unavailable too: no operation can succeed until
// the deployment is fixed, and /readyz and searches must say so.
func setupError(ctx context.Context, err error) error {
	if errors.Is(err, domain.ErrIndexUnavailable) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("meilisearch: set up index: %w: %w", err, domain.ErrIndexUnavailable)
}

// The oldest Meilisearch the adapter works with: 1.9 brought
// rankingScoreThreshold (1.8 the "-word" operator the queries use).
const minMajor, minMinor = 1, 9

// validUID is Meilisearch's rule for index uids and document ids: 1 to
// 400 (ids: 511) bytes of ASCII letters, digits, '-' and '_'.
func validUID(s string) bool { return validID(s, 400) }

func validID(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Entries is the number of documents in the index (forgotten ones
// included), as Meilisearch's index stats count them.
func (ix *Index) Entries(ctx context.Context) (int, error) {
	st, err := ix.index.GetStatsWithContext(ctx, nil)
	if err != nil {
		return 0, classify(ctx, "stats", err)
	}
	return int(st.NumberOfDocuments), nil
}

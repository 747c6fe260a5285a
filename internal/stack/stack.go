// Package stack wires Engram's storage, search indexes, projections and
// projection engine from one Config. `engram serve`, the offline
// `engram projections` commands, the API and search test harnesses and
// engram-bench all build their stack here, so there is one place where
// the adapters are chosen and connected.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/datadir"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/qdrant"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/textindex"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

// Index backends (--keyword-index, --vector-index).
const (
	Embedded    = "embedded"
	Meilisearch = "meilisearch"
	Qdrant      = "qdrant"
)

// Indexes chooses the search index backends. Zero values take the
// embedded indexes.
type Indexes struct {
	// Keyword is Embedded (default) or Meilisearch.
	Keyword           string
	MeilisearchURL    string
	MeilisearchAPIKey string
	// Vector is Embedded (default) or Qdrant.
	Vector       string
	QdrantURL    string
	QdrantAPIKey string
	// VectorOptions tune the embedded vector index, KeywordSaturation the
	// embedded keyword index's score mapping (K in x/(x+K); 0: the
	// default, textindex.DefaultSaturation).
	VectorOptions     vectorindex.Options
	KeywordSaturation float64
}

// Validate checks the choice without connecting to anything.
func (ix Indexes) Validate() error {
	switch ix.Keyword {
	case "", Embedded:
	case Meilisearch:
		if ix.MeilisearchURL == "" {
			return fmt.Errorf("--keyword-index meilisearch needs --meilisearch-url")
		}
	default:
		return fmt.Errorf("--keyword-index must be %s or %s, not %q", Embedded, Meilisearch, ix.Keyword)
	}
	switch ix.Vector {
	case "", Embedded:
	case Qdrant:
		if ix.QdrantURL == "" {
			return fmt.Errorf("--vector-index qdrant needs --qdrant-url")
		}
	default:
		return fmt.Errorf("--vector-index must be %s or %s, not %q", Embedded, Qdrant, ix.Vector)
	}
	return nil
}

// Config is everything a stack is built from.
type Config struct {
	DataDir string
	SQLite  sqlite.Options
	// GroupCommit is the event store's group-commit window (default
	// 500ms; tests use a few milliseconds).
	GroupCommit time.Duration
	Indexes     Indexes
	// VisibilityTimeout bounds how long a write waits for the projections
	// (0: commands.DefaultVisibilityTimeout).
	VisibilityTimeout time.Duration
	Logger            *slog.Logger
}

// Stack is one wired Engram storage and projection stack.
type Stack struct {
	// Owner is the data dir's one-writer lock; nil when opened read-only.
	Owner *datadir.Lock
	DB    *sqlite.DB
	Store *sqlite.EventStore
	// Accounts, Memories and Jobs are the read models' stores, which
	// answer the commands' queries; their projections feed them.
	Accounts *sqlite.Accounts
	Memories *sqlite.Memories
	Jobs     *sqlite.Jobs
	// Suggestions, Provenance and Audit are the stack cognition read
	// models: processing suggestions, the derived_from edges both ways,
	// and the audit trail.
	Suggestions *sqlite.Suggestions
	Provenance  *sqlite.Provenance
	Audit       *sqlite.Audit
	Keyword     *projections.Keyword
	Vectors     *projections.Vectors
	// KeywordIndex and VectorIndex are the search index adapters the
	// projections write and searches read.
	KeywordIndex domain.KeywordIndex
	VectorIndex  domain.VectorIndex
	// EmbeddedVectors is the in-process vector index behind VectorIndex
	// when that is the embedded one (nil otherwise), for its statistics
	// and for waiting on its background graph builds.
	EmbeddedVectors *vectorindex.Index
	Engine          *projections.Engine
	Writer          *commands.EventWriter
	Logger          *slog.Logger

	indexes      Indexes
	projections  []projections.Projection
	closeIndexes func()
}

// Open opens the data dir and wires the stack. Unless cfg.SQLite.ReadOnly,
// it first takes the data dir's lock: a second writer (another `engram
// serve`, a `projections rebuild` beside a live server) is refused at once,
// naming the holder. Read-only openers take no lock and never write.
func Open(ctx context.Context, cfg Config) (*Stack, error) {
	if err := cfg.Indexes.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.GroupCommit <= 0 {
		cfg.GroupCommit = 500 * time.Millisecond
	}
	ix, err := openIndexes(ctx, cfg.Indexes)
	if err != nil {
		return nil, err
	}
	var owner *datadir.Lock
	if !cfg.SQLite.ReadOnly {
		if owner, err = datadir.Acquire(cfg.DataDir); err != nil {
			ix.close()
			return nil, err
		}
	}
	db, err := sqlite.Open(ctx, cfg.DataDir, cfg.SQLite)
	if err != nil {
		ix.close()
		owner.Release()
		return nil, err
	}
	s := &Stack{
		Owner:           owner,
		DB:              db,
		Store:           sqlite.NewEventStore(db, cfg.GroupCommit),
		Accounts:        sqlite.NewAccounts(db),
		Memories:        sqlite.NewMemories(db),
		Jobs:            sqlite.NewJobs(db),
		Suggestions:     sqlite.NewSuggestions(db),
		Provenance:      sqlite.NewProvenance(db),
		Audit:           sqlite.NewAudit(db),
		Keyword:         projections.NewKeyword(sqlite.NewKeywordStore(db), ix.keyword, ix.keywordInProcess, logger),
		Vectors:         projections.NewVectors(sqlite.NewVectorStore(db), ix.vectors, ix.vectorsInProcess, logger),
		KeywordIndex:    ix.keyword,
		VectorIndex:     ix.vectors,
		EmbeddedVectors: ix.embeddedVectors,
		Logger:          logger,
		indexes:         cfg.Indexes,
		closeIndexes:    ix.close,
	}
	s.projections = []projections.Projection{
		projections.NewAccounts(s.Accounts), projections.NewMemories(s.Memories), s.Keyword, s.Vectors,
		projections.NewJobs(s.Jobs), projections.NewProvenance(s.Provenance), projections.NewAudit(s.Audit), projections.NewSuggestions(s.Suggestions),
	}
	s.Engine = projections.NewEngine(s.Store, logger, s.projections...)
	s.Writer = commands.NewEventWriter(s.Store, s.Engine, cfg.VisibilityTimeout)
	return s, nil
}

// indexes are the chosen index adapters.
type indexes struct {
	keyword         domain.KeywordIndex
	vectors         domain.VectorIndex
	embeddedVectors *vectorindex.Index
	// keywordInProcess, vectorsInProcess: that index keeps nothing across
	// restarts, so its projection fills it from its state at start.
	keywordInProcess, vectorsInProcess bool
	closers                            []func()
}

func (ix *indexes) close() {
	for _, c := range ix.closers {
		c()
	}
}

// openIndexes builds the chosen index adapters. A remote backend that is
// down is no error here: the stack opens and Backends reports it. Remote
// indexes keep their contents across restarts, so their projections'
// checkpoints, not a fill at start, keep them current.
func openIndexes(ctx context.Context, cfg Indexes) (*indexes, error) {
	ix := &indexes{}
	switch cfg.Keyword {
	case Meilisearch:
		ki, err := meilisearch.New(ctx, meilisearch.Config{URL: cfg.MeilisearchURL, APIKey: cfg.MeilisearchAPIKey})
		if err != nil {
			return nil, fmt.Errorf("--keyword-index %s: %w", Meilisearch, err)
		}
		ix.keyword = ki
	default:
		ix.keyword, ix.keywordInProcess = textindex.NewPort(textindex.Options{}, cfg.KeywordSaturation), true
	}
	switch cfg.Vector {
	case Qdrant:
		vi, err := qdrant.New(ctx, qdrant.Config{URL: cfg.QdrantURL, APIKey: cfg.QdrantAPIKey})
		if err != nil {
			ix.close()
			return nil, fmt.Errorf("--vector-index %s: %w", Qdrant, err)
		}
		ix.vectors = vi
		ix.closers = append(ix.closers, func() { _ = vi.Close() })
	default:
		vi := vectorindex.New(cfg.VectorOptions)
		ix.vectors, ix.embeddedVectors, ix.vectorsInProcess = vectorindex.NewPort(vi), vi, true
		ix.closers = append(ix.closers, vi.Close)
	}
	return ix, nil
}

// Projections lists every projection, in the order they are rebuilt.
func (s *Stack) Projections() []projections.Projection {
	return s.projections
}

// Search returns a search service over the stack's indexes. Hybrid
// fusion follows the backend pair (search.Fusion, "Per backend pair"):
// Meilisearch's scores are relative, Qdrant's are the embedded cosines.
func (s *Stack) Search(embedder search.Embedder, opts search.Options) (*search.Service, error) {
	opts.RelativeKeywordScores = s.indexes.Keyword == Meilisearch
	return search.New(s.KeywordIndex, s.VectorIndex, s.Vectors, embedder, s.Memories, s.Logger, opts)
}

// Backends reports each search index backend's readiness (nil: ready),
// keyed "keyword_index" and "vector_index".
func (s *Stack) Backends(ctx context.Context) map[string]error {
	return map[string]error{
		"keyword_index": s.KeywordIndex.Ready(ctx),
		"vector_index":  s.VectorIndex.Ready(ctx),
	}
}

// Close releases the indexes, the database and then the data dir.
func (s *Stack) Close() error {
	s.closeIndexes()
	return errors.Join(s.DB.Close(), s.Owner.Release())
}

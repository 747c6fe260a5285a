// Package app wires Engram's storage, search indexes, projections and
// projection engine from one Config. `engram serve`, the offline
// `engram projections` commands, the API and search test harnesses and
// engram-bench all build their core here, so there is one place where
// the adapters are chosen and connected.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/processing"
	"github.com/engram-memory/engram/infra/datadir"
	"github.com/engram-memory/engram/infra/diskspace"
	"github.com/engram-memory/engram/infra/kurrentdb"
	"github.com/engram-memory/engram/infra/meilisearch"
	"github.com/engram-memory/engram/infra/postgres"
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

// Event store backends (--event-store).
const (
	SQLiteLog   = "sqlite"
	PostgresLog = "postgres"
	KurrentLog  = "kurrentdb"
)

// EventStore chooses the event log. The zero value is the embedded SQLite
// log in the data dir.
type EventStore struct {
	// Backend is SQLiteLog (default), PostgresLog or KurrentLog.
	Backend string
	// URL locates a remote log (postgres:// URL or key=value DSN; a
	// kurrentdb:// connection string). Its password, if any, comes from the
	// environment (see docs/configuration.md#environment-only); the URL is never logged.
	URL string
	// KurrentUsername and KurrentPassword authenticate to KurrentDB; they
	// come from the environment only (ENGRAM_KURRENTDB_USERNAME and
	// ENGRAM_KURRENTDB_PASSWORD), a kurrentdb:// URL never carries them.
	KurrentUsername, KurrentPassword string
	// KurrentMaxAppendSize is the largest append the KurrentDB server
	// takes, in bytes (its MaxAppendSize); 0: 1 MiB, the limit of KurrentDB
	// 24.10 and 25.0. Servers of 25.1 and later allow more.
	KurrentMaxAppendSize int
	// PollInterval bounds how late a node sees another node's append when
	// a change notification is lost (0: the backend's default).
	PollInterval time.Duration
}

// Validate checks the choice without connecting to anything.
func (es EventStore) Validate() error {
	switch es.Backend {
	case "", SQLiteLog:
		if es.URL != "" {
			return fmt.Errorf("--event-store-url is only for a remote event store; --event-store is %s", SQLiteLog)
		}
	case PostgresLog, KurrentLog:
		if es.URL == "" {
			return fmt.Errorf("--event-store %s needs --event-store-url (or ENGRAM_EVENT_STORE_URL)", es.Backend)
		}
	default:
		return fmt.Errorf("--event-store must be %s, %s or %s, not %q", SQLiteLog, PostgresLog, KurrentLog, es.Backend)
	}
	if es.KurrentMaxAppendSize < 0 {
		return fmt.Errorf("--kurrentdb-max-append-size must be 0 (the default, 1 MiB) or a number of bytes, not %d", es.KurrentMaxAppendSize)
	}
	return nil
}

// Shared reports whether the log is shared by several nodes.
func (es EventStore) Shared() bool { return es.Backend != "" && es.Backend != SQLiteLog }

// Config is everything a Core is built from.
type Config struct {
	DataDir string
	SQLite  sqlite.Options
	// EventStore chooses the log.
	EventStore EventStore
	// ReadModels chooses where the read models live: DataDir's SQLite (one
	// replica per node when the log is shared) or one shared PostgreSQL.
	// The search indexes' state stays in DataDir either way.
	ReadModels ReadModels
	// GroupCommit is the event store's group-commit window (default
	// 500ms; tests use a few milliseconds).
	GroupCommit time.Duration
	Indexes     Indexes
	// VisibilityTimeout bounds how long a write waits for the projections
	// (0: commands.DefaultVisibilityTimeout).
	VisibilityTimeout time.Duration
	// NodeID names this node as the holder of projection leases (default
	// HOST/pid).
	NodeID string
	Logger *slog.Logger
	// Observe instruments the stack's ports (metrics, traces).
	Observe Observers
	// Unsearched names the in-process indexes this process never
	// searches (app.New sets it from the parts asked for: a local capture
	// or read). They are neither restored from their images nor filled,
	// and their projections advance their state and checkpoint alone: the
	// next process that searches restores the image and re-reads the
	// memories of the events after it (docs/snapshots.md).
	Unsearched Unsearched
	// ShortLived: the process opens, answers and closes (app.New sets it
	// for the parts that run no engine: a local search). It saves its
	// images only at its close, so an image due then waits for the vector
	// graphs' build to finish and holds them whole
	// (projections.Snapshots.FinishGraphs); and it opens an image already
	// checksummed whole without reading every byte again
	// (snapshot.OpenStamped; docs/snapshots.md#verified-once).
	ShortLived bool
}

// Unsearched names in-process indexes a process does not search.
type Unsearched struct{ Keyword, Vector bool }

// Observers wrap the ports the requests go through, to measure and trace
// them; a nil field leaves its port as it is.
type Observers struct {
	// Appends wraps the writer's event log, Visibility what the writer
	// waits on for the projections.
	Appends    func(domain.EventStore) domain.EventStore
	Visibility func(commands.Visibility) commands.Visibility
	// Keyword and Vector wrap the indexes the search queries, given the
	// backend's name (Embedded, Meilisearch, Qdrant).
	Keyword func(domain.KeywordIndex, string) domain.KeywordIndex
	Vector  func(domain.VectorIndex, string) domain.VectorIndex
}

// Core is one wired Engram storage and projection core: the event log,
// read models, search indexes and the projection engine that feeds them.
type Core struct {
	// Owner is the data dir's one-writer lock; nil when opened read-only.
	Owner *datadir.Lock
	DB    *sqlite.DB
	Store domain.EventStore
	// SyncLog is the same log's lookups that sync needs.
	SyncLog commands.SyncLog
	// Postgres is the PostgreSQL the nodes share (the read models'
	// database, else the log's; nil when there is none), for the other
	// cross-node state it keeps: rate-limit buckets. With a KurrentDB log
	// and PostgreSQL read models the buckets are shared too.
	Postgres *postgres.DB
	// Accounts, Memories and Jobs are the read models' stores (in SQLite
	// or PostgreSQL, see ReadModels), which answer the commands' queries;
	// their projections feed them.
	Accounts AccountsReadModel
	Memories MemoriesReadModel
	Jobs     JobsReadModel
	// Suggestions, Provenance and Audit are the cognition read
	// models: processing suggestions, the derived_from edges both ways,
	// and the audit trail.
	Suggestions SuggestionsReadModel
	Provenance  ProvenanceReadModel
	Audit       AuditReadModel
	// Webhooks holds the users' webhooks and the outbox of their
	// deliveries.
	Webhooks WebhooksReadModel
	Keyword  *projections.Keyword
	Vectors  *projections.Vectors
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
	// ProcessingStates keeps the agents' cognition streams folded, for the
	// write side's pipeline and the read side's processing queries alike.
	ProcessingStates *processing.Snapshots
	// Storage knows whether the storage is full: the Writer's appends are
	// refused and the Engine's failed batches held while it is (nil when
	// opened read-only).
	Storage *diskspace.Guard
	Logger  *slog.Logger

	indexes         Indexes
	observe         Observers
	projections     []projections.Projection
	closeIndexes    func()
	closeLog        func()
	closeReadModels func()
	// sharedLog: other nodes append to the log too.
	sharedLog bool
	// sqliteReadModels: the read models are in DB (RebuildOffline defers
	// their query-only indexes).
	sqliteReadModels bool
	// leases and leased: the projections whose store the nodes share, run
	// under a lease (nil and none when nothing is shared).
	leases domain.ProjectionLeases
	leased []string
	// rebuilds records the leased projections' live rebuilds.
	rebuilds domain.ProjectionRebuilds
}

// eventLog is the opened event store and what closes it.
type eventLog struct {
	store interface {
		domain.EventStore
		commands.SyncLog
	}
	postgres *postgres.DB
	close    func()
}

// openEventStore opens the chosen log; each backend is one case. A remote
// log is refused over a data dir that holds an embedded log: its read
// models were fed from that log, not the remote one.
func openEventStore(ctx context.Context, cfg Config, db *sqlite.DB) (*eventLog, error) {
	switch cfg.EventStore.Backend {
	case PostgresLog:
		if err := refuseEmbeddedLog(ctx, db, PostgresLog); err != nil {
			return nil, err
		}
		pg, err := postgres.Open(ctx, cfg.EventStore.URL)
		if err != nil {
			return nil, fmt.Errorf("--event-store %s: %w", PostgresLog, err)
		}
		return &eventLog{store: postgres.NewEventStore(pg, cfg.EventStore.PollInterval), postgres: pg, close: pg.Close}, nil
	case KurrentLog:
		if err := refuseEmbeddedLog(ctx, db, KurrentLog); err != nil {
			return nil, err
		}
		kdb, err := kurrentdb.Open(ctx, kurrentdb.Config{
			URL: cfg.EventStore.URL, Username: cfg.EventStore.KurrentUsername, Password: cfg.EventStore.KurrentPassword,
			MaxAppendSize: cfg.EventStore.KurrentMaxAppendSize, Logger: cfg.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("--event-store %s: %w", KurrentLog, err)
		}
		return &eventLog{store: kdb, close: func() { kdb.Close() }}, nil
	default:
		return &eventLog{store: sqlite.NewEventStore(db, cfg.GroupCommit), close: func() {}}, nil
	}
}

// refuseSharedRemoteIndexes: a remote index over a shared log is written
// by one node at a time, under a projection lease, from state and a
// checkpoint kept in the shared PostgreSQL (the read models' database, or
// the log's). A KurrentDB log with SQLite read models has none, so the
// pair is refused.
func refuseSharedRemoteIndexes(cfg Config) error {
	if cfg.EventStore.Backend == KurrentLog && cfg.ReadModels.Backend != PostgresReadModels && (cfg.Indexes.Keyword == Meilisearch || cfg.Indexes.Vector == Qdrant) {
		return fmt.Errorf("--event-store %s with --keyword-index %s or --vector-index %s needs --read-models %s (with --postgres-url): the nodes share a remote index through leases and index state kept in PostgreSQL; or use the embedded indexes (one replica per node)", KurrentLog, Meilisearch, Qdrant, PostgresReadModels)
	}
	return nil
}

func refuseEmbeddedLog(ctx context.Context, db *sqlite.DB, backend string) error {
	head, err := sqlite.NewEventStore(db, 0).Head(ctx)
	if err != nil {
		return err
	}
	if head > 0 {
		return fmt.Errorf("--event-store %s: the database %s holds an embedded event log (%d events) and read models fed from it; give each node a data dir of its own", backend, db.Path(), head)
	}
	return nil
}

// openCore opens the data dir and wires the core (New's first step; the
// core alone is New with no part). Unless cfg.SQLite.ReadOnly,
// it first takes the data dir's lock: a second writer (another `engram
// serve`, a `projections rebuild` beside a live server) is refused at once,
// naming the holder. Read-only openers take no lock and never write.
func openCore(ctx context.Context, cfg Config) (*Core, error) {
	if err := cfg.Indexes.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.EventStore.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.ReadModels.Validate(cfg.EventStore); err != nil {
		return nil, err
	}
	if err := refuseSharedRemoteIndexes(cfg); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	logger := cfg.Logger
	if cfg.GroupCommit <= 0 {
		cfg.GroupCommit = 500 * time.Millisecond
	}
	indexCfg := cfg.Indexes
	if indexCfg.VectorOptions.FloatDir == "" {
		// Quantised vector collections keep their full-precision vectors
		// next to the database rather than in /tmp, which may be a tmpfs.
		indexCfg.VectorOptions.FloatDir = cfg.DataDir
	}
	// A read-only opener never runs the projections, so its indexes stay
	// empty: it restores no snapshot. Nor is an index restored that this
	// process does not search.
	restore := restoreFrom{keyword: snapshotDir(cfg.DataDir), vector: snapshotDir(cfg.DataDir), stamped: cfg.ShortLived}
	if cfg.SQLite.ReadOnly || cfg.Unsearched.Keyword {
		restore.keyword = ""
	}
	if cfg.SQLite.ReadOnly || cfg.Unsearched.Vector {
		restore.vector = ""
	}
	// The indexes (their images' reads) open while the database does: they
	// share nothing until the projections are wired below, and each is
	// CPU work of its own, so a start takes about the longer one's wall
	// time on two cores. Every path waits for the indexes before it
	// returns; an index failure is reported first, as when they opened
	// first.
	type openedIndexes struct {
		ix  *indexes
		err error
	}
	indexesOpened := make(chan openedIndexes, 1)
	go func() {
		ix, err := openIndexes(ctx, indexCfg, restore, logger)
		indexesOpened <- openedIndexes{ix, err}
	}()
	fail := func(err error, closers ...func()) (*Core, error) {
		for _, c := range closers {
			c()
		}
		o := <-indexesOpened
		if o.err != nil {
			return nil, o.err
		}
		o.ix.close()
		return nil, err
	}
	var owner *datadir.Lock
	var err error
	release := func() { _ = owner.Release() }
	if !cfg.SQLite.ReadOnly {
		if owner, err = datadir.Acquire(cfg.DataDir); err != nil {
			return fail(err)
		}
	}
	opening := startStep()
	db, err := sqlite.Open(ctx, cfg.DataDir, cfg.SQLite)
	if err != nil {
		return fail(err, release)
	}
	log, err := openEventStore(ctx, cfg, db)
	if err != nil {
		return fail(err, func() { _ = db.Close() }, release)
	}
	rm, err := openReadModels(ctx, cfg, db, log.postgres)
	if err != nil {
		return fail(err, log.close, func() { _ = db.Close() }, release)
	}
	took, cpu := opening.since()
	logger.Debug("database opened", "took", took, "cpu", cpu)
	opened := <-indexesOpened
	if opened.err != nil {
		rm.close()
		log.close()
		_ = db.Close()
		owner.Release()
		return nil, opened.err
	}
	ix := opened.ix
	s := &Core{
		Owner:           owner,
		DB:              db,
		Store:           log.store,
		SyncLog:         log.store,
		Postgres:        cmp.Or(rm.postgres, log.postgres),
		Accounts:        rm.accounts,
		Memories:        rm.memories,
		Jobs:            rm.jobs,
		Suggestions:     rm.suggestions,
		Provenance:      rm.provenance,
		Audit:           rm.audit,
		Webhooks:        rm.webhooks,
		KeywordIndex:    ix.keyword,
		VectorIndex:     ix.vectors,
		EmbeddedVectors: ix.embeddedVectors,
		Logger:          logger,
		indexes:         cfg.Indexes,
		observe:         cfg.Observe,
		closeIndexes:    ix.close,
		closeLog:        log.close,
		closeReadModels: rm.close,
		sharedLog:       cfg.EventStore.Shared(),
	}
	s.sqliteReadModels = rm.postgres == nil
	// A projection whose store the nodes share runs under a lease, one
	// node at a time: the PostgreSQL read models, and a remote index, whose
	// projection then keeps its state in the shared PostgreSQL (the read
	// models' database, else the log's). Everything else is per node.
	shared := s.Postgres
	if rm.postgres != nil {
		s.leased = append(s.leased, projections.AccountsProjectionName, projections.MemoriesProjectionName, projections.JobsProjectionName,
			projections.ProvenanceProjectionName, projections.AuditProjectionName, projections.SuggestionsProjectionName, projections.WebhooksProjectionName)
	}
	var keywordState domain.KeywordState = sqlite.NewKeywordStore(db)
	var vectorState domain.VectorState = sqlite.NewVectorStore(db)
	if shared != nil {
		if cfg.Indexes.Keyword == Meilisearch {
			keywordState = postgres.NewKeywordState(shared, projections.KeywordProjectionName)
			s.leased = append(s.leased, projections.KeywordProjectionName)
		}
		if cfg.Indexes.Vector == Qdrant {
			vectorState = postgres.NewVectorState(shared, projections.VectorsProjectionName)
			s.leased = append(s.leased, projections.VectorsProjectionName)
		}
	}
	s.Keyword = projections.NewKeyword(keywordState, ix.keyword, ix.keywordInProcess, logger)
	s.Vectors = projections.NewVectors(vectorState, ix.vectors, ix.vectorsInProcess, logger)
	s.useSnapshots(snapshotDir(cfg.DataDir), ix, cfg.SQLite.ReadOnly, cfg.ShortLived)
	if cfg.Unsearched.Keyword && ix.keywordInProcess {
		s.Keyword.SkipIndex()
	}
	if cfg.Unsearched.Vector && ix.vectorsInProcess {
		s.Vectors.SkipIndex()
	}
	s.projections = []projections.Projection{
		projections.NewAccounts(s.Accounts), projections.NewMemories(s.Memories), s.Keyword, s.Vectors,
		projections.NewJobs(s.Jobs), projections.NewProvenance(s.Provenance), projections.NewAudit(s.Audit), projections.NewSuggestions(s.Suggestions),
		projections.NewWebhooks(s.Webhooks),
	}
	s.Engine = projections.NewEngine(s.Store, logger, s.projections...)
	if len(s.leased) > 0 {
		node := cfg.NodeID
		if node == "" {
			host, _ := os.Hostname()
			node = fmt.Sprintf("%s/%d", cmp.Or(host, "engram"), os.Getpid())
		}
		s.leases, s.rebuilds = postgres.NewLeases(shared, node, 0), postgres.NewRebuilds(shared)
		if err := s.Engine.UseLeases(projections.Leasing{
			Leases: s.leases, Rebuilds: s.rebuilds, Changes: postgres.NewChanges(shared), Node: node, Projections: s.leased,
		}); err != nil {
			s.Close()
			return nil, err
		}
	}
	appends := s.Store
	if !cfg.SQLite.ReadOnly {
		s.Storage = diskspace.New(diskspace.Options{
			Dir: cfg.DataDir, IsFull: []func(error) bool{sqlite.IsStorageFull}, Reclaim: db.Reclaim,
			Remote: postgresStorage(log.postgres, rm.postgres), Logger: logger,
		})
		s.Engine.UseStorageGuard(s.Storage)
		appends = s.Storage.Appends(s.Store)
	}
	var visible commands.Visibility = s.Engine
	if o := cfg.Observe; o.Appends != nil {
		appends = o.Appends(appends)
	}
	if o := cfg.Observe; o.Visibility != nil {
		visible = o.Visibility(visible)
	}
	s.Writer = commands.NewEventWriter(appends, visible, cfg.VisibilityTimeout)
	s.ProcessingStates = processing.NewSnapshots(s.Store)
	return s, nil
}

// postgresStorage is the PostgreSQL of the log and of the read models
// (each nil when not used) as remote storage for the disk-space guard, or
// nil when there is none: a full disk there is judged by PostgreSQL, not
// by the data dir's free space.
func postgresStorage(dbs ...*postgres.DB) *diskspace.Remote {
	var probe []*postgres.DB
	for _, db := range dbs {
		if db != nil && !slices.Contains(probe, db) {
			probe = append(probe, db)
		}
	}
	if len(probe) == 0 {
		return nil
	}
	return &diskspace.Remote{Name: "PostgreSQL", IsFull: postgres.IsStorageFull, HasRoom: func(ctx context.Context) error {
		for _, db := range probe {
			if err := db.ProbeSpace(ctx); err != nil {
				return err
			}
		}
		return nil
	}}
}

// indexes are the chosen index adapters.
type indexes struct {
	keyword         domain.KeywordIndex
	vectors         domain.VectorIndex
	embeddedVectors *vectorindex.Index
	// keywordInProcess, vectorsInProcess: that index keeps nothing across
	// restarts, so its projection fills it from its state at start.
	keywordInProcess, vectorsInProcess bool
	// keywordRestored, vectorsRestored tag the image an in-process index
	// was restored from (nil: it starts empty).
	keywordRestored, vectorsRestored *domain.IndexSnapshot
	closers                          []func()
}

func (ix *indexes) close() {
	for _, c := range ix.closers {
		c()
	}
}

// restoreFrom is the snapshot directory each in-process index is
// restored from ("": it starts empty).
type restoreFrom struct {
	keyword, vector string
	// stamped: trust an image's stamp (snapshot.OpenStamped).
	stamped bool
}

// openIndexes builds the chosen index adapters. A remote backend that is
// down is no error here: the core opens and Backends reports it. Remote
// indexes keep their contents across restarts, so their projections'
// checkpoints, not a fill at start, keep them current. An in-process
// index is restored from its snapshot in its restore directory when one
// is usable. The keyword and the vector index are opened at once: each
// image's read (mapping, checksum, checks) is the process's own CPU work,
// so on two cores a start takes about the longer one's wall time, not the
// sum (docs/snapshots.md). A failure is the keyword index's first, as
// when they were opened in turn, and closes both.
func openIndexes(ctx context.Context, cfg Indexes, restore restoreFrom, logger *slog.Logger) (*indexes, error) {
	ix := &indexes{}
	var keywordClosers []func()
	var keywordErr error
	var wg sync.WaitGroup
	wg.Go(func() { keywordClosers, keywordErr = ix.openKeyword(ctx, cfg, restore, logger) })
	vectorClosers, vectorErr := ix.openVectors(ctx, cfg, restore, logger)
	wg.Wait()
	ix.closers = append(keywordClosers, vectorClosers...)
	if err := cmp.Or(keywordErr, vectorErr); err != nil {
		ix.close()
		return nil, err
	}
	return ix, nil
}

// openKeyword sets ix's keyword index and returns what closes it.
func (ix *indexes) openKeyword(ctx context.Context, cfg Indexes, restore restoreFrom, logger *slog.Logger) ([]func(), error) {
	if cfg.Keyword == Meilisearch {
		ki, err := meilisearch.New(ctx, meilisearch.Config{URL: cfg.MeilisearchURL, APIKey: cfg.MeilisearchAPIKey})
		if err != nil {
			return nil, fmt.Errorf("--keyword-index %s: %w", Meilisearch, err)
		}
		ix.keyword = ki
		return nil, nil
	}
	ix.keywordInProcess = true
	restored, tag, release := restoreKeyword(restore.keyword, restore.stamped, cfg.KeywordSaturation, logger)
	if restored == nil {
		ix.keyword = textindex.NewPort(textindex.Options{}, cfg.KeywordSaturation)
		return nil, nil
	}
	ix.keyword, ix.keywordRestored = restored, tag
	return []func(){release}, nil // the index reads the mapped image
}

// openVectors sets ix's vector index and returns what closes it, in order.
func (ix *indexes) openVectors(ctx context.Context, cfg Indexes, restore restoreFrom, logger *slog.Logger) ([]func(), error) {
	if cfg.Vector == Qdrant {
		vi, err := qdrant.New(ctx, qdrant.Config{URL: cfg.QdrantURL, APIKey: cfg.QdrantAPIKey})
		if err != nil {
			return nil, fmt.Errorf("--vector-index %s: %w", Qdrant, err)
		}
		ix.vectors = vi
		return []func(){func() { _ = vi.Close() }}, nil
	}
	port, tag, release := restoreVectors(restore.vector, restore.stamped, cfg.VectorOptions, logger)
	if port == nil {
		port = vectorindex.NewPort(vectorindex.New(cfg.VectorOptions))
	}
	vi := port.Index()
	ix.vectors, ix.embeddedVectors, ix.vectorsInProcess, ix.vectorsRestored = port, vi, true, tag
	closers := []func(){vi.Close}
	if release != nil {
		closers = append(closers, release) // after Close: the index reads the mapped image
	}
	return closers, nil
}

// Projections lists every projection, in the order they are rebuilt.
func (s *Core) Projections() []projections.Projection {
	return s.projections
}

// IndexChoice is the index backends the core was opened with.
func (s *Core) IndexChoice() Indexes { return s.indexes }

// SharedLog reports whether other nodes append to this core's log.
func (s *Core) SharedLog() bool { return s.sharedLog }

// HoldLeases takes the leases of the leased projections among names (all
// projections when none are named) for a command that writes them outside
// the engine (a rebuild), so no node applies them meanwhile. A lease still
// held by another node after wait is refused, naming the holder: that
// node serves, and a rebuild under it would reset the state it applies.
// release gives the leases back.
func (s *Core) HoldLeases(ctx context.Context, wait time.Duration, names ...string) (release func(), err error) {
	var held []domain.Lease
	release = func() {
		for _, l := range held {
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}
	for _, name := range s.leased {
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		lease, err := s.leases.Acquire(waitCtx, name)
		cancel()
		if err != nil {
			release()
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				holder, _ := s.leases.Holder(ctx, name)
				return nil, fmt.Errorf("projection %s is applied by node %q, which holds its lease: run `engram projections rebuild %s` with a serving node's --data-dir to rebuild it live, or stop the nodes serving this log first", name, holder, name)
			}
			return nil, err
		}
		held = append(held, lease)
	}
	return release, nil
}

// LeaseHolders names the node holding each leased projection's lease (""
// when none does); it is empty when no projection is leased.
func (s *Core) LeaseHolders(ctx context.Context) (map[string]string, error) {
	out := make(map[string]string, len(s.leased))
	for _, name := range s.leased {
		holder, err := s.leases.Holder(ctx, name)
		if err != nil {
			return nil, err
		}
		out[name] = holder
	}
	return out, nil
}

// OpenRebuilds returns the leased projections' live rebuilds not yet
// ended (requested, or running on the holder).
func (s *Core) OpenRebuilds(ctx context.Context) (map[string]domain.ProjectionRebuild, error) {
	out := map[string]domain.ProjectionRebuild{}
	for _, name := range s.leased {
		r, err := s.rebuilds.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if r.State.Open() {
			out[name] = r
		}
	}
	return out, nil
}

// CredentialsCurrent returns once the accounts read model has applied the
// log up to its head as of the call: with a shared log, a key revoked (or
// created) on another node is then seen here. It costs one read of the
// head (the last entry of the log's primary key) and, when another node
// wrote meanwhile, the wait for this node's accounts projection. With a
// log of its own the node took every write and waited for it, so it
// returns at once.
func (s *Core) CredentialsCurrent(ctx context.Context) error {
	if !s.sharedLog {
		return nil
	}
	head, err := s.Store.Head(ctx)
	if err != nil {
		return err
	}
	return s.Engine.WaitForProjections(ctx, head, projections.AccountsProjectionName)
}

// Search returns a search service over the core's indexes, which treats
// an index being rebuilt live as down (search.Options.Rebuilding). Hybrid
// fusion follows the backend pair (search.Fusion, "Per backend pair"):
// Meilisearch's scores are relative, Qdrant's are the embedded cosines.
func (s *Core) Search(embedder search.Embedder, opts search.Options) (*search.Service, error) {
	opts.RelativeKeywordScores = s.indexes.Keyword == Meilisearch
	indexProjection := map[string]string{search.SideKeyword: projections.KeywordProjectionName, search.SideVector: projections.VectorsProjectionName}
	opts.Rebuilding = func(side string) bool { return s.Engine.Rebuilding(indexProjection[side]) }
	keyword, vectors := s.KeywordIndex, s.VectorIndex
	if s.observe.Keyword != nil {
		keyword = s.observe.Keyword(keyword, cmp.Or(s.indexes.Keyword, Embedded))
	}
	if s.observe.Vector != nil {
		vectors = s.observe.Vector(vectors, cmp.Or(s.indexes.Vector, Embedded))
	}
	return search.New(keyword, vectors, s.Vectors, embedder, s.Memories, s.Logger, opts)
}

// Backends reports each search index backend's readiness (nil: ready),
// keyed "keyword_index" and "vector_index".
func (s *Core) Backends(ctx context.Context) map[string]error {
	return map[string]error{
		"keyword_index": s.KeywordIndex.Ready(ctx),
		"vector_index":  s.VectorIndex.Ready(ctx),
	}
}

// Close releases the indexes, the database and then the data dir.
func (s *Core) Close() error {
	if s.Engine != nil {
		// A clean stop saves the images of the indexes changed since
		// their last ones, so the next start re-reads nothing.
		if err := s.Engine.SaveSnapshots(context.Background()); err != nil {
			s.Logger.Warn("index snapshots not saved at close", "error", err)
		}
	}
	s.closeIndexes()
	s.closeReadModels()
	s.closeLog()
	return errors.Join(s.DB.Close(), s.Owner.Release())
}

// StorageFull returns why the storage is full, nil while it has room (and
// for a core opened read-only, which writes nothing).
func (s *Core) StorageFull(ctx context.Context) error {
	if s.Storage == nil {
		return nil
	}
	return s.Storage.Full(ctx)
}

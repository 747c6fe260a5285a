package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// KeywordProjectionName keys the keyword projection's checkpoint.
const KeywordProjectionName = "keyword"

// Keyword maps memory events to keyword index documents: a searchable
// memory of a live agent is a document of its indexed text and metadata;
// an update or patch replaces it; forgetting flags it (it then matches only
// searches that include forgotten memories) and recovering clears the
// flag; purging it, or deleting its agent, removes it.
type Keyword struct {
	state  domain.KeywordState
	index  domain.KeywordIndex
	logger *slog.Logger
	// loadIndex: the index keeps nothing across restarts (the embedded
	// one), so Position first fills it from the state.
	loadIndex bool
	// events decodes the events no engine decoded (see Events).
	events *domain.EventRegistry

	loadMu sync.Mutex
	loaded bool

	snap *snapshotState
	// readLog is the engine's reader of the log (readLogWith).
	readLog logReader
	// skipIndex: this process does not search the index (SkipIndex).
	skipIndex bool
}

// NewKeyword returns the keyword projection writing to index. With
// loadIndex, the index is filled from state when the projection starts.
func NewKeyword(state domain.KeywordState, index domain.KeywordIndex, loadIndex bool, logger *slog.Logger) *Keyword {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Keyword{state: state, index: index, logger: logger, loadIndex: loadIndex, events: Events()}
}

// UseSnapshots makes an in-process index start from cfg.Restored (when
// set) and be saved in snapshots. Call it before the projection starts.
func (p *Keyword) UseSnapshots(cfg Snapshots) {
	p.snap = &snapshotState{cfg: cfg, restored: cfg.Restored, read: p.readLog}
}

// readLogWith implements logReading: the snapshots' tails and event ids
// are read through the engine's reader.
func (p *Keyword) readLogWith(read logReader) {
	p.readLog = read
	p.snap.readLogWith(read)
}

// Name implements Projection.
func (p *Keyword) Name() string { return KeywordProjectionName }

// Position implements Projection; the engine asks before it feeds events,
// so this is where an in-process index is loaded.
func (p *Keyword) Position(ctx context.Context) (uint64, error) {
	if !p.skipIndex {
		if err := p.Load(ctx); err != nil {
			return 0, err
		}
	}
	return p.state.KeywordCheckpoint(ctx)
}

// Reset implements Projection.
func (p *Keyword) Reset(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if err := p.index.DropAll(ctx); err != nil {
		return fmt.Errorf("keyword: drop index: %w", err)
	}
	if err := p.state.ResetKeyword(ctx); err != nil {
		return err
	}
	if err := p.snap.dropped(ctx, KeywordProjectionName); err != nil {
		return err
	}
	p.loaded = true
	return nil
}

// Apply implements Projection: the index writes are made before the state
// and checkpoint commit.
func (p *Keyword) Apply(ctx context.Context, events []domain.Event) error {
	return applyIndexed(ctx, p, p.skipIndex, p.snap, events)
}

// applyTo implements indexProjection.
func (p *Keyword) applyTo(ctx context.Context, events []domain.Event, writeIndex bool) error {
	var w indexWrites // without writeIndex, discarded: the index is refilled from the state
	var flush func(context.Context) error
	if writeIndex {
		flush = func(ctx context.Context) error { return w.flush(ctx, p.index, nil, p.logger) }
	}
	p.events.DecodeAll(events)
	return p.state.ApplyKeyword(ctx, events, func(ctx context.Context, tx domain.KeywordStateTx, e domain.Event) error {
		return p.apply(ctx, tx, e, &w)
	}, flush)
}

// checkpointKey implements checkpointed: the state's checkpoint row, when
// a replay reads nothing else (a derived index's state position, or the
// Position of a projection that loads no index).
func (p *Keyword) checkpointKey() (domain.CheckpointTable, string, bool) {
	if !p.indexFromState() && !p.skipIndex {
		return nil, "", false
	}
	return keyOf(p.state)
}

// indexFromState implements derivedIndex.
func (p *Keyword) indexFromState() bool { return p.loadIndex && !p.skipIndex }

// statePosition implements derivedIndex.
func (p *Keyword) statePosition(ctx context.Context) (uint64, error) {
	return p.state.KeywordCheckpoint(ctx)
}

// dropIndex implements derivedIndex.
func (p *Keyword) dropIndex(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	p.loaded = false
	if err := p.snap.dropped(ctx, KeywordProjectionName); err != nil {
		return err
	}
	if err := p.index.DropAll(ctx); err != nil {
		return fmt.Errorf("keyword: drop index: %w", err)
	}
	return nil
}

// UnitOfWork implements unitOfWorker.
func (p *Keyword) UnitOfWork() domain.UnitOfWork { return unitOfWorkOf(p.state) }

// Load fills an in-process index from the state, once: from the image
// it was restored from and the memories changed after it when it was
// (UseSnapshots), else from the whole state.
func (p *Keyword) Load(ctx context.Context) error {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	if p.loaded || !p.loadIndex {
		return nil
	}
	if p.snap != nil && p.snap.restored != nil {
		tag := *p.snap.restored
		p.snap.restored = nil
		err := p.catchUp(ctx, tag)
		if err == nil {
			p.snap.started.Store(&tag)
			p.loaded = true
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		p.logger.Warn("keyword index snapshot not used: refilling the index from the state", "error", err)
		if err := p.index.DropAll(ctx); err != nil {
			return fmt.Errorf("keyword: drop index: %w", err)
		}
	}
	if err := p.refill(ctx); err != nil {
		return err
	}
	p.snap.filled()
	p.loaded = true
	return nil
}

// catchUp brings an index restored from the image tag up to the state
// (snapshotState.catchUp): each changed memory is re-read from the state
// and upserted, or deleted when the state no longer keeps it.
func (p *Keyword) catchUp(ctx context.Context, tag domain.IndexSnapshot) error {
	statePos, err := p.state.KeywordCheckpoint(ctx)
	if err != nil {
		return err
	}
	return p.snap.catchUp(ctx, KeywordProjectionName, tag, statePos, p.index, nil, p.reread, p.logger)
}

// reread replaces what the index holds of the changed memories with the
// state's documents of them.
func (p *Keyword) reread(ctx context.Context, changed changedMemories) error {
	kept := make(map[string]bool, len(changed.ids))
	err := p.state.LoadKeywordOf(ctx, changed.ids, func(s domain.KeywordSource) error {
		kept[s.MemoryID] = true
		if scope := changed.scopes[s.MemoryID]; scope != (domain.IndexScope{UserID: s.UserID, AgentID: s.AgentID}) {
			if err := p.index.DeleteMemory(ctx, scope, s.MemoryID); err != nil {
				return err
			}
		}
		return p.index.UpsertDocuments(ctx, keywordDocument(s))
	})
	if err != nil {
		return err
	}
	for _, id := range changed.ids {
		if !kept[id] {
			if err := p.index.DeleteMemory(ctx, changed.scopes[id], id); err != nil {
				return err
			}
		}
	}
	return nil
}

// StartedFrom reports the snapshot the index started from (ok false: it
// was filled from the state, or dropped since).
func (p *Keyword) StartedFrom() (domain.IndexSnapshot, bool) { return p.snap.startedFrom() }

// snapshotDue implements snapshotter.
func (p *Keyword) snapshotDue(stopping bool) bool { return p.loadIndex && p.snap.due(stopping) }

// SaveSnapshot writes the index's image now (UseSnapshots; else nothing).
func (p *Keyword) SaveSnapshot(ctx context.Context) error {
	return p.snap.save(ctx, KeywordProjectionName, p.index, p.isLoaded, p.state.KeywordCheckpoint, p.logger)
}

func (p *Keyword) isLoaded() bool {
	p.loadMu.Lock()
	defer p.loadMu.Unlock()
	return p.loaded
}

// refill fills the index from the whole state.
func (p *Keyword) refill(ctx context.Context) error {
	const batch = 1024
	docs := make([]domain.KeywordDocument, 0, batch)
	flush := func() error {
		err := p.index.UpsertDocuments(ctx, docs...)
		docs = docs[:0]
		return err
	}
	err := p.state.LoadKeyword(ctx, func(s domain.KeywordSource) error {
		docs = append(docs, keywordDocument(s))
		if len(docs) == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("keyword: load index: %w", err)
	}
	return nil
}

func keywordDocument(s domain.KeywordSource) domain.KeywordDocument {
	return domain.KeywordDocument{
		MemoryID: s.MemoryID, UserID: s.UserID, AgentID: s.AgentID, Type: s.Type, Tags: s.Tags,
		CreatedAt: s.CreatedAt, Text: s.Text, Meta: s.Meta, TextHash: memory.TextHash(s.Text + "\x00" + s.Meta),
		Forgotten: s.Forgotten,
	}
}

func (p *Keyword) apply(ctx context.Context, tx domain.KeywordStateTx, e domain.Event, w *indexWrites) error {
	payload, err := e.Decoded()
	if err != nil {
		return err
	}
	switch d := payload.(type) {
	case *memory.AgentCreated:
		ev := *d
		return tx.PutAgent(ctx, scopeOf(ev.AgentRef))
	case *memory.MemoryCreated:
		ev := *d
		return p.created(ctx, tx, ev, w)
	case *memory.MemoryUpdated:
		ev := *d
		return p.change(ctx, tx, ev.AgentRef, ev.MemoryID, w, func(src *domain.KeywordSource) error {
			src.Content, src.Tags = ev.Content, ev.Tags
			return nil
		})
	case *memory.MemoryPatched:
		ev := *d
		// A patch names the changed fields only: apply them to the stored
		// content, as the memories read model does.
		return p.change(ctx, tx, ev.AgentRef, ev.MemoryID, w, func(src *domain.KeywordSource) error {
			if ev.Tags != nil {
				src.Tags = *ev.Tags
			}
			if ev.Content == nil {
				return nil
			}
			content, err := memory.ApplyContentChanges(memory.Type(src.Type), src.Content, ev.Content)
			src.Content = content
			return err
		})
	case *memory.MemoryForgotten:
		ev := *d
		return p.change(ctx, tx, ev.AgentRef, ev.MemoryID, w, func(src *domain.KeywordSource) error {
			src.Forgotten = true
			return nil
		})
	case *memory.MemoryRecovered:
		ev := *d
		// The event carries the memory as it stands.
		return p.change(ctx, tx, ev.AgentRef, ev.MemoryID, w, func(src *domain.KeywordSource) error {
			src.Content, src.Tags, src.Forgotten = ev.Content, ev.Tags, false
			return nil
		})
	case *memory.MemoryPurged:
		ev := *d
		return p.deleted(ctx, tx, ev.AgentRef, ev.MemoryID, w)
	case *memory.AgentDeleted:
		ev := *d
		scope := scopeOf(ev.AgentRef)
		if err := tx.DeleteAgent(ctx, scope); err != nil {
			return err
		}
		w.do(func(ctx context.Context) error { return p.index.DeleteAgent(ctx, scope) })
	}
	return nil
}

func (p *Keyword) created(ctx context.Context, tx domain.KeywordStateTx, ev memory.MemoryCreated, w *indexWrites) error {
	if !ev.Type.Searchable() {
		return nil
	}
	scope := scopeOf(ev.AgentRef)
	if ok, err := tx.AgentExists(ctx, scope); err != nil || !ok {
		return err // memory events of an agent deleted earlier are ignored
	}
	src, err := createdSource(ev)
	if err != nil {
		return err
	}
	src.MemoryID, src.UserID, src.AgentID, src.CreatedAt = ev.MemoryID, ev.UserID, ev.AgentID, ev.CreatedAt
	inserted, err := tx.InsertSource(ctx, src)
	if err != nil || !inserted {
		return err // a duplicate create changes nothing, as in the read model
	}
	w.upsertDocs(keywordDocument(src))
	return nil
}

// change re-indexes a kept memory after change edits its content, tags
// or forgotten flag.
func (p *Keyword) change(ctx context.Context, tx domain.KeywordStateTx, ref memory.AgentRef, id string, w *indexWrites,
	change func(src *domain.KeywordSource) error) error {
	old, ok, err := tx.Source(ctx, scopeOf(ref), id)
	if err != nil || !ok {
		return err // not indexed: a drive, or purged before
	}
	edited := old
	if err := change(&edited); err != nil {
		return err
	}
	src, err := keywordSource(memory.Type(old.Type), edited.Content, edited.Tags)
	if err != nil {
		return err
	}
	src.MemoryID, src.UserID, src.AgentID, src.CreatedAt = old.MemoryID, old.UserID, old.AgentID, old.CreatedAt
	src.Forgotten = edited.Forgotten
	if err := tx.UpdateSource(ctx, src); err != nil {
		return err
	}
	w.upsertDocs(keywordDocument(src))
	return nil
}

func (p *Keyword) deleted(ctx context.Context, tx domain.KeywordStateTx, ref memory.AgentRef, id string, w *indexWrites) error {
	scope := scopeOf(ref)
	deleted, err := tx.DeleteSource(ctx, scope, id)
	if err != nil || !deleted {
		return err
	}
	w.do(func(ctx context.Context) error { return p.index.DeleteMemory(ctx, scope, id) })
	return nil
}

// keywordSource is the indexed text and metadata of a memory's content.
func keywordSource(t memory.Type, content json.RawMessage, tags []string) (domain.KeywordSource, error) {
	text, err := memory.IndexedText(t, content)
	if err != nil {
		return domain.KeywordSource{}, err
	}
	meta, err := memory.IndexedMetadata(t, content, tags)
	if err != nil {
		return domain.KeywordSource{}, err
	}
	return domain.KeywordSource{Type: string(t), Tags: tags, Content: content, Text: text, Meta: meta}, nil
}

// createdSource is keywordSource of a created memory, from the values
// its decoding derived when it did (decodeShared).
func createdSource(ev memory.MemoryCreated) (domain.KeywordSource, error) {
	d := ev.Derived
	if d == nil {
		return keywordSource(ev.Type, ev.Content, ev.Tags)
	}
	return domain.KeywordSource{Type: string(ev.Type), Tags: ev.Tags, Content: ev.Content, Text: d.Text, Meta: d.Metadata}, nil
}

func scopeOf(ref memory.AgentRef) domain.IndexScope {
	return domain.IndexScope{UserID: ref.UserID, AgentID: ref.AgentID}
}

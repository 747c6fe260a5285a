package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/domain/processing"
)

// The two forms of an export (docs/operations.md#export-and-import).
const (
	// ExportEvents is the lossless form: the agent's events, vectors
	// included, in log order.
	ExportEvents = "events"
	// ExportMemories is each memory's current state, for other tools.
	ExportMemories = "memories"
	// ExportVersion is the version of the export format the header names.
	ExportVersion = 1
	// exportPage is how many events or memories an export reads at once.
	exportPage = 500
	// MaxImportLine bounds one line of an import: an event with a vector
	// of the largest dimensions sync carries fits easily.
	MaxImportLine = 1 << 20
)

// ExportHeader is the first line of an export: its form and where it
// came from. An import records it in the audit (memory.AgentImported).
type ExportHeader struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	AgentID    string    `json:"agent_id"`
	Origin     string    `json:"origin"`
	ExportedAt time.Time `json:"exported_at"`
}

// ExportLine is one line of an export: exactly one of its fields is set.
// The header comes first; an events export continues with events in log
// order (those of the agent's memory stream and its cognition stream,
// suggestions included), a memories export with memories.
type ExportLine struct {
	Header *ExportHeader `json:"header,omitempty"`
	Event  *SyncEvent    `json:"event,omitempty"`
	Memory *memory.View  `json:"memory,omitempty"`
}

// SuggestionOwners tells whom a suggestion id belongs to, across users
// (suggestion ids are global); the suggestions read models implement it.
type SuggestionOwners interface {
	SuggestionOwner(ctx context.Context, id string) (userID, agentID string, found bool, err error)
}

// TransferDeps are the dependencies of Transfer.
type TransferDeps struct {
	// Sync appends imported events under the rules a sync push obeys.
	Sync        *Sync
	Suggestions SuggestionOwners
}

// Transfer exports an agent as JSON Lines and imports such a file into an
// agent: the import re-homes everything to the importing user and agent,
// keeps ids where they are free and maps them consistently where the
// server holds them already, and obeys the checks and quotas of a sync
// push (pushPlan), all or nothing.
type Transfer struct {
	d TransferDeps
}

// NewTransfer returns the export and import commands.
func NewTransfer(d TransferDeps) (*Transfer, error) {
	if d.Sync == nil || d.Suggestions == nil {
		return nil, errors.New("commands: transfer needs the sync commands and the suggestion owners")
	}
	return &Transfer{d: d}, nil
}

func (t *Transfer) memories() *Memories { return t.d.Sync.d.Memories }

// Export writes the user's agent to emit, one line at a time: the header,
// then the events (format ExportEvents, the default) or the memories
// (ExportMemories). It reads the log and the read model in pages, so its
// memory does not grow with the agent. Nothing is emitted before the
// agent is found: another user's agent is not found.
func (t *Transfer) Export(ctx context.Context, userID, agentID, format, origin string, emit func(ExportLine) error) error {
	if format == "" {
		format = ExportEvents
	}
	if format != ExportEvents && format != ExportMemories {
		return domain.Invalid("format", "format must be %q (the default, lossless) or %q, got %q", ExportEvents, ExportMemories, format)
	}
	if memory.ValidateAgentID(agentID) != nil {
		return domain.NotFound("agent")
	}
	m := t.memories()
	agent, found, err := m.cfg.Reader.Agent(ctx, userID, agentID)
	if err != nil {
		return err
	}
	if !found {
		return domain.NotFound("agent")
	}
	now := m.now()
	if err := emit(ExportLine{Header: &ExportHeader{Format: format, Version: ExportVersion, AgentID: agentID, Origin: origin, ExportedAt: now}}); err != nil {
		return err
	}
	if format == ExportMemories {
		return t.exportMemories(ctx, userID, agentID, now, emit)
	}
	return t.exportEvents(ctx, agent, emit)
}

// exportMemories emits every memory of the agent, forgotten and weak ones
// included, newest first.
func (t *Transfer) exportMemories(ctx context.Context, userID, agentID string, now time.Time, emit func(ExportLine) error) error {
	q := memory.ListQuery{UserID: userID, AgentID: agentID, IncludeForgotten: true, IncludeWeak: true, Now: now, Limit: exportPage}
	for {
		page, err := t.memories().cfg.Reader.ListMemories(ctx, q)
		if err != nil {
			return err
		}
		for i := range page.Memories {
			page.Memories[i].ApplyStrength(now)
			if err := emit(ExportLine{Memory: &page.Memories[i]}); err != nil {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		q.Cursor = page.NextCursor
	}
}

// exportEvents emits the events of the agent as it exists now (not those
// of an earlier agent of the same name that was deleted) from its memory
// stream and its cognition stream, merged in log order.
func (t *Transfer) exportEvents(ctx context.Context, agent memory.AgentView, emit func(ExportLine) error) error {
	log := t.d.Sync.d.Log
	mem := &streamPages{log: log, stream: memory.AgentStream(agent.UserID, agent.AgentID)}
	cog := &streamPages{log: log, stream: processing.Stream(agent.UserID, agent.AgentID)}
	current := false // whether the memory stream reached this agent's creation
	for {
		a, okA, err := mem.peek(ctx)
		if err != nil {
			return err
		}
		c, okC, err := cog.peek(ctx)
		if err != nil {
			return err
		}
		var e domain.Event
		switch {
		case !okA && !okC:
			return nil
		case okA && (!okC || a.Position < c.Position):
			e = mem.next()
			if !current {
				if current, err = createdThisAgent(e, agent.CreatedAt); err != nil || !current {
					if err != nil {
						return err
					}
					continue
				}
			}
		default:
			e = cog.next()
			var ref processing.AgentRef
			if err := json.Unmarshal(e.Payload, &ref); err != nil {
				return fmt.Errorf("commands: export: event %s: %w", e.ID, err)
			}
			if !ref.AgentCreatedAt.Equal(agent.CreatedAt) {
				continue // an earlier agent's
			}
		}
		se, err := ToSyncEvent(e)
		if err != nil {
			return err
		}
		if err := emit(ExportLine{Event: &se}); err != nil {
			return err
		}
	}
}

// agentCreations decodes the events that create an agent, and no other
// (an export looks for its agent's among all of the stream's); it never
// changes.
var agentCreations = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.AgentCreated]()})

// createdThisAgent reports whether e creates the agent created at createdAt.
func createdThisAgent(e domain.Event, createdAt time.Time) (bool, error) {
	payload, err := agentCreations.Decode(e).Decoded()
	if err != nil {
		return false, fmt.Errorf("commands: export: event %s: %w", e.ID, err)
	}
	a, ok := payload.(*memory.AgentCreated)
	return ok && a.CreatedAt.Equal(createdAt), nil
}

// streamPages reads one stream in pages of exportPage events.
type streamPages struct {
	log    SyncLog
	stream string
	from   uint64
	buf    []domain.Event
	done   bool
}

func (s *streamPages) peek(ctx context.Context) (domain.Event, bool, error) {
	if len(s.buf) == 0 && !s.done {
		page, err := s.log.ReadStreamPage(ctx, s.stream, s.from, exportPage)
		if err != nil {
			return domain.Event{}, false, err
		}
		s.buf, s.from = page, s.from+uint64(len(page))
		s.done = len(page) < exportPage
	}
	if len(s.buf) == 0 {
		return domain.Event{}, false, nil
	}
	return s.buf[0], true, nil
}

func (s *streamPages) next() domain.Event {
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e
}

// ReadImport reads an import body: JSON Lines of ExportLine, an optional
// header first, then either events or memories (not both). Blank lines
// are skipped; every line is decoded strictly, and an error names the
// line (1-based, as editors count).
func ReadImport(r io.Reader) (ExportHeader, []ExportLine, error) {
	var header ExportHeader
	var lines []ExportLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxImportLine)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var l ExportLine
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return header, nil, lineError(n, domain.Invalid("line", "not a line of an Engram export: %v", err))
		}
		set := 0
		for _, present := range []bool{l.Header != nil, l.Event != nil, l.Memory != nil} {
			if present {
				set++
			}
		}
		switch {
		case set != 1:
			return header, nil, lineError(n, domain.Invalid("line", "a line holds exactly one of header, event and memory"))
		case l.Header != nil && (len(lines) > 0 || header.Format != ""):
			return header, nil, lineError(n, domain.Invalid("header", "the header must be the first line"))
		case l.Header != nil:
			if l.Header.Format != ExportEvents && l.Header.Format != ExportMemories {
				return header, nil, lineError(n, domain.Invalid("header.format", "format must be %q or %q, got %q", ExportEvents, ExportMemories, l.Header.Format))
			}
			if l.Header.Version != ExportVersion {
				return header, nil, lineError(n, domain.Invalid("header.version", "this server reads export version %d, got %d", ExportVersion, l.Header.Version))
			}
			header = *l.Header
			continue
		}
		format := ExportEvents
		if l.Memory != nil {
			format = ExportMemories
		}
		if header.Format == "" {
			header.Format = format
		}
		if header.Format != format {
			return header, nil, lineError(n, domain.Invalid("line", "this file is a %s export: a %s line cannot be in it", header.Format, format))
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return header, nil, lineError(n+1, domain.Errorf(domain.KindTooLarge, "a line is longer than %d bytes", MaxImportLine).WithDetail("limit", MaxImportLine))
		}
		return header, nil, err
	}
	if len(lines) == 0 {
		return header, nil, domain.Invalid("body", "the import holds no events or memories")
	}
	return header, lines, nil
}

// lineError places err at line n of the import.
func lineError(n int, err error) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	c := *de
	c.Message = fmt.Sprintf("line %d: %s", n, de.Message)
	return c.WithDetail("line", n)
}

// ImportResult counts what an import did.
type ImportResult struct {
	Format     string `json:"format"`
	Appended   int    `json:"appended"`   // events now in the log (for a memories import, the events its memories became)
	Duplicates int    `json:"duplicates"` // events the agent holds already: an import repeated
	Skipped    int    `json:"skipped"`    // events an import does not carry (agent deletes, model switches, changes of memories not in the agent)
	Remapped   int    `json:"remapped"`   // memory and suggestion ids the server held for another agent, given new ids
}

// Import appends an export (the lines ReadImport read, with its header) to
// the user's agent, all or nothing: every line is checked, as a sync push
// checks events (quotas, the agent's state, provenance, time bounds,
// vectors, field limits), before anything is appended. The events are
// re-homed to the user and agentID; the actor is the importer, and an
// AgentImported event records the export's origin for the audit.
//
// Ids are kept where they are free. A memory or suggestion id the server
// holds for another user or agent, and an event id another stream holds,
// is mapped to an id derived from it and the target agent, the same on
// every import, and every reference (derived_from, suggestion sources,
// promotions) follows the mapping. Events the agent holds already are
// duplicates: importing a file twice changes nothing.
//
// The cognition events (suggestions, processing passes and settings,
// anxiety levels) go to the agent's cognition stream, before the memory
// events, so that a promotion finds its suggestion, in the same write
// (commit).
func (t *Transfer) Import(ctx context.Context, meta domain.Metadata, agentID string, header ExportHeader, lines []ExportLine) (ImportResult, error) {
	meta.Source = domain.SourceImport
	userID, err := userOf(meta)
	if err != nil {
		return ImportResult{}, err
	}
	if err := memory.ValidateAgentID(agentID); err != nil {
		return ImportResult{}, err
	}
	ref := memory.AgentRef{UserID: userID, AgentID: agentID}
	live, err := t.incarnationOf(ctx, ref)
	if err != nil {
		return ImportResult{}, err
	}
	elsewhere, err := t.createdElsewhere(ctx, live, lines)
	if err != nil {
		return ImportResult{}, err
	}
	ids, err := t.mapIDs(ctx, ref, live, lines, elsewhere)
	if err != nil {
		return ImportResult{}, err
	}
	var events []SyncEvent
	var at []int // the line of each event, for errors
	for _, i := range importOrder(lines) {
		l := lines[i]
		evs, err := t.eventsOf(l, ids)
		if err != nil {
			return ImportResult{}, lineError(i+1+headerLines(header), err)
		}
		for range evs {
			at = append(at, i)
		}
		events = append(events, evs...)
	}
	if err := ids.mapEventIDs(ctx, t.d.Sync.d.Log, live, events); err != nil {
		return ImportResult{}, err
	}
	memEvents, cogEvents, memAt, cogAt := splitStreams(events, at)
	s := t.d.Sync
	return untilDecided(ctx, s, agentID, func() (ImportResult, error) {
		res := ImportResult{Format: header.Format, Remapped: ids.remapped}
		d, err := s.decide(ctx, meta, ref, memEvents, ids.owned)
		if err != nil {
			return res, atLine(err, memAt, header)
		}
		p := d.plan
		res.Duplicates, res.Skipped = d.res.Duplicates, d.res.Skipped
		cog, err := newCognitionPlan(ctx, t, p, cogEvents)
		if err != nil {
			return res, err
		}
		for i, ev := range cogEvents {
			if err := cog.add(ctx, ev); err != nil {
				return res, atLine(BatchItemErrorIn("events", i, err), cogAt, header)
			}
		}
		res.Duplicates += cog.duplicates
		appended := len(p.out) - p.synthesized + len(cog.out)
		if appended == 0 {
			return res, nil
		}
		if err := p.append(uuid.NewString(), p.now, memory.AgentImported{AgentRef: ref, Origin: header.Origin, SourceAgentID: header.AgentID,
			Format: header.Format, ExportedAt: header.ExportedAt, Events: appended, ImportedAt: p.now}); err != nil {
			return res, err
		}
		if err := t.commit(ctx, d, cog); err != nil {
			return res, err
		}
		res.Appended = appended
		return res, nil
	})
}

// commit appends an import in one write: the cognition events first (a
// promotion must find its suggestion), then the memory events, each
// stream at the version it was decided at. On SQLite, PostgreSQL and
// KurrentDB 25.1 and later the two are stored together or not at all; on
// an older KurrentDB, which appends one stream at a time, a refused memory
// part leaves the cognition part, which repeating the import completes
// (domain.EventStore.AppendStreams).
func (t *Transfer) commit(ctx context.Context, d pushDecision, cog *cognitionPlan) error {
	var parts []domain.StreamAppend
	if len(cog.out) > 0 {
		parts = append(parts, domain.StreamAppend{Stream: cog.stream, Expected: cog.version, Events: cog.out})
	}
	parts = append(parts, domain.StreamAppend{Stream: d.stream, Expected: d.version, Events: d.plan.out})
	w := t.d.Sync.d.Writer
	appended, err := w.Store().AppendStreams(ctx, parts)
	if err != nil {
		// A memory id the log has claimed that no read model shows (see
		// Sync.commit) refuses the whole import.
		return takenMemoryID(err)
	}
	return w.Await(ctx, appended[len(appended)-1].LastPosition)
}

// importOrder is the order the lines are imported in: events in the
// order of the file (the log's), memories oldest first, so that each
// memory's derived_from names memories imported before it.
func importOrder(lines []ExportLine) []int {
	order := make([]int, len(lines))
	for i := range order {
		order[i] = i
	}
	if len(lines) > 0 && lines[0].Memory != nil {
		sort.SliceStable(order, func(a, b int) bool {
			return lines[order[a]].Memory.CreatedAt.Before(lines[order[b]].Memory.CreatedAt)
		})
	}
	return order
}

// headerLines is 1 when the import had a header line, else 0.
func headerLines(h ExportHeader) int {
	if h.Version != 0 {
		return 1
	}
	return 0
}

// atLine turns an error about events[i] into one about the line the event
// came from.
func atLine(err error, at []int, h ExportHeader) error {
	de, ok := domain.AsError(err)
	if !ok {
		return err
	}
	i, ok := de.Details["index"].(int)
	if !ok || i < 0 || i >= len(at) {
		return err
	}
	c := *de
	delete(c.Details, "index")
	c.Message = strings.TrimPrefix(c.Message, fmt.Sprintf("events[%d]: ", i))
	if f, ok := c.Details["field"].(string); ok {
		c = *c.WithDetail("field", strings.TrimPrefix(f, fmt.Sprintf("events[%d].", i)))
	}
	return lineError(at[i]+1+headerLines(h), &c)
}

// cognitionEvents are the events of an agent's cognition stream an
// import carries: processing's; it never changes.
var cognitionEvents = domain.MustEventRegistry(processing.Events())

// splitStreams separates the events of the memory stream from those of
// the cognition stream, keeping the line of each.
func splitStreams(events []SyncEvent, at []int) (mem, cog []SyncEvent, memAt, cogAt []int) {
	for i, ev := range events {
		if cognitionEvents.Knows(ev.Type) {
			cog, cogAt = append(cog, ev), append(cogAt, at[i])
		} else {
			mem, memAt = append(mem, ev), append(memAt, at[i])
		}
	}
	return mem, cog, memAt, cogAt
}

// importIDSpace derives the ids an import gives what the server holds
// already (uuid v5).
var importIDSpace = uuid.MustParse("6f1c7a52-3c55-4d1e-9a0e-2f5b3d7c9e41")

// incarnation tells the events of the agent as it lives now from those of
// an earlier agent of the same name that was deleted: the log keeps those
// in the same two streams, before the agent's last AgentDeleted. An import
// judges duplicates among the live agent's events only, so restoring an
// export into the agent it was taken from, after deleting it, restores it
// whole (its old events, memory ids and suggestion ids get ids of their
// own, as if another stream held them).
type incarnation struct {
	mem, cog  string
	deletedAt uint64 // the position of the last AgentDeleted; 0: never deleted
}

func (t *Transfer) incarnationOf(ctx context.Context, ref memory.AgentRef) (incarnation, error) {
	in := incarnation{mem: memory.AgentStream(ref.UserID, ref.AgentID), cog: processing.Stream(ref.UserID, ref.AgentID)}
	var err error
	in.deletedAt, err = t.d.Sync.d.Log.LastOfType(ctx, in.mem, memory.AgentDeleted{}.EventType())
	return in, err
}

// stream is the agent's stream for an event of type typ.
func (in incarnation) stream(typ string) string {
	if cognitionEvents.Knows(typ) {
		return in.cog
	}
	return in.mem
}

// outside reports whether the log's event at p, with the id of an
// imported event of type typ, is not the live agent's event of that id.
func (in incarnation) outside(p domain.EventPlace, typ string) bool {
	return p.Stream != in.stream(typ) || p.Position <= in.deletedAt
}

// idMap maps the ids of an export to those of the import.
type idMap struct {
	ref memory.AgentRef
	// epoch is the live agent's incarnation (its last deletion's
	// position), part of every derived id once the agent was deleted, so
	// that a second restore does not meet the ids of the first.
	epoch    uint64
	ids      map[string]string
	remapped int
	// owned says, for every memory id the import names after the mapping,
	// whether a memory has it (read in two queries, not one per id).
	owned map[string]bool
}

// derive is the id an import into ref gives id of kind.
func (m *idMap) derive(kind, id string) string {
	name := kind + "\x00" + m.ref.UserID + "\x00" + m.ref.AgentID + "\x00" + id
	if m.epoch > 0 {
		name += "\x00" + strconv.FormatUint(m.epoch, 10)
	}
	return uuid.NewSHA1(importIDSpace, []byte(name)).String()
}

func (m *idMap) id(id string) string {
	if to, ok := m.ids[id]; ok {
		return to
	}
	return id
}

// ref maps the id of a "type:id" reference.
func (m *idMap) refString(r string) string {
	typ, id, ok := strings.Cut(r, ":")
	if !ok {
		return r
	}
	return typ + ":" + m.id(id)
}

// mapIDs decides the ids of the memories and suggestions the lines
// create or name: an id is kept when it is free or already the agent's (an
// import repeated, or an earlier request of a chunked import), and derived
// from it and the agent when the server holds it for another user or
// agent, so the same id maps the same way in every request. A memory
// accepted from a suggestion takes the id the acceptance gives it
// (PromotedMemoryID) from the suggestion's new id.
func (t *Transfer) mapIDs(ctx context.Context, ref memory.AgentRef, live incarnation, lines []ExportLine, elsewhere map[string]bool) (*idMap, error) {
	m := &idMap{ref: ref, epoch: live.deletedAt, ids: map[string]string{}}
	memIDs, sugIDs := map[string]bool{}, map[string]bool{}
	promoted := map[string]string{} // memory id → the suggestion it was accepted from
	for _, l := range lines {
		if l.Memory != nil {
			memIDs[l.Memory.ID] = true
			for _, r := range l.Memory.DerivedFrom {
				_, id, _ := strings.Cut(r, ":")
				memIDs[id] = true
			}
			continue
		}
		var named struct {
			MemoryID     string                `json:"memory_id"`
			SuggestionID string                `json:"suggestion_id"`
			PromotedTo   string                `json:"promoted_to"`
			Promotes     *memory.Promotion     `json:"promotes"`
			Refs         []string              `json:"derived_from"`
			Sources      []string              `json:"sources"`
			Created      []string              `json:"created"`
			Suggestions  []string              `json:"suggestions"`
			Consumed     []processing.Consumed `json:"consumed"`
		}
		if err := json.Unmarshal(l.Event.Payload, &named); err != nil {
			continue // the line's own check reports it
		}
		refs := append(append(append([]string{named.PromotedTo}, named.Refs...), named.Sources...), named.Created...)
		for _, c := range named.Consumed {
			memIDs[c.ID] = true
			refs = append(refs, c.Into...)
		}
		for _, r := range refs {
			if _, id, ok := strings.Cut(r, ":"); ok {
				memIDs[id] = true
			}
		}
		if named.MemoryID != "" {
			memIDs[named.MemoryID] = true
		}
		if named.SuggestionID != "" {
			sugIDs[named.SuggestionID] = true
		}
		for _, id := range named.Suggestions {
			sugIDs[id] = true
		}
		if named.Promotes != nil {
			sugIDs[named.Promotes.SuggestionID] = true
			promoted[named.MemoryID] = named.Promotes.SuggestionID
		}
	}
	for id := range sugIDs {
		userID, agentID, found, err := t.d.Suggestions.SuggestionOwner(ctx, id)
		if err != nil {
			return nil, err
		}
		if elsewhere[id] || (found && (userID != ref.UserID || agentID != ref.AgentID)) {
			m.ids[id] = m.derive("suggestion", id)
			m.remapped++
		}
	}
	owners := t.d.Sync.d.Owners
	var named []string
	for id := range memIDs {
		if id != "" && !sugIDs[id] { // a pass's refs name suggestions as well as memories
			named = append(named, id)
		}
	}
	held, err := owners.OwnersOf(ctx, named)
	if err != nil {
		return nil, err
	}
	m.owned = make(map[string]bool, len(named))
	var derived []string
	for _, id := range named {
		if s, ok := promoted[id]; ok {
			if to, ok := m.ids[s]; ok {
				m.ids[id] = PromotedMemoryID(to)
				m.remapped++
				derived = append(derived, m.ids[id])
				continue
			}
		}
		owner, found := held[id]
		if elsewhere[id] || (found && owner != ref) {
			m.ids[id] = m.derive("memory", id)
			m.remapped++
			derived = append(derived, m.ids[id])
			continue
		}
		m.owned[id] = found
	}
	// A mapped id is held only if an earlier import of the same file
	// made it.
	held, err = owners.OwnersOf(ctx, derived)
	if err != nil {
		return nil, err
	}
	for _, id := range derived {
		_, m.owned[id] = held[id]
	}
	return m, nil
}

// idCreations are the events that create a memory or a suggestion, and
// with it its id; it never changes.
var idCreations = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.MemoryCreated](), domain.DecoderOf[processing.SuggestionCreated]()})

// createdElsewhere are the memories and suggestions whose creation, in
// the lines, is an event the log holds outside the live agent (another
// stream, or an earlier agent of the same name): the same event created
// them there, so their ids are taken for good (a memory id is claimed in
// the log, domain.MemoryClaim) even when no read model shows them any more
// (purged, or their agent deleted).
func (t *Transfer) createdElsewhere(ctx context.Context, live incarnation, lines []ExportLine) (map[string]bool, error) {
	creates := func(l ExportLine) bool { return l.Event != nil && idCreations.Knows(l.Event.Type) }
	var ids []string
	for _, l := range lines {
		if creates(l) {
			ids = append(ids, l.Event.ID)
		}
	}
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	places, err := t.d.Sync.d.Log.EventPlaces(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		if !creates(l) {
			continue
		}
		if at, ok := places[l.Event.ID]; ok && live.outside(at, l.Event.Type) {
			var created struct {
				MemoryID     string `json:"memory_id"`
				SuggestionID string `json:"suggestion_id"`
			}
			if json.Unmarshal(l.Event.Payload, &created) == nil {
				out[created.MemoryID+created.SuggestionID] = true
			}
		}
	}
	return out, nil
}

// mapEventIDs gives each event whose id the log holds outside the live
// agent (another stream, or an earlier agent of the same name) an id
// derived from it and the agent.
func (m *idMap) mapEventIDs(ctx context.Context, log SyncLog, live incarnation, events []SyncEvent) error {
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = ev.ID
	}
	places, err := log.EventPlaces(ctx, ids)
	if err != nil {
		return err
	}
	for i, ev := range events {
		if at, ok := places[ev.ID]; ok && live.outside(at, ev.Type) {
			events[i].ID = m.derive("event", ev.ID)
		}
	}
	return nil
}

// eventsOf is what one line of an import appends: an event with its ids
// mapped, or the events that make a memory of a memories export.
func (t *Transfer) eventsOf(l ExportLine, ids *idMap) ([]SyncEvent, error) {
	if l.Memory != nil {
		return t.memoryEvents(*l.Memory, ids)
	}
	ev := *l.Event
	if err := checkCanonicalUUID("event.id", ev.ID); err != nil {
		return nil, err
	}
	payload, err := remapPayload(ev.Payload, ids)
	if err != nil {
		return nil, err
	}
	ev.Payload = payload
	return []SyncEvent{ev}, nil
}

// remapPayload maps the ids a payload holds: memory_id, suggestion_id,
// the references of derived_from, sources, created and promoted_to, a
// promotion's suggestion, a pass's suggestions and consumed sources. The
// names mean the same in every event type.
func remapPayload(raw json.RawMessage, ids *idMap) (json.RawMessage, error) {
	if len(ids.ids) == 0 {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, domain.Invalid("event.payload", "payload must be a JSON object: %v", err)
	}
	apply := func(name string, f func(v any) any, v any) error {
		r, ok := fields[name]
		if !ok || bytes.Equal(r, []byte("null")) {
			return nil
		}
		if err := json.Unmarshal(r, v); err != nil {
			return domain.Invalid("event.payload."+name, "%s has the wrong type: %v", name, err)
		}
		out, err := json.Marshal(f(v))
		if err != nil {
			return err
		}
		fields[name] = out
		return nil
	}
	idOf := func(v any) any { return ids.id(*v.(*string)) }
	refsOf := func(v any) any {
		refs := *v.(*[]string)
		for i, r := range refs {
			refs[i] = ids.refString(r)
		}
		return refs
	}
	idsOf := func(v any) any {
		list := *v.(*[]string)
		for i, id := range list {
			list[i] = ids.id(id)
		}
		return list
	}
	var s string
	var list []string
	var promotes memory.Promotion
	var consumed []processing.Consumed
	for _, step := range []error{
		apply("memory_id", idOf, &s),
		apply("suggestion_id", idOf, &s),
		apply("promoted_to", func(v any) any { return ids.refString(*v.(*string)) }, &s),
		apply("derived_from", refsOf, &list),
		apply("sources", refsOf, &list),
		apply("created", refsOf, &list),
		apply("suggestions", idsOf, &list),
		apply("promotes", func(v any) any {
			p := v.(*memory.Promotion)
			p.SuggestionID = ids.id(p.SuggestionID)
			return p
		}, &promotes),
		apply("consumed", func(v any) any {
			for i := range consumed {
				consumed[i].ID = ids.id(consumed[i].ID)
				for j, r := range consumed[i].Into {
					consumed[i].Into[j] = ids.refString(r)
				}
			}
			return consumed
		}, &consumed),
	} {
		if step != nil {
			return nil, step
		}
	}
	return json.Marshal(fields)
}

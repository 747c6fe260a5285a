package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// Sync limits of the command line.
const (
	syncPushEvents   = 500     // events per push request
	syncPushBytes    = 3 << 20 // and at most this much JSON: under the server's body limit, and its payloads under the push limit (commands.DefaultMaxSyncPushBytes) even with one more event
	maxResolvedShown = 100     // resolutions kept in sync.json
)

// syncState is <stack>/sync.json: how far the stack's log and the cloud
// agent's log have been exchanged. Cursors count events of each stream.
// It belongs to one cloud account; another base URL or user starts from
// zero, which is safe because events keep their ids.
type syncState struct {
	BaseURL  string           `json:"base_url"`
	UserID   string           `json:"user_id"`
	Pushed   uint64           `json:"pushed"` // events of the local stream the cloud has
	Pulled   uint64           `json:"pulled"` // events of the cloud stream this stack has
	LastPush *time.Time       `json:"last_push"`
	LastPull *time.Time       `json:"last_pull"`
	Resolved []syncResolution `json:"resolved"`
}

// syncResolution records how a conflict between two changes of one memory
// was settled: the change later in the cloud's log wins.
type syncResolution struct {
	MemoryID string    `json:"memory_id"`
	Winner   string    `json:"winner"` // event id of the change that stands
	Loser    string    `json:"loser"`  // event id of the change it overrode
	Outcome  string    `json:"outcome"`
	At       time.Time `json:"at"`
}

const syncRule = "the change that is later in the cloud's log wins"

func (st *localStack) syncStatePath() string { return filepath.Join(st.dir, "sync.json") }

func (st *localStack) readSyncState(cl *cloud) (syncState, error) {
	fresh := syncState{BaseURL: cl.settings.baseURL, UserID: cl.creds.UserID, Resolved: []syncResolution{}}
	raw, err := os.ReadFile(st.syncStatePath())
	if errors.Is(err, fs.ErrNotExist) {
		return fresh, nil
	}
	if err != nil {
		return fresh, err
	}
	var s syncState
	if err := json.Unmarshal(raw, &s); err != nil {
		return fresh, fmt.Errorf("%s: %w", st.syncStatePath(), err)
	}
	if s.BaseURL != fresh.BaseURL || s.UserID != fresh.UserID {
		return fresh, nil
	}
	if s.Resolved == nil {
		s.Resolved = []syncResolution{}
	}
	return s, nil
}

// pushedEvents is how many of the stack's events have been pushed, by the
// stack's sync.json whichever account it belongs to (0 without one).
func (st *localStack) pushedEvents() uint64 {
	raw, err := os.ReadFile(st.syncStatePath())
	if err != nil {
		return 0
	}
	var s syncState
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	return s.Pushed
}

func (st *localStack) writeSyncState(s syncState) error {
	if len(s.Resolved) > maxResolvedShown {
		s.Resolved = s.Resolved[len(s.Resolved)-maxResolvedShown:]
	}
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(st.syncStatePath(), append(raw, '\n'), 0o600)
}

// syncSession is one sync command's stack, cloud and state.
type syncSession struct {
	c     *cli
	st    *localStack
	cloud *client.Client
	state syncState
	raw   bool // sync.raw: push raw entries
}

func syncCommand(ctx context.Context, c *cli, args []string) error {
	const usage = `Usage: engram [-s STACK] sync push|pull|status|run [flags]

  push     send the stack's new events to the cloud agent of the same id
  pull     fetch the cloud agent's new events into the stack (push first if anything is unpushed)
  run      push, then pull
  status   what is unpushed and unpulled, and the conflicts resolved so far

Events keep their ids, so an interrupted push or pull can be repeated. The cloud's log is the
order of record: of two changes of one memory, the later one there wins on every machine.
Raw entries are pushed only when sync.raw is true (engram config set sync.raw true).
`
	if c.isHelp(args, usage) {
		return nil
	}
	if len(args) == 0 {
		return usageErrorf("sync: say push, pull, run or status")
	}
	sub := args[0]
	if sub != "push" && sub != "pull" && sub != "run" && sub != "status" {
		return usageErrorf("sync: unknown subcommand %q (push, pull, run or status)", sub)
	}
	flags := c.flags("sync "+sub, "", "Replicate the stack's events with the cloud agent of the same id (see engram sync --help).")
	if _, err := c.parse(flags, args[1:], 0, 0); err != nil {
		return err
	}
	cl, err := c.loadCloud()
	if err != nil {
		return err
	}
	if err := cl.requireLogin(); err != nil {
		return err
	}
	s, err := c.openSync(ctx, cl)
	if err != nil {
		return err
	}
	defer s.st.close()
	var out any
	switch sub {
	case "push":
		out, err = s.push(ctx)
	case "pull":
		out, err = s.pull(ctx)
	case "run":
		var pushed syncPushJSON
		var pulled syncPullJSON
		if pushed, err = s.push(ctx); err == nil {
			pulled, err = s.pull(ctx)
		}
		out = map[string]any{"push": pushed, "pull": pulled}
	case "status":
		out, err = s.status(ctx)
	}
	if cloudUnreachable(err) {
		return fmt.Errorf("%w: %v", errCloudUnreachable, err)
	}
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(out)
	}
	printSync(c, out)
	return nil
}

func (c *cli) openSync(ctx context.Context, cl *cloud) (*syncSession, error) {
	settings, err := c.readConfigFile()
	if err != nil {
		return nil, err
	}
	raw, _ := configValue(settings, "sync.raw")
	st, err := c.openStack(ctx, true, writeParts)
	if err != nil {
		return nil, err
	}
	state, err := st.readSyncState(cl)
	if err != nil {
		st.close()
		return nil, err
	}
	return &syncSession{c: c, st: st, cloud: cl.client(time.Minute), state: state, raw: raw == "true"}, nil
}

// localStream is the stack's event log.
func (s *syncSession) localEvents(ctx context.Context, after uint64) ([]domain.Event, error) {
	return s.st.app.Core.Store.ReadStream(ctx, memory.AgentStream(localUserID, s.st.name), after)
}

// syncPushJSON is `sync push --json`.
type syncPushJSON struct {
	Sent        int    `json:"sent"`
	Appended    int    `json:"appended"`
	Duplicates  int    `json:"duplicates"`
	Skipped     int    `json:"skipped"`
	RawWithheld int    `json:"raw_withheld"` // events of raw entries, kept here while sync.raw is off
	Pushed      uint64 `json:"pushed"`
	CloudEvents uint64 `json:"cloud_events"`
	EventsPerS  int    `json:"events_per_second"`
}

// push sends the local events after the push cursor, in batches; the
// cursor advances after each acknowledged batch.
func (s *syncSession) push(ctx context.Context) (syncPushJSON, error) {
	start := time.Now()
	var out syncPushJSON
	all, err := s.localEvents(ctx, 0)
	if err != nil {
		return out, err
	}
	rawMemories := map[string]bool{}
	for _, e := range all {
		payload, err := memoryCreations.Decode(e).Decoded()
		if err != nil {
			return out, err
		}
		if m, ok := payload.(*memory.MemoryCreated); ok {
			rawMemories[m.MemoryID] = m.Type == memory.RawEntry
		}
	}
	pending := all[min(int(s.state.Pushed), len(all)):]
	bar := s.c.progress("pushed", len(pending))
	done := 0
	defer bar.finish()
	for len(pending) > 0 {
		var batch []client.SyncEvent
		n, size := 0, 0
		for n < len(pending) && len(batch) < syncPushEvents && size < syncPushBytes {
			e := pending[n]
			n++
			if !s.raw && rawMemories[memoryIDOf(e)] {
				out.RawWithheld++
				continue
			}
			se, err := commands.ToSyncEvent(e)
			if err != nil {
				return out, err
			}
			if !s.raw {
				if se.Payload, err = withoutWithheldRefs(se, rawMemories); err != nil {
					return out, err
				}
			}
			batch = append(batch, client.SyncEvent(se))
			size += len(se.Payload) + 200
		}
		if len(batch) > 0 {
			res, err := s.cloud.PushEvents(ctx, s.st.name, batch)
			if err != nil {
				return out, fmt.Errorf("push (%d events acknowledged before): %w", out.Sent, err)
			}
			out.Sent += len(batch)
			out.Appended += res.Appended
			out.Duplicates += res.Duplicates
			out.Skipped += res.Skipped
			out.CloudEvents = res.Head
		}
		s.state.Pushed += uint64(n)
		if err := s.st.writeSyncState(s.state); err != nil {
			return out, err
		}
		pending = pending[n:]
		done += n
		bar.update(done)
	}
	now := time.Now().UTC()
	s.state.LastPush = &now
	out.Pushed = s.state.Pushed
	out.EventsPerS = rate(out.Sent, time.Since(start))
	return out, s.st.writeSyncState(s.state)
}

// withoutWithheldRefs is the payload of a pushed event without the
// derived_from references to raw entries that sync.raw keeps on this
// machine: the cloud refuses references to memories it does not hold.
func withoutWithheldRefs(e commands.SyncEvent, rawMemories map[string]bool) (json.RawMessage, error) {
	if !memoryCreations.Knows(e.Type) {
		return e.Payload, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Payload, &fields); err != nil {
		return nil, fmt.Errorf("sync: event %s: %w", e.ID, err)
	}
	var refs []string
	if raw, ok := fields["derived_from"]; !ok || json.Unmarshal(raw, &refs) != nil {
		return e.Payload, nil
	}
	kept := make([]string, 0, len(refs))
	for _, r := range refs {
		if _, id, _ := strings.Cut(r, ":"); !rawMemories[id] {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(refs) {
		return e.Payload, nil
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	fields["derived_from"] = raw
	return json.Marshal(fields)
}

// cloudUnreachable reports whether err is the cloud failing to answer: a
// network error, a timeout, HTTP 5xx or 429 (exit code 3).
func cloudUnreachable(err error) bool {
	var ce *client.Error
	var ue *url.Error
	switch {
	case errors.As(err, &ce):
		return ce.Status >= 500 || ce.Status == http.StatusTooManyRequests
	case errors.As(err, &ue), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// memoryIDOf is the memory an event is about ("" for agent events).
func memoryIDOf(e domain.Event) string {
	var ref struct {
		MemoryID string `json:"memory_id"`
	}
	_ = json.Unmarshal(e.Payload, &ref)
	return ref.MemoryID
}

func rate(n int, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(float64(n) / d.Seconds())
}

// syncPullJSON is `sync pull --json`.
type syncPullJSON struct {
	Received    int              `json:"received"`
	Appended    int              `json:"appended"`
	Duplicates  int              `json:"duplicates"`
	Skipped     int              `json:"skipped"`    // events sync does not carry (agent deletes, model switches)
	Superseded  int              `json:"superseded"` // changes overridden by a later change in the cloud's log
	Pulled      uint64           `json:"pulled"`
	Resolved    []syncResolution `json:"resolved"` // conflicts settled by this pull
	EventsPerS  int              `json:"events_per_second"`
	CloudEvents uint64           `json:"cloud_events"`
}

// pull fetches the cloud's events after the pull cursor and appends the
// ones this stack lacks, with their ids. It needs every local event
// pushed first: then the cloud's log holds all of them in its order, and
// of two changes of one memory the later one there is kept.
func (s *syncSession) pull(ctx context.Context) (syncPullJSON, error) {
	start := time.Now()
	out := syncPullJSON{Resolved: []syncResolution{}}
	local, err := s.localEvents(ctx, 0)
	if err != nil {
		return out, err
	}
	if unpushed := len(local) - int(s.state.Pushed); unpushed > 0 {
		return out, domain.Errorf(domain.KindConflict, "%d local events are not pushed yet; run engram sync run (push, then pull) or engram sync push first", unpushed).WithCode("unpushed_events")
	}
	known := make(map[string]bool, len(local))
	for _, e := range local {
		known[e.ID] = true
	}
	var fetched []client.SyncEvent
	for cursor := s.state.Pulled; ; {
		page, err := s.cloud.PullEvents(ctx, s.st.name, cursor, commands.MaxSyncBatch)
		if client.IsStatus(err, 404) && cursor == 0 {
			break // the cloud has no such agent yet
		}
		if err != nil {
			return out, err
		}
		fetched = append(fetched, page.Events...)
		out.CloudEvents = page.Head
		if page.Next >= page.Head || len(page.Events) == 0 {
			cursor = page.Next
			s.state.Pulled = cursor
			break
		}
		cursor = page.Next
	}
	out.Received = len(fetched)
	keep, resolved := settle(fetched, known)
	out.Duplicates = countKnown(fetched, known)
	out.Superseded = len(fetched) - len(keep) - out.Duplicates
	now := time.Now().UTC()
	for i := range resolved {
		resolved[i].At = now
	}
	bar := s.c.progress("pulled", len(keep))
	defer bar.finish()
	for i := 0; i < len(keep); {
		batch := keep[i:min(i+localPushBatch(keep[i:]), len(keep))]
		events := make([]commands.SyncEvent, len(batch))
		for j, e := range batch {
			events[j] = commands.SyncEvent(e)
		}
		res, err := s.st.app.Sync.Push(ctx, s.st.meta(), s.st.name, events)
		if err != nil {
			return out, fmt.Errorf("pull (%d events applied before): %w", out.Appended, err)
		}
		out.Appended += res.Appended
		out.Skipped += res.Skipped
		out.Duplicates += res.Duplicates
		i += len(batch)
		bar.update(i)
	}
	// What came from the cloud is in the cloud: nothing here is unpushed.
	head, err := s.localEvents(ctx, s.state.Pushed)
	if err != nil {
		return out, err
	}
	s.state.Pushed += uint64(len(head))
	s.state.LastPull = &now
	s.state.Resolved = append(s.state.Resolved, resolved...)
	out.Pulled, out.Resolved = s.state.Pulled, resolved
	out.EventsPerS = rate(out.Received, time.Since(start))
	return out, s.st.writeSyncState(s.state)
}

// localPushBatch is how many of events (at least one) the next push to
// the local stack takes: at most commands.MaxSyncBatch events whose
// payloads stay within commands.DefaultMaxSyncPushBytes.
func localPushBatch(events []client.SyncEvent) int {
	n, size := 0, 0
	for n < len(events) && n < commands.MaxSyncBatch {
		size += len(events[n].Payload)
		if n > 0 && size > commands.DefaultMaxSyncPushBytes {
			break
		}
		n++
	}
	return n
}

func countKnown(events []client.SyncEvent, known map[string]bool) int {
	n := 0
	for _, e := range events {
		if known[e.ID] {
			n++
		}
	}
	return n
}

// settle decides which fetched events to apply, in the cloud's order, so
// that this stack ends where the cloud's log ends. A fetched change of a
// memory that comes before a change this stack already has (later in the
// cloud's log) would otherwise be applied after it here:
//   - a whole replacement (MemoryUpdated) then loses to the later known
//     change and is dropped;
//   - a field-level patch (MemoryPatched) keeps only the fields and tags
//     that no later known change sets, as the cloud applied it, and is
//     dropped when nothing is left.
//
// A change this stack had made earlier and that a later fetched change
// overrides is reported too.
func settle(fetched []client.SyncEvent, known map[string]bool) ([]client.SyncEvent, []syncResolution) {
	var keep []client.SyncEvent
	resolved := []syncResolution{}
	lastSeen := map[string]string{} // memory id → id of the last known change passed
	for i, e := range fetched {
		if !isChange(e.Type) {
			if !known[e.ID] {
				keep = append(keep, e)
			}
			continue
		}
		id := payloadMemoryID(e)
		if known[e.ID] {
			lastSeen[id] = e.ID
			continue
		}
		later, winner := laterKnownChanges(fetched[i+1:], known, id)
		if winner != "" {
			kept, ok := withoutFields(e, later)
			if !ok {
				resolved = append(resolved, syncResolution{MemoryID: id, Winner: winner, Loser: e.ID, Outcome: "kept this machine's change, which is later in the cloud's log"})
				continue
			}
			resolved = append(resolved, syncResolution{MemoryID: id, Winner: winner, Loser: e.ID, Outcome: "kept this machine's later change of the same fields; applied the cloud's change of the others"})
			e = kept
		} else if mine, ok := lastSeen[id]; ok {
			resolved = append(resolved, syncResolution{MemoryID: id, Winner: e.ID, Loser: mine, Outcome: "took the cloud's change, which is later in the cloud's log than this machine's"})
			delete(lastSeen, id)
		}
		keep = append(keep, e)
	}
	return keep, resolved
}

// memoryCreations decodes the events that create a memory (a push
// withholds raw entries and references to them), and no other; it never
// changes.
var memoryCreations = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.MemoryCreated]()})

// memoryChanges decodes the events that change a memory's content or
// tags (a pull settles concurrent ones), and no other; it never changes.
var memoryChanges = domain.MustEventRegistry([]domain.EventDecoder{domain.DecoderOf[memory.MemoryUpdated](), domain.DecoderOf[memory.MemoryPatched]()})

// isChange reports whether events of type t change a memory's content or
// tags.
func isChange(t string) bool { return memoryChanges.Knows(t) }

// changeOf is the payload of a change (memoryChanges) e carries: nil for
// another event, or when it does not decode.
func changeOf(e client.SyncEvent) domain.Payload {
	payload, _ := memoryChanges.Decode(domain.Event{ID: e.ID, Type: e.Type, Payload: e.Payload}).Decoded()
	return payload
}

// changedFields is what later known changes of one memory set: every field
// (a whole replacement), or the named content fields and perhaps the tags.
type changedFields struct {
	all     bool
	content map[string]bool
	tags    bool
}

// laterKnownChanges collects what the known changes of memory id among
// rest set, and names the last of them (empty: there is none).
func laterKnownChanges(rest []client.SyncEvent, known map[string]bool, id string) (changedFields, string) {
	c := changedFields{content: map[string]bool{}}
	winner := ""
	for _, e := range rest {
		if !known[e.ID] || !isChange(e.Type) || payloadMemoryID(e) != id {
			continue
		}
		winner = e.ID
		p, ok := changeOf(e).(*memory.MemoryPatched)
		if !ok { // a replacement, or unreadable: treat it as replacing everything
			c.all = true
			continue
		}
		for f := range p.Content {
			c.content[f] = true
		}
		c.tags = c.tags || p.Tags != nil
	}
	return c, winner
}

// withoutFields drops from a patch the fields later changes set; ok is
// false when nothing of e is left to apply.
func withoutFields(e client.SyncEvent, later changedFields) (client.SyncEvent, bool) {
	if later.all {
		return e, false
	}
	patch, ok := changeOf(e).(*memory.MemoryPatched)
	if !ok {
		return e, false
	}
	p := *patch // the decoded payload is not to be changed: its fields are dropped from a copy
	p.Content = maps.Clone(patch.Content)
	for f := range later.content {
		delete(p.Content, f)
	}
	if later.tags {
		p.Tags = nil
	}
	if len(p.Content) == 0 && p.Tags == nil {
		return e, false
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return e, false
	}
	e.Payload = payload
	return e, true
}

func payloadMemoryID(e client.SyncEvent) string {
	var ref struct {
		MemoryID string `json:"memory_id"`
	}
	_ = json.Unmarshal(e.Payload, &ref)
	return ref.MemoryID
}

// syncStatusJSON is `sync status --json`.
type syncStatusJSON struct {
	Stack       string           `json:"stack"`
	BaseURL     string           `json:"base_url"`
	LocalEvents int              `json:"local_events"`
	Pushed      uint64           `json:"pushed"`
	Unpushed    int              `json:"unpushed"`
	Pulled      uint64           `json:"pulled"`
	CloudEvents *uint64          `json:"cloud_events"` // null when the cloud could not be asked
	Unpulled    *uint64          `json:"unpulled"`
	CloudError  string           `json:"cloud_error,omitempty"`
	LastPush    *time.Time       `json:"last_push"`
	LastPull    *time.Time       `json:"last_pull"`
	RawPushed   bool             `json:"sync_raw"`
	Rule        string           `json:"conflict_rule"`
	Resolved    []syncResolution `json:"resolved"`
}

func (s *syncSession) status(ctx context.Context) (syncStatusJSON, error) {
	local, err := s.localEvents(ctx, 0)
	if err != nil {
		return syncStatusJSON{}, err
	}
	out := syncStatusJSON{
		Stack: s.st.name, BaseURL: s.state.BaseURL, LocalEvents: len(local), Pushed: s.state.Pushed,
		Unpushed: max(0, len(local)-int(s.state.Pushed)), Pulled: s.state.Pulled, LastPush: s.state.LastPush, LastPull: s.state.LastPull,
		RawPushed: s.raw, Rule: syncRule, Resolved: s.state.Resolved,
	}
	page, err := s.cloud.PullEvents(ctx, s.st.name, s.state.Pulled, 1)
	switch {
	case err == nil:
		head, unpulled := page.Head, page.Head-s.state.Pulled
		out.CloudEvents, out.Unpulled = &head, &unpulled
	case client.IsStatus(err, 404):
		var zero uint64
		out.CloudEvents, out.Unpulled = &zero, &zero
	default:
		out.CloudError = err.Error()
	}
	return out, nil
}

// printSync shows a sync result for people.
func printSync(c *cli, out any) {
	switch v := out.(type) {
	case syncPushJSON:
		fmt.Fprintf(c.stdout, "pushed %d events (%d new in the cloud, %d already there, %d not carried, %d raw withheld; %d events/s)\n",
			v.Sent, v.Appended, v.Duplicates, v.Skipped, v.RawWithheld, v.EventsPerS)
	case syncPullJSON:
		fmt.Fprintf(c.stdout, "pulled %d events (%d new here, %d already here, %d superseded, %d not carried; %d events/s)\n",
			v.Received, v.Appended, v.Duplicates, v.Superseded, v.Skipped, v.EventsPerS)
		for _, r := range v.Resolved {
			fmt.Fprintf(c.stdout, "  memory %s: %s\n", r.MemoryID, r.Outcome)
		}
	case map[string]any:
		printSync(c, v["push"])
		printSync(c, v["pull"])
	case syncStatusJSON:
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "stack\t%s ↔ %s\n", v.Stack, v.BaseURL)
		fmt.Fprintf(tw, "unpushed\t%d of %d local events\n", v.Unpushed, v.LocalEvents)
		if v.Unpulled != nil {
			fmt.Fprintf(tw, "unpulled\t%d of %d cloud events\n", *v.Unpulled, *v.CloudEvents)
		} else {
			fmt.Fprintf(tw, "unpulled\tunknown (%s)\n", v.CloudError)
		}
		fmt.Fprintf(tw, "raw entries\tpushed: %v (sync.raw)\n", v.RawPushed)
		fmt.Fprintf(tw, "conflicts\t%s; %d resolved\n", v.Rule, len(v.Resolved))
		tw.Flush()
		for _, r := range v.Resolved {
			fmt.Fprintf(c.stdout, "  %s memory %s: %s (kept %s over %s)\n", r.At.Format(time.RFC3339), r.MemoryID, r.Outcome, r.Winner, r.Loser)
		}
	}
}

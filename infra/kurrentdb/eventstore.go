// Package kurrentdb is the KurrentDB domain.EventStore, over the official
// gRPC client (github.com/kurrent-io/KurrentDB-Client-Go).
//
// Streams: Engram stream s is KurrentDB stream Prefix+s, so several Engram
// deployments (or test runs) can share one KurrentDB. A prefix is
// dot-separated segments of letters, digits and '_' ending in '.', and an
// Engram stream name has no '.' before its first '-' ("agent-u-a.b"), so
// another deployment's longer prefix ("engram.staging." beside "engram.")
// never looks like one of this deployment's streams: Prefix+s is ours only
// if s has no '.' before its first '-' (see owns). $all subscriptions keep to
// Engram's streams with a server-side filter; records inside them that are
// not Engram events (a tombstone, another application's event) are skipped.
//
// Positions: Engram's global position of an event IS its KurrentDB commit
// position. Engram only writes implicit transactions (one append = one
// batch of self-committed prepares), for which KurrentDB gives each event
// commit position = prepare position = the byte offset of its record in the
// transaction log; so the position is unique per event, strictly increasing
// in $all order, never 0 (the log opens with an epoch record), and
// Position{Commit: p, Prepare: p} addresses the event exactly. An event whose
// commit and prepare positions differ (an explicit transaction, which Engram
// never writes) is refused with an error rather than given an ambiguous
// position. Positions are sparse (byte offsets), which the port allows.
//
// Event metadata: the payload is the event's data (content type JSON, bytes
// kept exactly); the event id is the KurrentDB event id (so it must be a
// UUID); type is the KurrentDB event type; schema version, time, actor and
// request id travel in the event's custom metadata as JSON, next to
// "$correlationId" (the request id, KurrentDB's convention).
package kurrentdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/eventlog"
)

// DefaultStreamPrefix namespaces Engram's streams in a shared KurrentDB.
const DefaultStreamPrefix = "engram."

// prefixPattern is what a stream prefix looks like. No '-' and a final
// '.' keep any longer prefix from producing a name owns accepts. It is
// compiled at first use, not at every process start (every command of the command line is one).
var prefixPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*\.$`) })

// owns reports whether the KurrentDB stream name is one of this
// deployment's: Prefix+s where s has no '.' before its first '-'. A longer
// prefix (Prefix+"staging.") always puts a '.' there.
func (s *EventStore) owns(name string) bool {
	rest, ok := strings.CutPrefix(name, s.prefix)
	return ok && engramStreamName(rest)
}

// engramStreamName reports whether s can be an Engram stream name under a
// prefix: no '.' before its first '-' (Engram's are "kind-..." names).
func engramStreamName(s string) bool {
	kind, _, _ := strings.Cut(s, "-")
	return s != "" && !strings.Contains(kind, ".")
}

// streamFilter is the server-side $all filter for this deployment's
// streams, owns as a regular expression.
func (s *EventStore) streamFilter() *kdb.SubscriptionFilter {
	return &kdb.SubscriptionFilter{Type: kdb.StreamFilterType, Regex: "^" + regexp.QuoteMeta(s.prefix) + "[^.-]+(-|$)"}
}

// DefaultMaxAppendSize is the MaxAppendSize of KurrentDB 24.10 and 25.0
// (1 MiB, their --max-append-size default), the smallest of the servers
// Engram supports; 25.1 and later accept more, and a deployment on them can
// raise Config.MaxAppendSize.
const DefaultMaxAppendSize = 1 << 20

// readPage is how many $all events one read request asks for while
// skipping over events outside the prefix.
const readPage = 512

// Config says how to reach KurrentDB.
type Config struct {
	// URL is a KurrentDB connection string (kurrentdb://host:2113?tls=false,
	// kurrentdb+discover://..., esdb://...). It must not carry credentials:
	// URLs end up in process lists, shell history and logs.
	URL string
	// Username and Password authenticate every call (HTTP basic over TLS).
	// The caller takes them from the environment, never from a flag.
	Username, Password string
	// StreamPrefix namespaces Engram's streams; DefaultStreamPrefix if empty.
	StreamPrefix string
	// Logger receives the client's own diagnostics (connection, discovery,
	// dropped subscriptions); slog.Default() if nil.
	Logger *slog.Logger
	// MaxAppendSize is the largest append the server accepts, in
	// KurrentDB's measure (each event's data + custom metadata + twice its
	// type's length); DefaultMaxAppendSize if zero. Larger appends are
	// refused before anything is sent.
	MaxAppendSize int
	// RetryDelay is the first pause before a dropped subscription is
	// re-established (doubling up to 5s); 200ms if zero.
	RetryDelay time.Duration
}

// EventStore is the KurrentDB domain.EventStore.
type EventStore struct {
	conf *kdb.Configuration
	// mu guards current, closed and active: the client is replaced when it
	// has closed itself (see renewIfClosed), and closed only once no call
	// is inside it (see acquire).
	mu         sync.Mutex
	current    *kdb.Client
	closed     bool
	active     int
	prefix     string
	log        *slog.Logger
	retryDelay time.Duration
	maxAppend  int
	// knownHead is the newest position of an Engram event this store has
	// written or read: Head's lower bound (positions only grow).
	knownHead atomic.Uint64
	// stuckAfter is how long a call may wait for a connection: the
	// client's whole discovery budget, plus slack.
	stuckAfter time.Duration
	now        func() time.Time
	// index finds events by id (EventPlaces).
	index eventIndex
}

var _ domain.EventStore = (*EventStore)(nil)

// Open connects to KurrentDB and checks that $all can be read with the
// given credentials, so a wrong URL, password or missing permission fails
// at start, not at the first write.
func Open(ctx context.Context, cfg Config) (*EventStore, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	conf, err := clientConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	client, err := kdb.NewClient(conf)
	if err != nil {
		return nil, fmt.Errorf("kurrentdb: %w", err)
	}
	s := &EventStore{conf: conf, current: client, prefix: cfg.StreamPrefix, log: log, retryDelay: cfg.RetryDelay, now: time.Now}
	if s.prefix == "" {
		s.prefix = DefaultStreamPrefix
	}
	if s.maxAppend = cfg.MaxAppendSize; s.maxAppend <= 0 {
		s.maxAppend = DefaultMaxAppendSize
	}
	if s.retryDelay <= 0 {
		s.retryDelay = 200 * time.Millisecond
	}
	s.stuckAfter = time.Duration(conf.MaxDiscoverAttempts)*(time.Duration(conf.GossipTimeout)*time.Second+time.Duration(conf.DiscoveryInterval)*time.Millisecond) + 5*time.Second
	probe, err := client.ReadAll(ctx, kdb.ReadAllOptions{Direction: kdb.Backwards, From: kdb.End{}}, 1)
	if err == nil {
		_, err = probe.Recv()
		probe.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		client.Close()
		var kerr *kdb.Error
		if errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeAccessDenied) {
			return nil, fmt.Errorf("kurrentdb: user %q may not read $all, which Engram reads to project and follow its events: "+
				"KurrentDB's default ACL lets only $admins read $all; add the user to $admins or grant it read ($r) on $all in the $all stream's ACL or $systemStreamAcl: %w", cfg.Username, err)
		}
		return nil, fmt.Errorf("kurrentdb: connect to %s: %w", redact(cfg.URL), err)
	}
	return s, nil
}

// clientConfig turns cfg into the client's configuration, refusing
// credentials in the URL and credentials without TLS (the client would
// refuse every call with a gRPC error that does not say why).
func clientConfig(cfg Config, log *slog.Logger) (*kdb.Configuration, error) {
	if cfg.StreamPrefix != "" && !prefixPattern().MatchString(cfg.StreamPrefix) {
		return nil, fmt.Errorf("kurrentdb: stream prefix %q must be dot-separated letters, digits and '_' ending in '.', like %q", cfg.StreamPrefix, DefaultStreamPrefix)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || cfg.URL == "" {
		return nil, fmt.Errorf("kurrentdb: event store URL %q is not a connection string like kurrentdb://host:2113?tls=false", redact(cfg.URL))
	}
	if u.User != nil {
		return nil, errors.New("kurrentdb: the event store URL must not contain credentials; set ENGRAM_KURRENTDB_USERNAME and ENGRAM_KURRENTDB_PASSWORD instead")
	}
	conf, err := kdb.ParseConnectionString(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("kurrentdb: event store URL %s: %w", redact(cfg.URL), err)
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, errors.New("kurrentdb: set both ENGRAM_KURRENTDB_USERNAME and ENGRAM_KURRENTDB_PASSWORD, or neither")
	}
	if cfg.Username != "" && conf.DisableTLS {
		return nil, errors.New("kurrentdb: credentials need TLS; remove tls=false from the event store URL")
	}
	conf.Username, conf.Password = cfg.Username, cfg.Password
	conf.Logger = clientLogger(log)
	return conf, nil
}

// clientLogger routes the client's printf-style logging to slog. The
// client logs every failed call at error level; those errors are returned
// to Engram too, so they are demoted to debug here to avoid logging each
// failure twice, except warnings about the connection itself.
func clientLogger(log *slog.Logger) kdb.LoggingFunc {
	return func(level kdb.LogLevel, format string, args ...any) {
		lvl := slog.LevelDebug
		if level == kdb.LogWarn {
			lvl = slog.LevelWarn
		}
		log.Log(context.Background(), lvl, "kurrentdb client: "+fmt.Sprintf(format, args...))
	}
}

// redact drops any userinfo from a URL before it goes into an error.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// Close releases the connection.
// Close releases the connection once the calls in flight have ended.
func (s *EventStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.active == 0 {
		return s.current.Close()
	}
	return nil
}

// errClosed is a call on a closed store.
var errClosed = errors.New("kurrentdb: the event store is closed")

// acquire returns the current client for one call, which must call
// release once it no longer uses the client (its streams read or closed).
// Closing the client while a call is inside it would panic (the client
// sends on a channel Close closes), so the last release after Close closes
// it.
func (s *EventStore) acquire() (*kdb.Client, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosed
	}
	s.active++
	return s.current, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.active--; s.active == 0 && s.closed {
			s.current.Close()
		}
	}, nil
}

// errStuck is a client call that did not even get a connection within the
// client's own discovery budget.
var errStuck = errors.New("the KurrentDB client is stuck looking up its connection")

// unstuck runs call with the current client; call must be done with the
// client when it returns (a stream it opens read to its end or closed; a
// subscription's discard and the subscriber's own release handle theirs).
// Client calls start with the client's connection lookup. In
// KurrentDB-Client-Go v1.0.0 up to v1.1.2 (getConnectionHandle in
// kurrentdb/impl.go, unchanged) that lookup ignores ctx and, when it races
// with the client closing itself, blocks forever; so
// call runs in a goroutine that is abandoned when ctx ends or after
// s.stuckAfter (errStuck, which renews the client). An abandoned call's
// late result is passed to discard, to release it.
func unstuck[T any](ctx context.Context, s *EventStore, call func(*kdb.Client) (T, error), discard func(T)) (T, error) {
	c, release, err := s.acquire()
	if err != nil {
		var zero T
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer release()
		v, err := call(c)
		if err != nil {
			s.renewIfClosed(c, err)
		}
		done <- result{v, err}
	}()
	timer := time.NewTimer(s.stuckAfter)
	defer timer.Stop()
	var zero T
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errStuck
		s.renewIfClosed(c, err)
	}
	go func() {
		if r := <-done; r.err == nil && discard != nil {
			discard(r.v)
		}
	}()
	return zero, err
}

// renewIfClosed replaces c when err says it has closed itself: the
// KurrentDB client gives up for good when a rediscovery fails (the server
// was unreachable for about a second, e.g. while restarting), and every
// later call would fail. The call that saw the error still fails; the
// next one gets a fresh client.
func (s *EventStore) renewIfClosed(c *kdb.Client, err error) {
	var kerr *kdb.Error
	if !errors.Is(err, errStuck) && (!errors.As(err, &kerr) || !kerr.IsErrorCode(kdb.ErrorCodeConnectionClosed)) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.current != c {
		return
	}
	fresh, nerr := kdb.NewClient(s.conf)
	if nerr != nil {
		return
	}
	// c is not closed: its connection loop has already ended, and
	// Close would close the channel other goroutines may still be about
	// to send on inside the client (a panic).
	s.current = fresh
	s.log.Warn("kurrentdb: the client had closed its connection for good; replaced it")
}

// eventMetadata is the custom metadata of every Engram event in KurrentDB.
type eventMetadata struct {
	SchemaVersion int          `json:"schema_version"`
	Time          time.Time    `json:"time"`
	Actor         domain.Actor `json:"actor"`
	RequestID     string       `json:"request_id,omitempty"`
	Source        string       `json:"source,omitempty"`
	// CorrelationID follows KurrentDB's convention ($correlationId), so its
	// UI and projections can group one request's events.
	CorrelationID string `json:"$correlationId,omitempty"`
}

// Append implements domain.EventStore.
func (s *EventStore) Append(ctx context.Context, stream string, expected int64, events []domain.NewEvent) (domain.AppendResult, error) {
	b, err := s.newBatch(stream, expected, events)
	if err != nil {
		return domain.AppendResult{}, err
	}
	return s.appendBatch(ctx, stream, expected, events, b)
}

// appendBatch appends b, the batch of events to stream.
func (s *EventStore) appendBatch(ctx context.Context, stream string, expected int64, events []domain.NewEvent, b batch) (domain.AppendResult, error) {
	if b.claims {
		return s.appendClaiming(ctx, stream, expected, events, b.data, b.size)
	}
	return s.appendEvents(ctx, stream, b.state, b.data, b.size)
}

// batch is one stream's append, checked and encoded.
type batch struct {
	state kdb.StreamState
	data  []kdb.EventData
	// meta is each event's metadata, which data carries as JSON.
	meta []eventMetadata
	// size is data's size in KurrentDB's measure.
	size int
	// claims: an event claims a key (domain.NewEvent.Claims).
	claims bool
}

// newBatch checks and encodes an append of events to stream.
func (s *EventStore) newBatch(stream string, expected int64, events []domain.NewEvent) (batch, error) {
	if stream == "" {
		return batch{}, errors.New("kurrentdb: append: empty stream name")
	}
	if !engramStreamName(stream) {
		return batch{}, fmt.Errorf("kurrentdb: append: stream name %q has a '.' before its first '-', which would read as another deployment's stream prefix", stream)
	}
	if len(events) == 0 {
		return batch{}, fmt.Errorf("kurrentdb: append to %s: no events", stream)
	}
	state, err := streamState(expected)
	if err != nil {
		return batch{}, fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
	}
	now := s.now().UTC()
	b := batch{state: state, data: make([]kdb.EventData, len(events)), meta: make([]eventMetadata, len(events))}
	for i, e := range events {
		id := uuid.Must(uuid.NewV7())
		if e.ID != "" {
			if id, err = uuid.Parse(e.ID); err != nil || id.String() != e.ID {
				return batch{}, fmt.Errorf("kurrentdb: append to %s: event id %q is not a lowercase UUID (KurrentDB event ids are UUIDs)", stream, e.ID)
			}
		}
		at := e.Time
		if at.IsZero() {
			at = now
		}
		b.meta[i] = eventMetadata{SchemaVersion: e.SchemaVersion, Time: at.UTC(), Actor: e.Actor, RequestID: e.RequestID, Source: string(e.Source), CorrelationID: e.RequestID}
		meta, err := json.Marshal(b.meta[i])
		if err != nil {
			return batch{}, fmt.Errorf("kurrentdb: append to %s: metadata: %w", stream, err)
		}
		b.data[i] = kdb.EventData{EventID: id, EventType: e.Type, ContentType: kdb.ContentTypeJson, Data: e.Payload, Metadata: meta}
		b.size += len(e.Payload) + len(meta) + 2*len(e.Type)
	}
	// An append is one atomic batch (a memory batch, a sync push, a job
	// step), so one over the server's limit is refused whole rather than
	// split into appends that could half succeed.
	if b.size > s.maxAppend {
		return batch{}, appendTooLarge(stream, len(events), b.size, s.maxAppend)
	}
	claims, err := domain.AppendClaims(events)
	if err != nil {
		return batch{}, fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
	}
	b.claims = len(claims) > 0
	return b, nil
}

// AppendStreams implements domain.EventStore. On KurrentDB 25.1 and later
// the parts are one write, every part or none (appendSession, the v2
// multi-stream append). An older server has no multi-stream append: the
// parts are appended one by one, each atomic, stopping at the first that
// fails; the parts before it stay, and the error is a
// *domain.PartialAppendError when any did.
func (s *EventStore) AppendStreams(ctx context.Context, parts []domain.StreamAppend) ([]domain.AppendResult, error) {
	if err := domain.CheckStreamAppends(parts); err != nil {
		return nil, fmt.Errorf("kurrentdb: %w", err)
	}
	batches := make([]batch, len(parts))
	for i, p := range parts {
		b, err := s.newBatch(p.Stream, p.Expected, p.Events)
		if err != nil {
			return nil, err
		}
		batches[i] = b
	}
	out, err := s.appendSession(ctx, parts, batches)
	if !errors.Is(err, errNoMultiStreamAppend) {
		return out, err
	}
	out = make([]domain.AppendResult, len(parts))
	for i, p := range parts {
		res, err := s.appendBatch(ctx, p.Stream, p.Expected, p.Events, batches[i])
		if err != nil {
			if i > 0 {
				return nil, &domain.PartialAppendError{Landed: i, Err: err}
			}
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}

// appendEvents appends data to stream in one write if the stream is in
// state; size is data's in KurrentDB's measure.
func (s *EventStore) appendEvents(ctx context.Context, stream string, state kdb.StreamState, data []kdb.EventData, size int) (domain.AppendResult, error) {
	res, err := unstuck(ctx, s, func(c *kdb.Client) (*kdb.WriteResult, error) {
		return c.AppendToStream(ctx, s.prefix+stream, kdb.AppendToStreamOptions{StreamState: state}, data...)
	}, nil)
	if err != nil {
		var kerr *kdb.Error
		if errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeWrongExpectedVersion) {
			return domain.AppendResult{}, fmt.Errorf("kurrentdb: append to %s: %v: %w", stream, kerr.Err(), domain.ErrWrongExpectedVersion)
		}
		// The server's own limit is lower than s.maxAppend: it refused the
		// whole append (RpcExceptions.MaxAppendSizeExceeded).
		if limit, ok := serverAppendLimit(err); ok {
			return domain.AppendResult{}, appendTooLarge(stream, len(data), size, limit)
		}
		return domain.AppendResult{}, fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
	}
	// KurrentDB reports the commit position of the write, which for an
	// implicit transaction is the log position of its last event.
	s.sawHead(res.CommitPosition)
	return domain.AppendResult{NextExpectedVersion: int64(res.NextExpectedVersion), LastPosition: res.CommitPosition}, nil
}

// appendTooLarge is the error for an append over the server's limit.
func appendTooLarge(stream string, events, size, limit int) error {
	return domain.Errorf(domain.KindTooLarge, "the batch of %d events for stream %s is %d bytes; KurrentDB refuses appends over its MaxAppendSize of %d bytes (1 MiB on KurrentDB 24.10 and 25.0); nothing was written — send fewer or smaller items at once", events, stream, size, limit).
		WithCode("event_batch_too_large").WithDetail("limit", limit)
}

// serverAppendLimit recognises KurrentDB's refusal of an append over its
// MaxAppendSize, "Maximum Append Size of N Exceeded." (InvalidArgument),
// and returns N.
func serverAppendLimit(err error) (int, bool) {
	msg := err.Error()
	i := strings.Index(msg, "Maximum Append Size of ")
	if i < 0 {
		return 0, false
	}
	var limit int
	if _, err := fmt.Sscanf(msg[i:], "Maximum Append Size of %d Exceeded", &limit); err != nil {
		return 0, false
	}
	return limit, true
}

// streamState maps Engram's expected version onto KurrentDB's.
func streamState(expected int64) (kdb.StreamState, error) {
	switch {
	case expected == domain.ExpectAny:
		return kdb.Any{}, nil
	case expected == domain.ExpectNoStream:
		return kdb.NoStream{}, nil
	case expected >= 0:
		return kdb.Revision(uint64(expected)), nil
	default:
		return nil, fmt.Errorf("invalid expected version %d", expected)
	}
}

// ReadStream implements domain.EventStore.
func (s *EventStore) ReadStream(ctx context.Context, stream string, from uint64) ([]domain.Event, error) {
	return s.readStream(ctx, stream, from, math.MaxUint64)
}

// ReadStreamPage returns up to limit of the stream's events from version
// from on, in order (commands.SyncLog).
func (s *EventStore) ReadStreamPage(ctx context.Context, stream string, from uint64, limit int) ([]domain.Event, error) {
	return s.readStream(ctx, stream, from, uint64(max(limit, 0)))
}

func (s *EventStore) readStream(ctx context.Context, stream string, from, count uint64) ([]domain.Event, error) {
	recs, err := s.read(ctx, func(c *kdb.Client) (*kdb.ReadStream, error) {
		return c.ReadStream(ctx, s.prefix+stream, kdb.ReadStreamOptions{From: kdb.Revision(from)}, count)
	})
	if err != nil {
		return nil, fmt.Errorf("kurrentdb: read stream %s: %w", stream, err)
	}
	out := make([]domain.Event, 0, len(recs))
	for _, r := range recs {
		e, ok, err := s.toEvent(r)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// read runs one read (of a stream or of $all) to its end with the
// client, inside unstuck. A missing stream gives no events and no error.
func (s *EventStore) read(ctx context.Context, open func(*kdb.Client) (*kdb.ReadStream, error)) ([]*kdb.RecordedEvent, error) {
	return unstuck(ctx, s, func(c *kdb.Client) ([]*kdb.RecordedEvent, error) {
		rs, err := open(c)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var out []*kdb.RecordedEvent
		for {
			re, err := rs.Recv()
			var kerr *kdb.Error
			switch {
			case errors.Is(err, io.EOF):
				return out, nil
			case errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeResourceNotFound):
				return nil, nil
			case err != nil:
				return nil, err
			}
			if re.Event != nil {
				out = append(out, re.Event)
			}
		}
	}, nil)
}

// ReadAll implements domain.EventStore. The client has no filtered $all
// read. On a KurrentDB Engram has (mostly) to itself, plain pages of $all
// are fastest; on a shared one, paging through foreign events in the
// client costs a round trip per 512 of them. So ReadAll reads plain pages
// while they are mostly Engram's, and as soon as one is mostly foreign it
// reads the rest through readFiltered, where the server skips foreign
// events itself.
func (s *EventStore) ReadAll(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	var out []domain.Event
	seen := after // every event at or below seen is already handled
	for len(out) < limit {
		// Reading from a position includes the event there, hence +1.
		n := uint64(readPage) + 1
		raw, err := s.readAllPage(ctx, kdb.Forwards, allPosition(seen), n)
		if err != nil {
			return nil, err
		}
		ours := 0
		for _, r := range raw {
			pos := r.Position.Commit
			if pos <= seen {
				continue
			}
			seen = pos
			if !s.owns(r.StreamID) {
				continue
			}
			ours++
			e, ok, err := s.toEvent(r)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			out = append(out, e)
			if len(out) == limit {
				break
			}
		}
		if uint64(len(raw)) < n || len(out) == limit {
			break // end of $all, or done
		}
		if ours < len(raw)/2 {
			rest, err := s.readFiltered(ctx, seen, limit-len(out))
			return append(out, rest...), err
		}
	}
	return out, nil
}

// readFiltered reads up to limit Engram events after position after
// through a catch-up subscription to $all with the server-side stream
// filter, ended once it has limit events or has reached the end of $all as
// it was when the read began: an event or a checkpoint at or past that
// end, or the server's caught-up message.
func (s *EventStore) readFiltered(ctx context.Context, after uint64, limit int) ([]domain.Event, error) {
	var out []domain.Event
	err := s.scanFiltered(ctx, after, func(e domain.Event) bool {
		out = append(out, e)
		return len(out) < limit
	})
	return out, err
}

// scanFiltered passes the Engram events after position after to visit, in
// order, until visit returns false or the end of $all as it was when the
// scan began is reached (see readFiltered).
func (s *EventStore) scanFiltered(ctx context.Context, after uint64, visit func(domain.Event) bool) error {
	end, err := s.logEnd(ctx)
	if err != nil || end <= after {
		return err
	}
	_, err = unstuck(ctx, s, func(c *kdb.Client) (struct{}, error) {
		var none struct{}
		sub, err := c.SubscribeToAll(ctx, kdb.SubscribeToAllOptions{From: allPosition(after), Filter: s.streamFilter()})
		if err != nil {
			return none, err
		}
		defer sub.Close()
		for {
			ev := sub.Recv()
			switch {
			case ev.SubscriptionDropped != nil:
				if ev.SubscriptionDropped.Error != nil {
					return none, ev.SubscriptionDropped.Error
				}
				return none, errors.New("the $all subscription ended before the end of $all")
			case ev.EventAppeared != nil:
				r := ev.EventAppeared.Event
				if r == nil || r.Position.Commit <= after {
					continue
				}
				if s.owns(r.StreamID) {
					e, ok, err := s.toEvent(r)
					if err != nil {
						return none, err
					}
					if ok && !visit(e) {
						return none, nil
					}
				}
				if r.Position.Commit >= end {
					return none, nil
				}
			case ev.CheckPointReached != nil:
				if ev.CheckPointReached.Commit >= end {
					return none, nil
				}
			default:
				// Caught up: KurrentDB-Client-Go v1.1.2 gives a caught-up
				// message without a timestamp (older servers, and the test
				// server) as an empty event, one with a timestamp as
				// CaughtUp. Before catching up a catch-up subscription
				// cannot fall behind.
				return none, nil
			}
		}
	}, nil)
	if err != nil {
		return fmt.Errorf("kurrentdb: read $all: %w", err)
	}
	return nil
}

// logEnd is the commit position of the last record in $all (0 when the
// log is empty).
func (s *EventStore) logEnd(ctx context.Context) (uint64, error) {
	last, err := s.readAllPage(ctx, kdb.Backwards, kdb.End{}, 1)
	if err != nil || len(last) == 0 {
		return 0, err
	}
	return last[0].Position.Commit, nil
}

// allPosition is where a $all read or subscription after Engram position
// after starts.
func allPosition(after uint64) kdb.AllPosition {
	if after == 0 {
		return kdb.Start{}
	}
	return kdb.Position{Commit: after, Prepare: after}
}

func (s *EventStore) readAllPage(ctx context.Context, dir kdb.Direction, from kdb.AllPosition, n uint64) ([]*kdb.RecordedEvent, error) {
	recs, err := s.read(ctx, func(c *kdb.Client) (*kdb.ReadStream, error) {
		return c.ReadAll(ctx, kdb.ReadAllOptions{Direction: dir, From: from}, n)
	})
	if err != nil {
		return nil, fmt.Errorf("kurrentdb: read $all: %w", err)
	}
	return recs, nil
}

// ReadRange implements domain.EventStore. It pages $all with ReadAll, skipping
// foreign events as ReadAll does.
func (s *EventStore) ReadRange(ctx context.Context, after, until uint64, handle func(context.Context, []domain.Event) error) error {
	return eventlog.ReadRange(ctx, after, until, s.ReadAll, handle)
}

// Head implements domain.EventStore: the newest Engram event, found by
// reading $all backwards from its end; when that meets mostly foreign
// events, by a filtered forward scan from knownHead instead.
func (s *EventStore) Head(ctx context.Context) (uint64, error) {
	var from kdb.AllPosition = kdb.End{}
	for {
		raw, err := s.readAllPage(ctx, kdb.Backwards, from, readPage)
		if err != nil {
			return 0, err
		}
		ours := 0
		for _, r := range raw {
			if !s.owns(r.StreamID) {
				continue
			}
			ours++
			if _, ok, err := s.toEvent(r); err != nil || ok {
				return r.Position.Commit, err
			}
		}
		if len(raw) < readPage {
			return 0, nil
		}
		// Mostly foreign events: rather than paging back through them,
		// scan forward from the newest Engram event this store has seen,
		// with the server skipping foreign events.
		if known := s.knownHead.Load(); known > 0 && ours < len(raw)/2 {
			head := known
			err := s.scanFiltered(ctx, known, func(e domain.Event) bool {
				head = e.Position
				return true
			})
			return head, err
		}
		last := raw[len(raw)-1].Position
		from = kdb.Position{Commit: last.Commit, Prepare: last.Prepare}
	}
}

// toEvent turns a recorded KurrentDB event into an Engram event; ok is
// false for a record in an Engram stream that is not an Engram event: a
// system record ("$streamDeleted", the tombstone KurrentDB writes into the
// stream it deletes; "$metadata"; "$>" links) or an event another
// application wrote without Engram's metadata. Those are skipped, said at
// debug level, so they never stop a reader or a subscription.
func (s *EventStore) toEvent(r *kdb.RecordedEvent) (e domain.Event, ok bool, err error) {
	if strings.HasPrefix(r.EventType, "$") {
		s.log.Debug("kurrentdb: skipping a system record in an Engram stream", "stream", r.StreamID, "type", r.EventType, "position", r.Position.Commit)
		return domain.Event{}, false, nil
	}
	meta, err := decodeMetadata(r.UserMetadata)
	if err != nil || meta.Time.IsZero() {
		s.log.Debug("kurrentdb: skipping a record without Engram's metadata in an Engram stream", "stream", r.StreamID, "type", r.EventType, "position", r.Position.Commit, "err", err)
		return domain.Event{}, false, nil
	}
	if r.Position.Commit != r.Position.Prepare {
		return domain.Event{}, false, fmt.Errorf("kurrentdb: event %s in %s has commit position %d and prepare position %d: explicit transactions are not Engram events", r.EventID, r.StreamID, r.Position.Commit, r.Position.Prepare)
	}
	s.sawHead(r.Position.Commit)
	return domain.Event{
		ID:            r.EventID.String(),
		Stream:        strings.TrimPrefix(r.StreamID, s.prefix),
		Version:       r.EventNumber,
		Position:      r.Position.Commit,
		Type:          r.EventType,
		SchemaVersion: meta.SchemaVersion,
		Time:          meta.Time.UTC(),
		Actor:         meta.Actor,
		RequestID:     meta.RequestID,
		Source:        domain.Source(meta.Source),
		Payload:       json.RawMessage(r.Data),
	}, true, nil
}

// sawHead raises knownHead to pos, an Engram event's position.
func (s *EventStore) sawHead(pos uint64) {
	for {
		cur := s.knownHead.Load()
		if pos <= cur || s.knownHead.CompareAndSwap(cur, pos) {
			return
		}
	}
}

// stopError marks an error that ends SubscribeAll (the handler's, or an
// event that cannot be decoded), unlike a dropped subscription, which is
// re-established.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// SubscribeAll implements domain.EventStore with a catch-up subscription to
// $all, filtered server-side to the stream prefix. When the subscription
// drops (server restart, leader change, network), it is re-established from
// the last delivered position after a growing pause, so no event is skipped
// or repeated; it gives up only on errors retrying cannot fix (bad
// credentials, missing permission).
func (s *EventStore) SubscribeAll(ctx context.Context, after uint64, handle func(context.Context, []domain.Event) error) error {
	delay := s.retryDelay
	for {
		delivered, err := s.subscribeOnce(ctx, &after, handle)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		var kerr *kdb.Error
		if errors.Is(err, errClosed) || errors.As(err, &kerr) && (kerr.IsErrorCode(kdb.ErrorCodeUnauthenticated) || kerr.IsErrorCode(kdb.ErrorCodeAccessDenied)) {
			return fmt.Errorf("kurrentdb: subscribe to $all: %w", err)
		}
		if delivered {
			delay = s.retryDelay
		}
		s.log.Warn("kurrentdb: $all subscription dropped, resubscribing", "after", after, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// subscribeOnce runs one subscription until it drops, ctx ends or handle
// fails, advancing *after past every delivered event. It reports whether
// it delivered anything (a healthy subscription resets the retry pause).
func (s *EventStore) subscribeOnce(ctx context.Context, after *uint64, handle func(context.Context, []domain.Event) error) (bool, error) {
	// The subscription uses the client until its reader below has ended.
	_, release, err := s.acquire()
	if err != nil {
		return false, err
	}
	defer release()
	sub, err := unstuck(ctx, s, func(c *kdb.Client) (*kdb.Subscription, error) {
		return c.SubscribeToAll(ctx, kdb.SubscribeToAllOptions{
			From:   allPosition(*after),
			Filter: s.streamFilter(),
		})
	}, func(sub *kdb.Subscription) { sub.Close() })
	if err != nil {
		return false, err
	}
	// Recv blocks, so a reader goroutine feeds a channel the loop below
	// drains into batches of whatever has already arrived.
	incoming := make(chan *kdb.SubscriptionEvent, eventlog.FollowBatch)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev := sub.Recv()
			select {
			case incoming <- ev:
			case <-stop:
				return
			}
			if ev.SubscriptionDropped != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		sub.Close()
		<-done
	}()

	delivered := false
	for {
		var ev *kdb.SubscriptionEvent
		select {
		case <-ctx.Done():
			return delivered, ctx.Err()
		case ev = <-incoming:
		}
		var batch []domain.Event
		var dropped error
		// Take what has already arrived, up to a full batch; a full batch
		// leaves the rest in the channel for the next round.
		for more := true; more; {
			switch {
			case ev.SubscriptionDropped != nil:
				if dropped = ev.SubscriptionDropped.Error; dropped == nil {
					dropped = errors.New("subscription dropped")
				}
			case ev.EventAppeared != nil && ev.EventAppeared.Event != nil && ev.EventAppeared.Event.Position.Commit > *after:
				e, ok, err := s.toEvent(ev.EventAppeared.Event)
				if err != nil {
					return delivered, stopError{err}
				}
				if ok {
					batch = append(batch, e)
				}
			}
			more = false
			if dropped == nil && len(batch) < eventlog.FollowBatch {
				select {
				case ev = <-incoming:
					more = true
				default:
				}
			}
		}
		if len(batch) > 0 {
			if err := handle(ctx, batch); err != nil {
				return delivered, stopError{err}
			}
			*after = batch[len(batch)-1].Position
			delivered = true
		}
		if dropped != nil {
			return delivered, dropped
		}
	}
}

// LastOfType is the position of the stream's last event of type typ, 0
// when it has none (commands.SyncLog). KurrentDB has no index by type: the
// stream is read, which only an import into an agent that was deleted
// asks for.
func (s *EventStore) LastOfType(ctx context.Context, stream, typ string) (uint64, error) {
	events, err := s.ReadStream(ctx, stream, 0)
	if err != nil {
		return 0, err
	}
	var pos uint64
	for _, e := range events {
		if e.Type == typ {
			pos = e.Position
		}
	}
	return pos, nil
}

// StreamVersion is the version of a stream's last event, -1 when the
// stream does not exist (commands.SyncLog).
func (s *EventStore) StreamVersion(ctx context.Context, stream string) (int64, error) {
	recs, err := s.read(ctx, func(c *kdb.Client) (*kdb.ReadStream, error) {
		return c.ReadStream(ctx, s.prefix+stream, kdb.ReadStreamOptions{Direction: kdb.Backwards, From: kdb.End{}}, 1)
	})
	if err != nil {
		return 0, fmt.Errorf("kurrentdb: stream version of %s: %w", stream, err)
	}
	if len(recs) == 0 {
		return -1, nil
	}
	return int64(recs[0].EventNumber), nil
}

// EventStreams returns the stream of each of ids that the log holds;
// absent ids are left out (commands.SyncLog: sync's duplicate and
// ownership check). KurrentDB has no index by event id, so the store
// keeps one (see eventIndex).
func (s *EventStore) EventStreams(ctx context.Context, ids []string) (map[string]string, error) {
	places, err := s.EventPlaces(ctx, ids)
	out := make(map[string]string, len(places))
	for id, p := range places {
		out[id] = p.Stream
	}
	return out, err
}

// EventPlaces is EventStreams with each event's position (commands.SyncLog).
func (s *EventStore) EventPlaces(ctx context.Context, ids []string) (map[string]domain.EventPlace, error) {
	return s.index.lookup(ctx, s, ids)
}

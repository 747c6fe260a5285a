// Package commands holds the write side: each handler loads what it needs,
// asks the domain to decide, and appends the resulting events. A command
// returns only once its events are visible to every read model, which is
// how the API keeps read-your-writes.
package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Visibility reports when the projections have applied a log position.
type Visibility interface {
	WaitFor(ctx context.Context, position uint64) error
	// WaitForProjections waits for the named projections only (all of
	// them when none are named).
	WaitForProjections(ctx context.Context, position uint64, names ...string) error
}

// EventWriter appends events and waits until they are visible.
type EventWriter struct {
	store   domain.EventStore
	visible Visibility
	timeout time.Duration
}

// DefaultVisibilityTimeout bounds how long a write waits for the
// projections to apply it before it is answered 503 write_not_yet_visible
// (the write itself is durable by then).
const DefaultVisibilityTimeout = 30 * time.Second

// NewEventWriter returns a writer over store; visible may not be nil.
// timeout bounds the wait for visibility (0: DefaultVisibilityTimeout).
func NewEventWriter(store domain.EventStore, visible Visibility, timeout time.Duration) *EventWriter {
	if timeout <= 0 {
		timeout = DefaultVisibilityTimeout
	}
	return &EventWriter{store: store, visible: visible, timeout: timeout}
}

// Store is the underlying log, for loading streams.
func (w *EventWriter) Store() domain.EventStore { return w.store }

// Append marshals payloads into events carrying meta, appends them to
// stream if it is at the expected version, and waits until the projections
// have applied them.
func (w *EventWriter) Append(ctx context.Context, stream string, expected int64, meta domain.Metadata, payloads ...domain.Payload) (domain.AppendResult, error) {
	res, err := w.append(ctx, stream, expected, meta, payloads)
	if err != nil {
		return res, err
	}
	return res, w.Await(ctx, res.LastPosition)
}

// AppendSeenBy appends as Append does but waits only until the named
// projections (all when none are named) have applied the events: a
// command that holds a lock while it decides and appends lets the next
// decision go as soon as the read models it decides on are up to date.
// Before answering, its caller must Await the returned position.
func (w *EventWriter) AppendSeenBy(ctx context.Context, stream string, expected int64, meta domain.Metadata, names []string, payloads ...domain.Payload) (domain.AppendResult, error) {
	res, err := w.append(ctx, stream, expected, meta, payloads)
	if err != nil {
		return res, err
	}
	// The write is in the log from here on: the response names it even if
	// the wait below gives up.
	observePosition(ctx, res.LastPosition)
	return res, w.wait(ctx, res.LastPosition, names)
}

func (w *EventWriter) append(ctx context.Context, stream string, expected int64, meta domain.Metadata, payloads []domain.Payload) (domain.AppendResult, error) {
	events, err := marshalEvents(meta, payloads)
	if err != nil {
		return domain.AppendResult{}, err
	}
	res, err := w.store.Append(ctx, stream, expected, events)
	return res, takenMemoryID(err)
}

func marshalEvents(meta domain.Metadata, payloads []domain.Payload) ([]domain.NewEvent, error) {
	events := make([]domain.NewEvent, len(payloads))
	for i, p := range payloads {
		e, err := domain.MarshalEvent(p, meta)
		if err != nil {
			return nil, fmt.Errorf("commands: encode %s: %w", p.EventType(), err)
		}
		events[i] = e
	}
	return events, nil
}

// StreamPart is one stream's events in a write to several streams,
// decided at the stream's version Expected.
type StreamPart struct {
	Stream   string
	Expected int64
	Payloads []domain.Payload
}

// appendStreamsSeenBy appends the parts in one write
// (domain.EventStore.AppendStreams: every part or none, except on a
// KurrentDB older than 25.1) and waits as AppendSeenBy does; it returns
// the position of the last event, which the caller must Await.
func (w *EventWriter) appendStreamsSeenBy(ctx context.Context, meta domain.Metadata, names []string, parts []StreamPart) (uint64, error) {
	appends := make([]domain.StreamAppend, len(parts))
	for i, p := range parts {
		events, err := marshalEvents(meta, p.Payloads)
		if err != nil {
			return 0, err
		}
		appends[i] = domain.StreamAppend{Stream: p.Stream, Expected: p.Expected, Events: events}
	}
	res, err := w.store.AppendStreams(ctx, appends)
	if err != nil {
		return 0, takenMemoryID(err)
	}
	last := res[len(res)-1].LastPosition
	observePosition(ctx, last)
	return last, w.wait(ctx, last, names)
}

// Await waits until position is visible to every read model. Every write
// passes here, so this is where ctx's PositionTracker learns its position.
func (w *EventWriter) Await(ctx context.Context, position uint64) error {
	observePosition(ctx, position)
	return w.wait(ctx, position, nil)
}

// wait waits until position is visible to the named projections (all
// when none are named).
func (w *EventWriter) wait(ctx context.Context, position uint64, names []string) error {
	// The write is already durable; keep waiting even if the client left,
	// but never forever.
	waitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	err := w.visible.WaitForProjections(waitCtx, position, names...)
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Not a failure of the write: it is stored and will be applied.
		// Saying so keeps a client from sending it again (a second copy).
		e := domain.Errorf(domain.KindNotYetConsistent, "the write is stored and will not be lost, but the read models have not applied it within %s (the server is overloaded); do not send it again: it becomes visible once they catch up", w.timeout)
		e.Code, e.Err = WriteNotYetVisibleCode, fmt.Errorf("write at %d: %w", position, err)
		return e.WithDetail(domain.DetailRetryAfterSeconds, 1)
	}
	if errors.Is(err, domain.ErrStorageFull) {
		// Stored too, but storage filled up before the read models applied
		// it: they hold until space is freed, so say so at once.
		e := domain.Errorf(domain.KindNotYetConsistent, "the write is stored and will not be lost, but the server's storage is full, so the read models cannot apply it until space is freed; do not send it again: it becomes visible once they catch up")
		e.Code, e.Err = WriteNotYetVisibleCode, fmt.Errorf("write at %d: %w", position, err)
		return e.WithDetail(domain.DetailRetryAfterSeconds, 10)
	}
	return fmt.Errorf("commands: write at %d not yet visible: %w", position, err)
}

// WriteNotYetVisibleCode is the error code of a write that was stored but
// not applied by every read model within the visibility timeout.
const WriteNotYetVisibleCode = "write_not_yet_visible"

// CatchUp waits, at most the visibility timeout, until the named
// projections (all when none are named) have applied the log as far as
// its head now, so that a command that lost the race for its stream
// decides again on the state that beat it. Unlike Await it records no
// position: the command has stored nothing, and a wait that gives up says
// so (domain.KindNotStored, safe to retry), never that a write is stored.
func (w *EventWriter) CatchUp(ctx context.Context, names ...string) error {
	head, err := w.store.Head(ctx)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	err = w.visible.WaitForProjections(waitCtx, head, names...)
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e := domain.Errorf(domain.KindNotStored, "nothing was stored: other writes reached the agent first and the read models did not apply them within %s (the server is overloaded); it is safe to send the request again", w.timeout)
	e.Err = fmt.Errorf("catch up with the log head %d: %w", head, err)
	return e.WithDetail(domain.DetailRetryAfterSeconds, 1)
}

// maxConflictRetries bounds optimistic-concurrency retries of one command.
const maxConflictRetries = 100

// RetryOnConflict runs attempt until it does not fail with
// domain.ErrWrongExpectedVersion. Each attempt must reload its aggregate, so
// a retry decides on fresh state.
func RetryOnConflict(ctx context.Context, attempt func() error) error {
	for i := 0; ; i++ {
		err := attempt()
		if !errors.Is(err, domain.ErrWrongExpectedVersion) || i >= maxConflictRetries {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// movedOn tells whether stream holds events after version expected,
// i.e. an append expecting it would fail (never for domain.ExpectAny).
func (w *EventWriter) movedOn(ctx context.Context, stream string, expected int64) (bool, error) {
	if expected == domain.ExpectAny {
		return false, nil
	}
	events, err := w.store.ReadStream(ctx, stream, uint64(expected+1))
	if err != nil {
		return false, fmt.Errorf("commands: read %s: %w", stream, err)
	}
	return len(events) > 0, nil
}

package projections

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
)

// The live delivery path. One follower per running engine reads the log
// once, decodes each payload once (the engine's event registry) and hands
// each decoded batch to every projection's member; each member feeds its
// projection's watermill handler, which applies the batch with the
// router's middlewares (recoverer, retry, parking) around it, and acks it
// only once applied. A batch crosses the router as a message whose context
// carries the decoded events (batchOf): there is no serialisation inside
// the process. watermill's in-memory pub/sub (gochannel) would not spare
// that, since its messages carry bytes, nor give each projection the
// redelivery of a nacked batch from its own position, which a member does.
//
// Projections move at their own pace and from their own checkpoints. The
// follower starts at the lowest checkpoint of the first projections it
// serves; a member ahead of it gets batches it partly applied already,
// which Apply skips (events at or below the checkpoint). A member that
// does not take a batch within detachAfter (its projection is parked,
// slow, or being rebuilt) is detached: it keeps what was queued for it,
// then reads the log from its own position through the replay path's
// reader (readChunk) until it reaches the follower, and attaches again. A
// member that starts behind the follower (a leased projection taken over,
// a projection rebuilt) catches up so as well. No batch is skipped: a
// member reads whatever the follower did not hand it.

// memberQueue is how many batches the follower queues for a member ahead
// of its handler; detachAfter is how long the follower waits for a member
// whose queue is full before it leaves that member to catch up alone.
const (
	memberQueue = 4
	detachAfter = time.Second
)

// logFollower is the engine's one reader of the log while it runs.
type logFollower struct {
	store  domain.EventStore
	events *domain.EventRegistry
	logger *slog.Logger
	// ctx bounds the following; retryDelay paces a failed subscription.
	ctx        context.Context
	retryDelay time.Duration
	wg         sync.WaitGroup

	mu sync.Mutex
	// started: the follower reads the log; read is the position up to
	// which it has handed batches to its attached members.
	started bool
	read    uint64
	// attached are the members fed by the follower.
	attached map[*member]bool
}

func newFollower(ctx context.Context, e *Engine) *logFollower {
	return &logFollower{store: e.store, events: e.events, logger: e.logger, ctx: ctx, retryDelay: e.retryDelay, attached: map[*member]bool{}}
}

// serve starts following the log after from unless the follower follows
// already.
func (f *logFollower) serve(from uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return
	}
	f.started, f.read = true, from
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.follow(from)
	}()
}

// wait returns once the following has stopped (its context ended).
func (f *logFollower) wait() { f.wg.Wait() }

// follow reads the log from after until the context ends, subscribing
// again after a failure.
func (f *logFollower) follow(after uint64) {
	for {
		err := f.store.SubscribeAll(f.ctx, after, func(ctx context.Context, events []domain.Event) error {
			f.events.DecodeAll(events)
			f.hand(ctx, events)
			after = events[len(events)-1].Position
			return nil
		})
		if f.ctx.Err() != nil {
			return
		}
		f.logger.Error("projections: following the log failed; following again", "after", after, "error", err)
		if !sleep(f.ctx, f.retryDelay) {
			return
		}
	}
}

// hand gives events to every attached member, detaching those that do not
// take them in time.
func (f *logFollower) hand(ctx context.Context, events []domain.Event) {
	f.mu.Lock()
	members := make([]*member, 0, len(f.attached))
	for m := range f.attached {
		members = append(members, m)
	}
	// Set before handing out: a member that attaches from now on has
	// applied these events already (it attaches at or after read).
	f.read = events[len(events)-1].Position
	f.mu.Unlock()
	for _, m := range members {
		if !m.offer(ctx, events) {
			f.detach(m)
		}
	}
}

func (f *logFollower) detach(m *member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attached[m] {
		delete(f.attached, m)
		close(m.detached)
	}
}

// member is one projection's place at the follower.
type member struct {
	f *logFollower
	// queue holds the batches handed to it, in log order, while it is
	// attached; detached is closed when the follower detaches it.
	queue    chan []domain.Event
	detached chan struct{}
}

// offer queues events for m, waiting at most detachAfter for room; it
// reports whether m took them.
func (m *member) offer(ctx context.Context, events []domain.Event) bool {
	select {
	case m.queue <- events:
		return true
	default:
	}
	t := time.NewTimer(detachAfter)
	defer t.Stop()
	select {
	case m.queue <- events:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// next returns the events after position after that m's projection is to
// apply next: queued by the follower while m is attached, else read from
// the log up to the follower's position (catching up), attaching m once it
// has reached the follower.
func (m *member) next(ctx context.Context, after uint64, readChunk func(ctx context.Context, after, until uint64, limit int) ([]domain.Event, error)) ([]domain.Event, error) {
	f := m.f
	for {
		select {
		case events := <-m.queue:
			return events, nil
		default:
		}
		f.mu.Lock()
		attached, detached := f.attached[m], m.detached
		if !attached && after >= f.read {
			f.attached[m] = true
			m.detached = make(chan struct{})
			f.mu.Unlock()
			continue
		}
		until := f.read
		f.mu.Unlock()
		if attached {
			select {
			case events := <-m.queue:
				return events, nil
			case <-detached:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return readChunk(ctx, after, until, replayChunk)
	}
}

// leave detaches m for good (its handler stops).
func (m *member) leave() { m.f.detach(m) }

// batchKey carries a delivered batch in its message's context.
type batchKey struct{}

// batchOf is the decoded batch a member's message delivers.
func batchOf(msg *message.Message) []domain.Event {
	events, _ := msg.Context().Value(batchKey{}).([]domain.Event)
	return events
}

// memberSubscriber is the watermill Subscriber of one projection's
// handler: it delivers the member's batches, one message each, from the
// projection's checkpoint on. A batch is redelivered until it is acked,
// after retryDelay, doubling up to maxRetryDelay: a failing projection is
// parked and retried instead of skipping events.
type memberSubscriber struct {
	e             *Engine
	f             *logFollower
	from          uint64
	retryDelay    time.Duration
	maxRetryDelay time.Duration
}

var _ message.Subscriber = (*memberSubscriber)(nil)

func (s *memberSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	out := make(chan *message.Message)
	m := &member{f: s.f, queue: make(chan []domain.Event, memberQueue), detached: make(chan struct{})}
	go func() {
		defer close(out)
		defer m.leave()
		after := s.from
		for {
			events, err := m.next(ctx, after, s.e.readChunk)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.e.logger.Error("projections: catching up from the log failed; trying again", "projection", topic, "after", after, "error", err)
				if !sleep(ctx, s.retryDelay) {
					return
				}
				continue
			}
			if len(events) == 0 {
				continue
			}
			if err := s.deliver(ctx, out, events); err != nil {
				return
			}
			after = max(after, events[len(events)-1].Position)
		}
	}()
	return out, nil
}

func (s *memberSubscriber) deliver(ctx context.Context, out chan<- *message.Message, events []domain.Event) error {
	delay := s.retryDelay
	storage := s.e.storage
	for {
		msg := message.NewMessage(uuid.NewString(), nil)
		msgCtx, cancel := context.WithCancel(context.WithValue(ctx, batchKey{}, events))
		msg.SetContext(msgCtx)
		select {
		case out <- msg:
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		}
		select {
		case <-msg.Acked():
			cancel()
			return nil
		case <-msg.Nacked():
			cancel()
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		}
		if storage != nil && storage.Full(ctx) != nil {
			// Held, not retried, until space is freed; then at once.
			if err := storage.WaitForSpace(ctx); err != nil {
				return err
			}
			delay = s.retryDelay
			continue
		}
		if !sleep(ctx, delay) {
			return ctx.Err()
		}
		delay = min(2*delay, max(s.maxRetryDelay, s.retryDelay))
	}
}

func (s *memberSubscriber) Close() error { return nil }

// readChunk reads up to limit events after position after and at most up
// to until, decoded: the one reader of the log behind the replays and the
// catching up of a live projection.
func (e *Engine) readChunk(ctx context.Context, after, until uint64, limit int) ([]domain.Event, error) {
	events, err := e.store.ReadAll(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("log ends at %d before %d", after, until)
	}
	events = events[:cut(events, until)]
	e.events.DecodeAll(events)
	return events, nil
}

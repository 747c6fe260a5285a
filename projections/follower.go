package projections

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/internal/pause"
)

// The live delivery path. One follower per running engine reads the log
// once through the engine's one reader (readLog, following the log), which
// decodes each payload once (the engine's event registry), and hands
// each decoded batch to every projection's member; each member feeds its
// projection's watermill handler, which applies the batch with the
// router's middlewares (recoverer, retry, parking) around it, and acks it
// only once applied. A batch crosses the router as a message whose context
// carries the decoded events (batchOf): there is no serialisation inside
// the process. watermill's in-memory pub/sub (gochannel) would not spare
// that, since its messages carry bytes, nor give each projection the
// redelivery of a nacked batch from its own position, which a member does.
//
// Projections move at their own pace and from their own checkpoints; the
// follower never waits for one. It starts at the lowest checkpoint of the
// first projections it serves; a member ahead of it is handed only what
// follows its own checkpoint.
// Batches queue for a member up to maxPending events (the batches are
// shared by every member, so that costs no copies); a member further
// behind (its projection parked, slow, or paused by a live rebuild) is
// detached: it applies what was queued for it, then reads the log from its
// own position through the same reader (readLog, up to the follower's
// position) until it reaches the follower, and attaches again. A member
// that starts behind the follower (a leased projection taken over) catches
// up so as well. No batch is skipped: a member reads whatever the follower
// did not hand it.

// maxPending bounds the events queued for a member by default
// (Engine.maxPending): eight of the store's full pages, more than the
// batches a busy server's writers have in flight (a projection keeping up
// never reads for itself).
const maxPending = 32768

// logFollower is the engine's one reader of the log while it runs.
type logFollower struct {
	e      *Engine
	logger *slog.Logger
	// ctx bounds the following; retryDelay paces a failed subscription.
	ctx        context.Context
	retryDelay time.Duration
	maxPending int
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
	return &logFollower{e: e, logger: e.logger, ctx: ctx, retryDelay: e.retryDelay, maxPending: e.maxPending, attached: map[*member]bool{}}
}

// join returns the members of projections at the given checkpoints,
// attached from the start unless they are behind the follower. The first
// join starts the follower at the lowest of its checkpoints, once its
// members are attached, so none of them misses the first pages.
func (f *logFollower) join(positions []uint64) []*member {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		f.started, f.read = true, slices.Min(positions)
		f.wg.Add(1)
		go func(from uint64) {
			defer f.wg.Done()
			f.follow(from)
		}(f.read)
	}
	members := make([]*member, len(positions))
	for i, pos := range positions {
		members[i] = &member{f: f, ready: make(chan struct{}, 1)}
		if pos >= f.read {
			f.attached[members[i]] = true
		}
	}
	return members
}

// wait returns once the following has stopped (its context ended).
func (f *logFollower) wait() { f.wg.Wait() }

// follow reads the log from after until the context ends, subscribing
// again after a failure.
func (f *logFollower) follow(after uint64) {
	for {
		err := f.e.readLog(f.ctx, after, following, replayChunk, f.e.events, func(events []domain.Event) error {
			f.hand(events)
			after = events[len(events)-1].Position
			return nil
		})
		if f.ctx.Err() != nil {
			return
		}
		f.logger.Error("projections: following the log failed; following again", "after", after, "error", err)
		if !pause.For(f.ctx, f.retryDelay) {
			return
		}
	}
}

// hand queues events for every attached member, detaching those that have
// more than maxPending events queued already.
func (f *logFollower) hand(events []domain.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// A member that attaches from now on has applied these events already
	// (it attaches at or after read).
	f.read = events[len(events)-1].Position
	for m := range f.attached {
		if len(m.pending) > 0 && m.pendingEvents+len(events) > f.maxPending {
			f.detachLocked(m)
			continue
		}
		m.pending = append(m.pending, events)
		m.pendingEvents += len(events)
		m.signal()
	}
}

// detachLocked stops handing batches to m; f.mu is held.
func (f *logFollower) detachLocked(m *member) {
	delete(f.attached, m)
	m.signal()
}

// member is one projection's place at the follower; its fields are
// guarded by the follower's mu.
type member struct {
	f *logFollower
	// pending are the batches handed to it, in log order, not yet taken.
	pending       [][]domain.Event
	pendingEvents int
	// ready is signalled when a batch is queued or it is detached.
	ready chan struct{}
}

func (m *member) signal() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// next returns the batch m's projection is to apply next, queued by the
// follower while m is attached. Detached, m gets no batch but the
// follower's position (catchUpTo), up to which it is to read the log
// itself after its own position after; once it has reached the follower
// it is attached again.
func (m *member) next(ctx context.Context, after uint64) (events []domain.Event, catchUpTo uint64, err error) {
	f := m.f
	for {
		f.mu.Lock()
		if len(m.pending) > 0 {
			events := m.takePending()
			f.mu.Unlock()
			return events, 0, nil
		}
		attached := f.attached[m]
		if !attached && after >= f.read {
			f.attached[m] = true
			f.mu.Unlock()
			continue
		}
		until := f.read
		f.mu.Unlock()
		if !attached {
			return nil, until, nil
		}
		select {
		case <-m.ready:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// takePending takes the oldest queued batch, joined with the next ones up
// to a page of the store (replayChunk events): a projection that fell
// behind (paused by a live rebuild, say) applies its backlog in a few
// transactions, as reading the log itself would, rather than one per
// write. f.mu is held.
func (m *member) takePending() []domain.Event {
	n, total := 1, len(m.pending[0])
	for n < len(m.pending) && total+len(m.pending[n]) <= replayChunk {
		total += len(m.pending[n])
		n++
	}
	events := m.pending[0]
	if n > 1 {
		events = slices.Concat(m.pending[:n]...)
	}
	clear(m.pending[:n])
	m.pending = m.pending[n:]
	m.pendingEvents -= total
	return events
}

// leave detaches m for good (its handler stops).
func (m *member) leave() {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.f.detachLocked(m)
}

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
	m             *member
	from          uint64
	retryDelay    time.Duration
	maxRetryDelay time.Duration
}

var _ message.Subscriber = (*memberSubscriber)(nil)

func (s *memberSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	out := make(chan *message.Message)
	m := s.m
	go func() {
		defer close(out)
		defer m.leave()
		after := s.from
		for {
			events, catchUpTo, err := m.next(ctx, after)
			if err != nil {
				return // ctx ended
			}
			if events == nil {
				err := s.e.readLog(ctx, after, catchUpTo, replayChunk, s.e.events, func(events []domain.Event) error {
					if err := s.deliver(ctx, out, events); err != nil {
						return err
					}
					after = events[len(events)-1].Position
					return nil
				})
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					s.e.logger.Error("projections: catching up from the log failed; trying again", "projection", topic, "after", after, "error", err)
					if !pause.For(ctx, s.retryDelay) {
						return
					}
				}
				continue
			}
			// A projection that started ahead of the follower is handed
			// no batch of what it applied already.
			if events = events[cut(events, after):]; len(events) == 0 {
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
		if !pause.For(ctx, delay) {
			return ctx.Err()
		}
		delay = min(2*delay, max(s.maxRetryDelay, s.retryDelay))
	}
}

func (s *memberSubscriber) Close() error { return nil }

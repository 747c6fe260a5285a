package projections

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/engram-memory/engram/domain"
)

// logSubscriber is a watermill Subscriber that reads the event log from a
// checkpoint and delivers it as one message per batch. A batch is
// redelivered until it is acked, after retryDelay, doubling up to
// maxRetryDelay: a failing projection is parked and retried instead of
// skipping events.
type logSubscriber struct {
	store         domain.EventStore
	from          uint64
	retryDelay    time.Duration
	maxRetryDelay time.Duration
	// storage, when set, holds a failed batch while storage is full.
	storage StorageGuard
	logger  *slog.Logger
}

var _ message.Subscriber = (*logSubscriber)(nil)

func (s *logSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		err := s.store.SubscribeAll(ctx, s.from, func(ctx context.Context, events []domain.Event) error {
			return s.deliver(ctx, out, events)
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			s.logger.Error("event subscription ended", "topic", topic, "error", err)
		}
	}()
	return out, nil
}

func (s *logSubscriber) deliver(ctx context.Context, out chan<- *message.Message, events []domain.Event) error {
	payload := encodeBatch(events)
	delay := s.retryDelay
	for {
		msg := message.NewMessage(uuid.NewString(), payload)
		msgCtx, cancel := context.WithCancel(ctx)
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
		if s.storage != nil && s.storage.Full(ctx) != nil {
			// Held, not retried, until space is freed; then at once.
			if err := s.storage.WaitForSpace(ctx); err != nil {
				return err
			}
			delay = s.retryDelay
			continue
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, max(s.maxRetryDelay, s.retryDelay))
	}
}

func (s *logSubscriber) Close() error { return nil }

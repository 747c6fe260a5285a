package kurrentdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/domain"
)

// Claims (domain.NewEvent.Claims: a key, such as a memory id, that one
// event takes for good across every stream).
//
// KurrentDB commits a write to one stream atomically, and only 25.1 and
// later can append to several streams in one write (the v2 AppendSession,
// KurrentDB-Client-Go's MultiStreamAppend), which AppendStreams uses there
// (multistream.go). Engram supports 24.10 and 25.0 too, and Append writes
// through v1 on every version. So a claim is taken before the append, in
// a stream of its own, and judged against the log (a multi-stream append
// writes its attempts in the same session as its events instead, so they
// are live at once):
//
//   - The claim stream of key k, Prefix+"~claims."+k, holds attempts:
//     "this key goes to the event with id E at revision v of stream S". An
//     appender reads the claim stream and appends its attempt at the
//     revision it read (expected revision: the stream's last, or no
//     stream), so attempts are totally ordered and each appender has seen
//     every attempt before its own.
//   - An earlier attempt is live when S holds E at v (the key is taken),
//     dead when S holds another event at v (E can never land: appends
//     with claims always name the exact revision they expect), and
//     pending while S is shorter. A live attempt, or a pending one for
//     another slot than the appender's, refuses the append with a
//     *domain.ClaimTakenError; a pending attempt for the same slot does
//     not, since of two events at one revision only one can land.
//   - Then the events are appended at exactly the revision the attempts
//     name. Of two appends that claim one key, the later attempt's
//     appender saw the earlier attempt, and the earlier attempt's event
//     lands only if it is live (refusing the later one) or in the same
//     slot (where the later cannot land too): at most one lands, and one
//     that is answered success stays.
//   - An append refused before its events were sent withdraws the
//     attempts it made ("ClaimWithdrawn"), which makes them dead. An
//     append whose outcome is unknown (a broken connection) withdraws
//     nothing: its attempts stay pending until the stream reaches their
//     revision — till then only an append to the same slot (the retry of
//     the same write) may claim those keys, and another is refused with
//     409 memory_exists. Nothing acknowledged is ever lost.
//
// Claim streams are not Engram streams: the '.' before their first '-'
// keeps them out of owns and out of the server-side $all filter, and '~'
// is not allowed in a prefix, so no deployment reads them as its own.
const claimStreamInfix = "~claims."

// The event types of a claim stream.
const (
	claimAttempted = "ClaimAttempted"
	claimWithdrawn = "ClaimWithdrawn"
)

// maxClaimRounds bounds how often an append starts again because another
// appender wrote first to one of its claim streams, or (with ExpectAny)
// to its stream.
const maxClaimRounds = 10

// claimParallelism bounds the claims of one append in flight at once
// (each is two round trips: a memory batch claims one key per memory).
const claimParallelism = 16

// claimSlot is an attempt's record: the key goes to event EventID at
// Revision of Engram stream Stream.
type claimSlot struct {
	Stream   string `json:"stream"`
	Revision uint64 `json:"revision"`
	EventID  string `json:"event_id"`
}

// claim is one key an append claims for one of its events.
type claim struct {
	key  string
	slot claimSlot
}

func (s *EventStore) claimStream(key string) string { return s.prefix + claimStreamInfix + key }

// appendClaiming appends events (as data) to stream after claiming their
// keys. An append with ExpectAny is made at the revision read just before
// and starts again if another write took it.
func (s *EventStore) appendClaiming(ctx context.Context, stream string, expected int64, events []domain.NewEvent, data []kdb.EventData, size int) (domain.AppendResult, error) {
	for round := 1; ; round++ {
		exact := expected
		if expected == domain.ExpectAny {
			v, err := s.StreamVersion(ctx, stream)
			if err != nil {
				return domain.AppendResult{}, err
			}
			exact = v
		}
		var claims []claim
		for i, e := range events {
			for _, key := range e.Claims {
				claims = append(claims, claim{key: key, slot: claimSlot{Stream: stream, Revision: uint64(exact + 1 + int64(i)), EventID: data[i].EventID.String()}})
			}
		}
		if err := s.claim(ctx, claims); err != nil {
			if expected == domain.ExpectAny {
				return domain.AppendResult{}, fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
			}
			return domain.AppendResult{}, s.refusal(ctx, stream, exact, err)
		}
		state, err := streamState(exact)
		if err != nil {
			return domain.AppendResult{}, fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
		}
		res, err := s.appendEvents(ctx, stream, state, data, size)
		var refused *domain.Error
		switch {
		case errors.Is(err, domain.ErrWrongExpectedVersion) && expected == domain.ExpectAny && round < maxClaimRounds:
			// Another write took the slot: the attempts are dead with it.
			continue
		case errors.As(err, &refused) && refused.Kind == domain.KindTooLarge:
			// The server refused the whole append: nothing will land.
			s.withdrawAll(ctx, claims, func(int) bool { return true })
		}
		return res, err
	}
}

// refusal is the error of an append to stream at exact whose claims
// failed with err. A claim refused on a stream that is not at exact is
// answered as a wrong expected version, as the other logs answer it
// (they check the version first): the appender decides again rather than
// learn of a key its stale decision claimed.
func (s *EventStore) refusal(ctx context.Context, stream string, exact int64, err error) error {
	if errors.Is(err, domain.ErrClaimTaken) {
		if v, verr := s.StreamVersion(ctx, stream); verr == nil && v != exact {
			return fmt.Errorf("kurrentdb: append to %s: expected version %d, stream is at %d: %w", stream, exact, v, domain.ErrWrongExpectedVersion)
		}
	}
	return fmt.Errorf("kurrentdb: append to %s: %w", stream, err)
}

// claim records an attempt for every claim, or fails, having withdrawn
// the attempts it made; a *domain.ClaimTakenError comes first.
func (s *EventStore) claim(ctx context.Context, claims []claim) error {
	made := make([]bool, len(claims))
	errs := make([]error, len(claims))
	s.forEachClaim(claims, func(i int, c claim) { made[i], errs[i] = s.claimOne(ctx, c) })
	var taken *domain.ClaimTakenError
	err := errors.Join(errs...)
	if err == nil {
		return nil
	}
	if errors.As(err, &taken) {
		err = taken
	}
	s.withdrawAll(ctx, claims, func(i int) bool { return made[i] })
	return err
}

// withdrawAll withdraws the attempts of the claims that made says were
// made, even if the caller has gone: a pending attempt would keep its key
// from others until its stream reaches its revision.
func (s *EventStore) withdrawAll(ctx context.Context, claims []claim, made func(int) bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s.forEachClaim(claims, func(i int, c claim) {
		if !made(i) {
			return
		}
		if err := s.withdraw(ctx, c); err != nil {
			s.log.Warn("kurrentdb: could not withdraw a claim; its key stays pending until its stream moves on", "key", c.key, "stream", c.slot.Stream, "revision", c.slot.Revision, "error", err)
		}
	})
}

// forEachClaim calls f for every claim, claimParallelism at a time.
func (s *EventStore) forEachClaim(claims []claim, f func(int, claim)) {
	sem := make(chan struct{}, claimParallelism)
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i, c)
		}()
	}
	wg.Wait()
}

// claimOne appends c's attempt once no earlier attempt stands in its way;
// made is whether the attempt may have been written.
func (s *EventStore) claimOne(ctx context.Context, c claim) (made bool, err error) {
	name := s.claimStream(c.key)
	raw, err := json.Marshal(c.slot)
	if err != nil {
		return false, err
	}
	for round := 1; ; round++ {
		recs, err := s.read(ctx, func(cl *kdb.Client) (*kdb.ReadStream, error) {
			return cl.ReadStream(ctx, name, kdb.ReadStreamOptions{From: kdb.Start{}}, math.MaxUint64)
		})
		if err != nil {
			return false, fmt.Errorf("read the claim of %s: %w", c.key, err)
		}
		if err := s.checkClaim(ctx, c, recs); err != nil {
			return false, err
		}
		var expected kdb.StreamState = kdb.NoStream{}
		if len(recs) > 0 {
			expected = kdb.Revision(recs[len(recs)-1].EventNumber)
		}
		attempt := kdb.EventData{EventID: uuid.Must(uuid.NewV7()), EventType: claimAttempted, ContentType: kdb.ContentTypeJson, Data: raw}
		_, err = unstuck(ctx, s, func(cl *kdb.Client) (*kdb.WriteResult, error) {
			return cl.AppendToStream(ctx, name, kdb.AppendToStreamOptions{StreamState: expected}, attempt)
		}, nil)
		var kerr *kdb.Error
		switch {
		case err == nil:
			return true, nil
		case errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeWrongExpectedVersion):
			// Another attempt came first: judge it too.
			if round < maxClaimRounds {
				continue
			}
			return false, fmt.Errorf("claim %s: %d other appenders came first: %w", c.key, round, err)
		default:
			return true, fmt.Errorf("claim %s: %w", c.key, err)
		}
	}
}

// checkClaim refuses c if an attempt of recs (a claim stream) is live, or
// pending for another slot than c's.
func (s *EventStore) checkClaim(ctx context.Context, c claim, recs []*kdb.RecordedEvent) error {
	withdrawn := map[claimSlot]bool{}
	var attempts []claimSlot
	for _, r := range recs {
		var slot claimSlot
		if err := json.Unmarshal(r.Data, &slot); err != nil {
			return fmt.Errorf("claim %s: record %d: %w", c.key, r.EventNumber, err)
		}
		switch r.EventType {
		case claimAttempted:
			attempts = append(attempts, slot)
		case claimWithdrawn:
			withdrawn[slot] = true
		}
	}
	for _, a := range attempts {
		if withdrawn[a] {
			continue
		}
		live, pending, err := s.attemptState(ctx, a)
		if err != nil {
			return fmt.Errorf("claim %s: %w", c.key, err)
		}
		sameSlot := a.Stream == c.slot.Stream && a.Revision == c.slot.Revision
		if live || (pending && !sameSlot) {
			return &domain.ClaimTakenError{Key: c.key}
		}
	}
	return nil
}

// attemptState reads where attempt a's event lands. A deleted stream
// counts as live: whatever it held keeps its keys.
func (s *EventStore) attemptState(ctx context.Context, a claimSlot) (live, pending bool, err error) {
	recs, err := s.read(ctx, func(cl *kdb.Client) (*kdb.ReadStream, error) {
		return cl.ReadStream(ctx, s.prefix+a.Stream, kdb.ReadStreamOptions{From: kdb.Revision(a.Revision)}, 1)
	})
	var kerr *kdb.Error
	switch {
	case errors.As(err, &kerr) && kerr.IsErrorCode(kdb.ErrorCodeStreamDeleted):
		return true, false, nil
	case err != nil:
		return false, false, fmt.Errorf("read %s at %d: %w", a.Stream, a.Revision, err)
	case len(recs) == 0:
		return false, true, nil
	}
	return recs[0].EventNumber == a.Revision && recs[0].EventID.String() == a.EventID, false, nil
}

// withdraw makes c's attempt dead: its appender will not append.
func (s *EventStore) withdraw(ctx context.Context, c claim) error {
	raw, err := json.Marshal(c.slot)
	if err != nil {
		return err
	}
	ev := kdb.EventData{EventID: uuid.Must(uuid.NewV7()), EventType: claimWithdrawn, ContentType: kdb.ContentTypeJson, Data: raw}
	_, err = unstuck(ctx, s, func(cl *kdb.Client) (*kdb.WriteResult, error) {
		return cl.AppendToStream(ctx, s.claimStream(c.key), kdb.AppendToStreamOptions{StreamState: kdb.Any{}}, ev)
	}, nil)
	return err
}

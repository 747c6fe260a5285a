package kurrentdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	kdb "github.com/kurrent-io/KurrentDB-Client-Go/kurrentdb"

	"github.com/engram-memory/engram/domain"
)

// The multi-stream append of KurrentDB 25.1 and later: the v2 streams
// protocol's AppendSession (kurrentdb.protocol.v2), which the client calls
// MultiStreamAppend. The server checks every stream's expected revision
// and writes all the records as one transaction, or refuses the whole
// session (src/KurrentDB.Api.V2/Modules/Streams/StreamsService.cs in
// KurrentDB's source).
//
// Whether the server has it is the client's own decision, made from the
// methods the server lists in ServerFeatures when the client connects
// ("appendsession"): on an older server MultiStreamAppend fails with
// ErrorCodeUnsupportedFeature before sending anything, and so does a
// server that answers the call with UNIMPLEMENTED. Either way nothing was
// written, and AppendStreams appends part by part instead. The check is
// made on every call, so a server upgraded under a running Engram is used
// as soon as the client reconnects to it.
//
// A v2 record carries its metadata as properties of string values, not as
// the JSON custom metadata of a v1 append (the client requires a JSON
// object of strings), and a v1 read gives them back as JSON synthesized
// from those properties plus "$schema.name" and "$schema.format"
// (src/KurrentDB.Core/Data/EventRecord.cs). So an event appended this way
// carries eventMetadata with every value a string (propertyMetadata), and
// decodeMetadata reads both forms.
//
// Claims: the attempt of each key (see claims.go) is appended in the same
// session as the events, to the claim stream at the revision read, so an
// attempt of a multi-stream append is live as soon as it is written and
// never has to be withdrawn; a concurrent attempt on the same key makes
// the session fail on the claim stream's revision, and the round starts
// again.

// errNoMultiStreamAppend: the server has no multi-stream append (before
// 25.1); nothing was written.
var errNoMultiStreamAppend = errors.New("kurrentdb: the server has no multi-stream append (KurrentDB 25.1 and later)")

// appendSession appends every part in one v2 append session, or
// errNoMultiStreamAppend.
func (s *EventStore) appendSession(ctx context.Context, parts []domain.StreamAppend, batches []batch) ([]domain.AppendResult, error) {
	size, events := 0, 0
	streams := make([]string, len(parts))
	for i, b := range batches {
		size += b.size
		events += len(b.data)
		streams[i] = parts[i].Stream
	}
	// The parts together are one write on a server that has the v2
	// append; an older one takes them part by part, each within the
	// limit (newBatch). Should the version be unknown, the server's own
	// check refuses a session over its limit.
	if size > s.maxAppend && s.versionHasMultiStreamAppend() {
		return nil, appendTooLarge(strings.Join(streams, ", "), events, size, s.maxAppend)
	}
	for round := 1; ; round++ {
		out, err := s.appendSessionOnce(ctx, parts, batches)
		var again retryable
		if !errors.As(err, &again) {
			return out, err
		}
		if round == maxClaimRounds {
			return nil, fmt.Errorf("%w (%d rounds)", again.error, round)
		}
	}
}

// versionHasMultiStreamAppend reports whether the server the client is
// connected to is KurrentDB 25.1 or later (false when that is unknown).
func (s *EventStore) versionHasMultiStreamAppend() bool {
	v, err := unstuck(context.Background(), s, func(c *kdb.Client) (*kdb.ServerVersion, error) { return c.GetServerVersion() }, nil)
	return err == nil && v.IsAtLeast(25, 1, 0)
}

// appendSessionOnce makes one attempt; a retryable error says that
// another write came first to a stream whose revision this append chose
// itself (a claim stream, or a claiming part's stream with ExpectAny), so
// a new round may succeed.
func (s *EventStore) appendSessionOnce(ctx context.Context, parts []domain.StreamAppend, batches []batch) ([]domain.AppendResult, error) {
	var err error
	// The revision each part is appended at: its expected version, or,
	// for a part with claims and ExpectAny, the stream's version now (an
	// attempt names the exact revision of its event).
	exact := make([]int64, len(parts))
	chosen := map[string]bool{}
	var claims []claim
	owner := map[string]int{} // claim key → part
	for i, p := range parts {
		exact[i] = p.Expected
		if !batches[i].claims {
			continue
		}
		if p.Expected == domain.ExpectAny {
			if exact[i], err = s.StreamVersion(ctx, p.Stream); err != nil {
				return nil, err
			}
			chosen[s.prefix+p.Stream] = true
		}
		for j, e := range p.Events {
			for _, key := range e.Claims {
				if _, twice := owner[key]; twice {
					return nil, fmt.Errorf("kurrentdb: append to %s: %w", p.Stream, &domain.ClaimTakenError{Key: key})
				}
				owner[key] = i
				claims = append(claims, claim{key: key, slot: claimSlot{Stream: p.Stream, Revision: uint64(exact[i] + 1 + int64(j)), EventID: batches[i].data[j].EventID.String()}})
			}
		}
	}
	attempts, err := s.readClaims(ctx, claims)
	if err != nil {
		var taken *domain.ClaimTakenError
		if errors.As(err, &taken) {
			i := owner[taken.Key]
			if parts[i].Expected != domain.ExpectAny {
				return nil, s.refusal(ctx, parts[i].Stream, exact[i], err)
			}
		}
		return nil, fmt.Errorf("kurrentdb: append: %w", err)
	}
	for _, a := range attempts {
		chosen[a.StreamName] = true
	}
	// The claim streams come first, so the session's position is that of
	// the last part's last event.
	requests := attempts
	for i, p := range parts {
		state, err := streamState(exact[i])
		if err != nil {
			return nil, fmt.Errorf("kurrentdb: append to %s: %w", p.Stream, err)
		}
		data := make([]kdb.EventData, len(batches[i].data))
		for j, d := range batches[i].data {
			if d.Metadata, err = batches[i].meta[j].properties(); err != nil {
				return nil, fmt.Errorf("kurrentdb: append to %s: metadata: %w", p.Stream, err)
			}
			data[j] = d
		}
		requests = append(requests, kdb.AppendStreamRequest{StreamName: s.prefix + p.Stream, Events: slices.Values(data), ExpectedStreamState: state})
	}
	res, err := unstuck(ctx, s, func(c *kdb.Client) (*kdb.MultiStreamAppendResponse, error) {
		return c.MultiStreamAppend(ctx, slices.Values(requests))
	}, nil)
	if err != nil {
		return nil, s.sessionError(err, parts, chosen)
	}
	if len(res.Responses) != len(requests) {
		return nil, fmt.Errorf("kurrentdb: multi-stream append: %d results for %d streams", len(res.Responses), len(requests))
	}
	out := make([]domain.AppendResult, len(parts))
	for i := range parts {
		out[i].NextExpectedVersion = res.Responses[len(attempts)+i].StreamRevision
	}
	last := len(parts) - 1
	out[last].LastPosition = uint64(res.Position)
	s.sawHead(out[last].LastPosition)
	// The server gives the position of the session's last record only:
	// an earlier part's is read back (AppendStreams has few parts: an
	// import's cognition and agent streams).
	for i := range last {
		recs, err := s.read(ctx, func(c *kdb.Client) (*kdb.ReadStream, error) {
			return c.ReadStream(ctx, s.prefix+parts[i].Stream, kdb.ReadStreamOptions{From: kdb.Revision(uint64(out[i].NextExpectedVersion))}, 1)
		})
		if err == nil && len(recs) == 0 {
			err = fmt.Errorf("no event at revision %d", out[i].NextExpectedVersion)
		}
		if err != nil {
			return nil, fmt.Errorf("kurrentdb: the multi-stream append was stored; reading back the position of %s: %w", parts[i].Stream, err)
		}
		out[i].LastPosition = recs[0].Position.Commit
	}
	return out, nil
}

// readClaims reads the claim stream of every claim and checks it
// (checkClaim): the attempts to append in the session, each at the claim
// stream's revision read, or a *domain.ClaimTakenError.
func (s *EventStore) readClaims(ctx context.Context, claims []claim) ([]kdb.AppendStreamRequest, error) {
	out := make([]kdb.AppendStreamRequest, len(claims))
	errs := make([]error, len(claims))
	s.forEachClaim(claims, func(i int, c claim) {
		name := s.claimStream(c.key)
		recs, err := s.read(ctx, func(cl *kdb.Client) (*kdb.ReadStream, error) {
			return cl.ReadStream(ctx, name, kdb.ReadStreamOptions{From: kdb.Start{}}, math.MaxUint64)
		})
		if err != nil {
			errs[i] = fmt.Errorf("read the claim of %s: %w", c.key, err)
			return
		}
		if errs[i] = s.checkClaim(ctx, c, recs); errs[i] != nil {
			return
		}
		raw, err := json.Marshal(c.slot)
		if err != nil {
			errs[i] = err
			return
		}
		var expected kdb.StreamState = kdb.NoStream{}
		if len(recs) > 0 {
			expected = kdb.Revision(recs[len(recs)-1].EventNumber)
		}
		attempt := kdb.EventData{EventID: uuid.Must(uuid.NewV7()), EventType: claimAttempted, ContentType: kdb.ContentTypeJson, Data: raw}
		out[i] = kdb.AppendStreamRequest{StreamName: name, Events: slices.Values([]kdb.EventData{attempt}), ExpectedStreamState: expected}
	})
	err := errors.Join(errs...)
	var taken *domain.ClaimTakenError
	if errors.As(err, &taken) {
		return nil, taken
	}
	return out, err
}

// sessionError maps a refused session. A revision conflict on a stream
// whose revision this append chose (chosen) can go away in a new round;
// on a part's own expected version it is domain.ErrWrongExpectedVersion.
func (s *EventStore) sessionError(err error, parts []domain.StreamAppend, chosen map[string]bool) error {
	var kerr *kdb.Error
	if !errors.As(err, &kerr) {
		return fmt.Errorf("kurrentdb: multi-stream append: %w", err)
	}
	var conflict *kdb.StreamRevisionConflictError
	var tooLarge *kdb.AppendTransactionSizeExceededError
	var recordTooLarge *kdb.AppendRecordSizeExceededError
	switch {
	case kerr.IsErrorCode(kdb.ErrorCodeUnsupportedFeature):
		return errNoMultiStreamAppend
	case errors.As(kerr.Err(), &conflict):
		if chosen[conflict.Stream] {
			return retryable{fmt.Errorf("kurrentdb: append: %s moved on: %w", conflict.Stream, domain.ErrWrongExpectedVersion)}
		}
		return fmt.Errorf("kurrentdb: append to %s: expected %s, stream is at %s: %w", strings.TrimPrefix(conflict.Stream, s.prefix), revisionText(conflict.ExpectedRevision), revisionText(conflict.ActualRevision), domain.ErrWrongExpectedVersion)
	case errors.As(kerr.Err(), &tooLarge):
		return appendTooLarge(streamList(parts), len(parts), int(tooLarge.Size), int(tooLarge.MaxSize))
	case errors.As(kerr.Err(), &recordTooLarge):
		return appendTooLarge(strings.TrimPrefix(recordTooLarge.Stream, s.prefix), 1, int(recordTooLarge.Size), int(recordTooLarge.MaxSize))
	}
	return fmt.Errorf("kurrentdb: multi-stream append to %s: %w", streamList(parts), err)
}

// revisionText says a stream state of a revision conflict in words.
func revisionText(state kdb.StreamState) string {
	switch v := state.(type) {
	case kdb.NoStream:
		return "no stream"
	case kdb.Any:
		return "any revision"
	case kdb.StreamExists:
		return "an existing stream"
	case kdb.StreamRevision:
		return "revision " + strconv.FormatUint(v.Value, 10)
	}
	return fmt.Sprint(state)
}

func streamList(parts []domain.StreamAppend) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Stream
	}
	return strings.Join(names, ", ")
}

// retryable marks a refused session that a new round may get through.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

// propertyMetadata is eventMetadata as properties of a v2 append: every
// value a string (the client takes a JSON object of strings).
type propertyMetadata struct {
	SchemaVersion string    `json:"schema_version"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	RequestID     string    `json:"request_id,omitempty"`
	Source        string    `json:"source,omitempty"`
	CorrelationID string    `json:"$correlationId,omitempty"`
}

// properties is m as the metadata of a v2 append.
func (m eventMetadata) properties() ([]byte, error) {
	actor, err := json.Marshal(m.Actor)
	if err != nil {
		return nil, err
	}
	return json.Marshal(propertyMetadata{SchemaVersion: strconv.Itoa(m.SchemaVersion), Time: m.Time, Actor: string(actor),
		RequestID: m.RequestID, Source: m.Source, CorrelationID: m.CorrelationID})
}

// decodeMetadata reads an Engram event's metadata as a v1 append wrote
// it, or as a v1 read gives back the properties of a v2 append.
func decodeMetadata(raw []byte) (eventMetadata, error) {
	var m eventMetadata
	err := json.Unmarshal(raw, &m)
	if err == nil {
		return m, nil
	}
	var p propertyMetadata
	if json.Unmarshal(raw, &p) != nil {
		return eventMetadata{}, err
	}
	version, verr := strconv.Atoi(p.SchemaVersion)
	var actor domain.Actor
	if aerr := json.Unmarshal([]byte(p.Actor), &actor); verr != nil || aerr != nil {
		return eventMetadata{}, fmt.Errorf("event metadata as properties: schema_version %q, actor %q: %w", p.SchemaVersion, p.Actor, errors.Join(verr, aerr))
	}
	return eventMetadata{SchemaVersion: version, Time: p.Time, Actor: actor, RequestID: p.RequestID, Source: p.Source, CorrelationID: p.CorrelationID}, nil
}

package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/engram-memory/engram/domain"
)

// Batches cross the watermill router as bytes. JSON would re-scan every
// payload (vectors included) on both sides for every projection; this
// length-prefixed framing copies bytes once and decodes payloads as slices
// of the message.

const codecVersion = 2

func encodeBatch(events []domain.Event) []byte {
	size := 16
	for _, e := range events {
		size += 64 + len(e.ID) + len(e.Stream) + len(e.Type) + len(e.Actor.Kind) + len(e.Actor.ID) + len(e.Actor.UserID) + len(e.RequestID) + len(e.Source) + len(e.Payload)
	}
	buf := make([]byte, 0, size)
	buf = binary.AppendUvarint(buf, codecVersion)
	buf = binary.AppendUvarint(buf, uint64(len(events)))
	for _, e := range events {
		buf = binary.AppendUvarint(buf, e.Position)
		buf = binary.AppendUvarint(buf, e.Version)
		buf = binary.AppendUvarint(buf, uint64(e.SchemaVersion))
		buf = binary.AppendVarint(buf, e.Time.UnixNano())
		for _, s := range []string{e.ID, e.Stream, e.Type, string(e.Actor.Kind), e.Actor.ID, e.Actor.UserID, e.RequestID, string(e.Source)} {
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		}
		buf = binary.AppendUvarint(buf, uint64(len(e.Payload)))
		buf = append(buf, e.Payload...)
	}
	return buf
}

var errTruncated = errors.New("truncated batch")

type batchReader struct {
	buf []byte
	err error
}

func (r *batchReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.buf)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *batchReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.buf)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *batchReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if uint64(len(r.buf)) < n {
		r.err = errTruncated
		return nil
	}
	b := r.buf[:n:n]
	r.buf = r.buf[n:]
	return b
}

func decodeBatch(payload []byte) ([]domain.Event, error) {
	r := &batchReader{buf: payload}
	if v := r.uvarint(); r.err == nil && v != codecVersion {
		return nil, fmt.Errorf("decode batch: codec version %d", v)
	}
	count := r.uvarint()
	if r.err == nil && count == 0 {
		return nil, errors.New("decode batch: empty batch")
	}
	if r.err == nil && count > uint64(len(payload)) {
		return nil, fmt.Errorf("decode batch: %w", errTruncated)
	}
	events := make([]domain.Event, 0, count)
	for i := uint64(0); i < count && r.err == nil; i++ {
		var e domain.Event
		e.Position = r.uvarint()
		e.Version = r.uvarint()
		e.SchemaVersion = int(r.uvarint())
		e.Time = time.Unix(0, r.varint()).UTC()
		e.ID = string(r.bytes())
		e.Stream = string(r.bytes())
		e.Type = string(r.bytes())
		e.Actor.Kind = domain.ActorKind(r.bytes())
		e.Actor.ID = string(r.bytes())
		e.Actor.UserID = string(r.bytes())
		e.RequestID = string(r.bytes())
		e.Source = domain.Source(r.bytes())
		e.Payload = r.bytes()
		events = append(events, e)
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode batch: %w", r.err)
	}
	return events, nil
}

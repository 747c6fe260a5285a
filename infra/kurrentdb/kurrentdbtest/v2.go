package kurrentdbtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"

	"github.com/google/uuid"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/serverfeatures"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/shared"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/streams"
	streamerrors "github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v2/streams/errors"
	v2 "github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v2/streams/streams"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/structpb"
)

// The server versions the test server can play. The client decides
// whether to use the v2 multi-stream append from the version's methods
// listed by ServerFeatures (getSupportedMethods in KurrentDB-Client-Go's
// kurrentdb/impl.go: a method "appendsession" of any service).
const (
	// Version24_10 has the v1 Streams service only: no multi-stream append.
	Version24_10 = "24.10.0"
	// Version25_1 adds the v2 StreamsService with AppendSession, the
	// atomic multi-stream append (KurrentDB 25.1.0 and later).
	Version25_1 = "25.1.0"
)

// hasAppendSession reports whether the server plays a version with the v2
// StreamsService.
func (s *Server) hasAppendSession() bool { return s.version() != Version24_10 }

func (s *Server) version() string {
	if s.opts.Version == "" {
		return Version25_1
	}
	return s.opts.Version
}

// features is KurrentDB's ServerFeatures service: the server version and
// the gRPC methods it serves. Modelled on
// src/KurrentDB.Core/Services/Transport/Grpc/ServerFeatures.cs (v25.1.0):
// every method of a "client" or "kurrentdb.protocol" service, lower-cased,
// the version cut to major.minor.patch.
type features struct {
	serverfeatures.UnimplementedServerFeaturesServer
	srv *Server
}

func (f features) GetSupportedMethods(context.Context, *shared.Empty) (*serverfeatures.SupportedMethods, error) {
	const v1Streams = "event_store.client.streams.streams"
	methods := []*serverfeatures.SupportedMethod{
		{ServiceName: "event_store.client.server_features.serverfeatures", MethodName: "getsupportedmethods"},
		{ServiceName: v1Streams, MethodName: "read", Features: []string{"position", "events"}},
		{ServiceName: v1Streams, MethodName: "append"},
		{ServiceName: v1Streams, MethodName: "tombstone"},
	}
	if f.srv.hasAppendSession() {
		methods = append(methods, &serverfeatures.SupportedMethod{ServiceName: "kurrentdb.protocol.v2.streams.streamsservice", MethodName: "appendsession"})
	}
	return &serverfeatures.SupportedMethods{Methods: methods, EventStoreServerVersion: f.srv.version()}, nil
}

// streamsV2 is KurrentDB 25.1's v2 StreamsService: AppendSession, the
// atomic append to several streams. Modelled on KurrentDB's
// src/KurrentDB.Api.V2/Modules/Streams/StreamsService.cs (v25.1.0), its
// Model/ and Validators/ and ApiErrors.cs:
//   - each AppendRequest names a stream at most once per session (case
//     insensitively), else Aborted STREAM_ALREADY_IN_APPEND_SESSION;
//   - an expected revision is ≥ 0 or NoStream (-1), Any (-2, also when
//     absent) or Exists (-4); a request has at least one record; a record
//     id, when given, is a UUID (a missing one is generated); a schema
//     name is not empty: InvalidArgument otherwise;
//   - each record's size (data + its properties as a protobuf Struct +
//     schema name) is checked against the record limit (InvalidArgument
//     APPEND_RECORD_SIZE_EXCEEDED), their sum against MaxAppendSize
//     (Aborted APPEND_TRANSACTION_SIZE_EXCEEDED), before anything is
//     written;
//   - no request at all: FailedPrecondition APPEND_SESSION_NO_REQUESTS;
//   - then one write (the core's WriteEvents with several streams): every
//     stream's expected revision is checked first, and the first that
//     fails refuses the whole session: FailedPrecondition
//     STREAM_REVISION_CONFLICT with the stream, the expected revision as
//     sent and the actual one (-1 for no stream), or STREAM_TOMBSTONED;
//   - the records land in the order sent, stream after stream, as one
//     transaction of self-committed prepares
//     (src/KurrentDB.Core/Services/Storage/StorageWriterService.cs), so an
//     event's commit and prepare positions are its own log position, as
//     for a v1 append; the response carries each stream's last revision
//     and the commit position of the session's last record.
//
// Errors carry google.rpc.Status details as the server's
// RpcExceptions.FromError builds them: an ErrorInfo (reason, domain
// "streams") and the error's own details message, which the client maps
// (getDetail in KurrentDB-Client-Go's kurrentdb/errors.go).
//
// Records are stored with their properties as metadata
// (Model/Mapping.cs: isPropertyMetadata), and a v1 read gives them back as
// JSON custom metadata synthesized from the properties plus
// "$schema.name" and "$schema.format"
// (src/KurrentDB.Core/Data/EventRecord.cs, SynthesizeMetadataFromProperties).
// This server synthesizes that JSON at append time, with sorted keys and
// no spaces where KurrentDB's JsonFormatter keeps insertion order.
type streamsV2 struct {
	v2.UnimplementedStreamsServiceServer
	srv *Server
}

// MaxRecordSize is the largest single record the v2 append accepts
// (KurrentDB's MaxAppendEventSize default, ClusterVNodeOptions).
const MaxRecordSize = 4 << 20

// The ExpectedRevisionConstants of the v2 protocol.
const (
	v2NoStream = -1
	v2Any      = -2
	v2Exists   = -4
)

type sessionPart struct {
	stream   string
	expected int64
	msgs     []*streams.AppendReq_ProposedMessage
}

func (v streamsV2) AppendSession(stream grpc.ClientStreamingServer[v2.AppendRequest, v2.AppendSessionResponse]) error {
	s := v.srv
	var parts []sessionPart
	seen := map[string]bool{}
	total := 0
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := req.GetStream()
		if name == "" {
			return status.Error(codes.InvalidArgument, "Stream name must not be empty.")
		}
		if seen[strings.ToLower(name)] {
			return streamsError(codes.Aborted, "STREAM_ALREADY_IN_APPEND_SESSION", "Stream '"+name+"' already has a different group of messages in this session.",
				&streamerrors.StreamAlreadyInAppendSessionErrorDetails{Stream: name})
		}
		seen[strings.ToLower(name)] = true
		expected := int64(v2Any)
		if req.ExpectedRevision != nil {
			expected = req.GetExpectedRevision()
		}
		if expected < 0 && expected != v2NoStream && expected != v2Any && expected != v2Exists {
			return status.Error(codes.InvalidArgument, "Expected revision must be positive or one of the allowed constants: NoStream (-1), Any (-2) or Exists (-4).")
		}
		if len(req.GetRecords()) == 0 {
			return status.Error(codes.InvalidArgument, "Stream append request must contain at least one record")
		}
		part := sessionPart{stream: name, expected: expected}
		for _, r := range req.GetRecords() {
			m, size, err := proposedMessage(r)
			if err != nil {
				return err
			}
			if size > MaxRecordSize {
				return streamsError(codes.InvalidArgument, "APPEND_RECORD_SIZE_EXCEEDED", "The size of a record exceeds the maximum allowed size",
					&streamerrors.AppendRecordSizeExceededErrorDetails{Stream: name, RecordId: m.GetId().GetString_(), Size: int32(size), MaxSize: MaxRecordSize})
			}
			if total += size; s.maxAppendSize() > 0 && total > s.maxAppendSize() {
				return streamsError(codes.Aborted, "APPEND_TRANSACTION_SIZE_EXCEEDED", "Transaction size exceeded the maximum allowed size",
					&streamerrors.AppendTransactionSizeExceededErrorDetails{Size: int32(total), MaxSize: int32(s.maxAppendSize())})
			}
			part.msgs = append(part.msgs, m)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return streamsError(codes.FailedPrecondition, "APPEND_SESSION_NO_REQUESTS", "An append session must contain at least one append request.")
	}

	s.mu.Lock()
	for _, p := range parts {
		current, exists := s.revision[p.stream]
		if exists && current == math.MaxInt64 {
			s.mu.Unlock()
			return streamsError(codes.FailedPrecondition, "STREAM_TOMBSTONED", "Stream '"+p.stream+"' has been tombstoned.",
				&streamerrors.StreamTombstonedErrorDetails{Stream: p.stream})
		}
		ok := true
		switch {
		case p.expected == v2NoStream:
			ok = !exists
		case p.expected == v2Exists:
			ok = exists
		case p.expected >= 0:
			ok = exists && current == uint64(p.expected)
		}
		if !ok {
			s.mu.Unlock()
			actual := int64(-1) // ExpectedVersion.NoStream
			if exists {
				actual = int64(current)
			}
			return streamsError(codes.FailedPrecondition, "STREAM_REVISION_CONFLICT", "Append failed due to a revision conflict on stream '"+p.stream+"'.",
				&streamerrors.StreamRevisionConflictErrorDetails{Stream: p.stream, ExpectedRevision: p.expected, ActualRevision: actual})
		}
	}
	resp := &v2.AppendSessionResponse{}
	for _, p := range parts {
		_, lastPos, lastRev := s.appendLocked(p.stream, p.msgs)
		resp.Output = append(resp.Output, &v2.AppendResponse{Stream: p.stream, StreamRevision: int64(lastRev)})
		resp.Position = int64(lastPos)
	}
	s.sessions++
	s.mu.Unlock()
	return stream.SendAndClose(resp)
}

// proposedMessage is the v1 record a v2 record is stored as, and its size
// in the v2 measure (Model/AppendRecordExtensions.cs, CalculateSizeOnDisk).
func proposedMessage(r *v2.AppendRecord) (*streams.AppendReq_ProposedMessage, int, error) {
	id := uuid.New()
	if r.RecordId != nil {
		var err error
		if id, err = uuid.Parse(r.GetRecordId()); err != nil {
			return nil, 0, status.Errorf(codes.InvalidArgument, "Record ID %q is not a valid UUID.", r.GetRecordId())
		}
	}
	name := r.GetSchema().GetName()
	if name == "" {
		return nil, 0, status.Error(codes.InvalidArgument, "Schema name must not be empty.")
	}
	props := map[string]*structpb.Value{}
	for k, val := range r.GetProperties() {
		if k == "" || val.GetKind() == nil {
			return nil, 0, status.Error(codes.InvalidArgument, "Property keys must not be empty and property values must have a type set.")
		}
		props[k] = val
	}
	format := r.GetSchema().GetFormat()
	contentType := "application/json"
	if format != v2.SchemaFormat_SCHEMA_FORMAT_JSON {
		contentType = "application/octet-stream"
		props["$schema.format"] = structpb.NewStringValue(formatName(format))
	}
	size := len(r.GetData()) + proto.Size(&structpb.Struct{Fields: props}) + len(name)
	// What a v1 read returns as custom metadata (EventRecord.cs).
	shown := map[string]any{}
	for k, val := range props {
		shown[k] = val.AsInterface()
	}
	shown["$schema.name"] = name
	if format == v2.SchemaFormat_SCHEMA_FORMAT_JSON {
		shown["$schema.format"] = "Json"
	}
	custom, err := json.Marshal(shown)
	if err != nil {
		return nil, 0, status.Errorf(codes.InvalidArgument, "properties: %v", err)
	}
	return &streams.AppendReq_ProposedMessage{
		Id:             &shared.UUID{Value: &shared.UUID_String_{String_: id.String()}},
		Metadata:       map[string]string{"type": name, "content-type": contentType},
		CustomMetadata: custom,
		Data:           r.GetData(),
	}, size, nil
}

// formatName is the SchemaFormat's name as PreProcessRecord stores it
// (the C# enum member: "Bytes", "Protobuf", "Avro").
func formatName(f v2.SchemaFormat) string {
	switch f {
	case v2.SchemaFormat_SCHEMA_FORMAT_PROTOBUF:
		return "Protobuf"
	case v2.SchemaFormat_SCHEMA_FORMAT_AVRO:
		return "Avro"
	case v2.SchemaFormat_SCHEMA_FORMAT_BYTES:
		return "Bytes"
	}
	return "Unspecified"
}

// streamsError is a v2 Streams error as RpcExceptions.FromError builds
// it: the status, an ErrorInfo with the error's code and domain, and its
// details.
func streamsError(code codes.Code, reason, msg string, details ...proto.Message) error {
	st := status.New(code, msg)
	all := []protoadapt.MessageV1{protoadapt.MessageV1Of(&errdetails.ErrorInfo{Reason: reason, Domain: "streams"})}
	for _, d := range details {
		all = append(all, protoadapt.MessageV1Of(d))
	}
	withDetails, err := st.WithDetails(all...)
	if err != nil {
		return st.Err()
	}
	return withDetails.Err()
}

// Package kurrentdbtest is an in-memory KurrentDB for tests: a gRPC server
// that implements, with the client's own generated service interface
// (protos/streams), the part of the Streams service Engram's adapter uses.
//
// What it models, after KurrentDB's own behaviour:
//   - one transaction log; an event's commit and prepare positions are both
//     the byte offset of its record (sparse, strictly increasing), as for
//     KurrentDB's implicit transactions; the log opens with system events
//     ("$"-streams), so $all always holds events that are not the caller's;
//   - Append: expected revision any / no_stream / stream_exists / exact,
//     all-or-nothing, refused whole over MaxAppendSize (1 MiB by default,
//     as in KurrentDB 24.10 and 25.0), the result carrying the write's commit position (that
//     of its last event) and wrong-expected-version with the current revision;
//   - Read of a stream (forwards/backwards from a revision; stream_not_found),
//     of $all (forwards inclusive from a position, backwards exclusive), with
//     stream-prefix / regex filters on stream name or event type;
//   - catch-up subscriptions to $all: confirmation, events after the start
//     position (exclusive), checkpoints while filtering, caught-up, then live
//     events as they are appended;
//   - Tombstone (a hard delete): like KurrentDB it writes a "$streamDeleted"
//     record into the stream itself, at revision math.MaxInt64, which $all
//     reads and subscriptions deliver like any other record of the stream;
//   - basic-auth credentials, when configured, checked on every call; the
//     default ACL of $all: only $admins may read it;
//   - ServerFeatures (the version and methods the client decides on) and,
//     unless Options.Version is Version24_10, KurrentDB 25.1's v2
//     StreamsService.AppendSession, the atomic multi-stream append (v2.go).
//
// Not modelled: stream subscriptions, soft deletes, v1 appends to or reads of a
// tombstoned stream (KurrentDB refuses them with stream-deleted), batch append,
// idempotent re-appends of the same event ids, persistent subscriptions,
// clustering.
package kurrentdbtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/serverfeatures"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/shared"
	"github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v1/streams"
	v2 "github.com/kurrent-io/KurrentDB-Client-Go/protos/kurrentdb/protocols/v2/streams/streams"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// firstPosition is where the first record lands; KurrentDB's log opens
// with an epoch record, so no event is ever at position 0.
const firstPosition = 1000

// recordOverhead approximates a log record's fixed size, so positions
// advance by the record's size as in a real log.
const recordOverhead = 90

type record struct {
	stream   string
	revision uint64
	id       uuid.UUID
	meta     map[string]string
	custom   []byte
	data     []byte
	pos      uint64
}

// Options configure a Server.
type Options struct {
	// Username and Password, when set, are required on every call. They
	// need TLS (the client only sends credentials over TLS). This user is
	// in $admins.
	Username, Password string
	// Users are further users (name → password), not in $admins: like
	// KurrentDB's default ACLs they may read and write ordinary streams
	// but not read $all (see Server.Read).
	Users map[string]string
	// TLS serves over TLS with this configuration.
	TLS *tls.Config
	// Addr is the address to listen on; a random loopback port if empty.
	Addr string
	// MaxAppendSize is the largest append accepted, in KurrentDB's
	// measure (see appendSize); DefaultMaxAppendSize if zero, no limit if
	// negative.
	MaxAppendSize int
	// Version is the KurrentDB version the server plays (Version25_1 if
	// empty): Version24_10 has no v2 StreamsService, so no multi-stream
	// append.
	Version string
}

// DefaultMaxAppendSize is KurrentDB 24.10's and 25.0's default
// MaxAppendSize (1 MiB, the --max-append-size option; ClusterVNodeOptions
// in KurrentDB's source). 25.1 and later accept much larger appends.
const DefaultMaxAppendSize = 1 << 20

// Server is a running in-memory KurrentDB.
type Server struct {
	streams.UnimplementedStreamsServer

	opts Options
	lis  net.Listener
	grpc *grpc.Server

	mu       sync.Mutex
	log      []record
	revision map[string]uint64 // stream → last revision
	next     uint64
	reads    int           // Read calls served (reads and subscriptions)
	sessions int           // v2 append sessions that wrote
	appended chan struct{} // closed (and replaced) on every append
	dropped  chan struct{} // closed (and replaced) by DropSubscriptions
}

// Start serves on opts.Addr (a random loopback port by default) until
// Close. The log starts empty but for system events.
func Start(opts Options) (*Server, error) {
	switch opts.Version {
	case "", Version24_10, Version25_1:
	default:
		return nil, fmt.Errorf("kurrentdbtest: version %q is not one the server plays (%s, %s)", opts.Version, Version24_10, Version25_1)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s := &Server{opts: opts, revision: map[string]uint64{}, next: firstPosition,
		appended: make(chan struct{}), dropped: make(chan struct{})}
	// KurrentDB writes system events before any client does.
	s.appendRecords("$settings", []*streams.AppendReq_ProposedMessage{systemEvent("$settings")})
	s.appendRecords("$stats-127.0.0.1:2113", []*streams.AppendReq_ProposedMessage{systemEvent("$statsCollected")})
	if err := s.serve(addr); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) serve(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The client pings every 10s even without calls in flight, which
	// KurrentDB allows; gRPC's default policy would answer with GOAWAY.
	serverOpts := []grpc.ServerOption{grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true})}
	if s.opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(s.opts.TLS)))
	}
	if s.opts.Username != "" {
		serverOpts = append(serverOpts, grpc.UnaryInterceptor(s.authUnary), grpc.StreamInterceptor(s.authStream))
	}
	s.lis = lis
	s.grpc = grpc.NewServer(serverOpts...)
	streams.RegisterStreamsServer(s.grpc, s)
	serverfeatures.RegisterServerFeaturesServer(s.grpc, features{srv: s})
	if s.hasAppendSession() {
		v2.RegisterStreamsServiceServer(s.grpc, streamsV2{srv: s})
	}
	go s.grpc.Serve(lis)
	return nil
}

// Restart stops serving for down, ending every call in flight, and then
// serves again on the same address with the log intact, as a KurrentDB
// restart does.
func (s *Server) Restart(down time.Duration) error {
	addr := s.Addr()
	s.grpc.Stop()
	time.Sleep(down)
	return s.serve(addr)
}

func systemEvent(typ string) *streams.AppendReq_ProposedMessage {
	return &streams.AppendReq_ProposedMessage{
		Id:       &shared.UUID{Value: &shared.UUID_String_{String_: uuid.NewString()}},
		Metadata: map[string]string{"type": typ, "content-type": "application/json"},
		Data:     []byte(`{}`),
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// URL is the connection string for the client.
func (s *Server) URL() string {
	if s.opts.TLS != nil {
		return "kurrentdb://" + s.lis.Addr().String() + "?tlsVerifyCert=false"
	}
	return "kurrentdb://" + s.lis.Addr().String() + "?tls=false"
}

// Close stops the server, ending every call in flight.
func (s *Server) Close() { s.grpc.Stop() }

// DropSubscriptions ends every live subscription with Unavailable, as a
// server restart or leader change would.
func (s *Server) DropSubscriptions() {
	s.mu.Lock()
	close(s.dropped)
	s.dropped = make(chan struct{})
	s.mu.Unlock()
}

// Reads is how many Read calls (reads and subscriptions) the server has
// served.
func (s *Server) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Sessions is how many v2 append sessions (multi-stream appends) have
// written.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Streams lists the streams that hold events, system streams included.
func (s *Server) Streams() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.revision))
	for name := range s.revision {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// SelfSignedTLS is a TLS configuration for 127.0.0.1 with a fresh
// self-signed certificate (clients connect with tlsVerifyCert=false).
func SelfSignedTLS() (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kurrentdbtest"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}

// basicAuth is the authorization header value of a user.
func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// authorize checks the call's credentials and reports whether its user is
// in $admins.
func (s *Server) authorize(ctx context.Context) (admin bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, got := range md.Get("authorization") {
		if got == basicAuth(s.opts.Username, s.opts.Password) {
			return true, nil
		}
		for user, password := range s.opts.Users {
			if got == basicAuth(user, password) {
				return false, nil
			}
		}
	}
	return false, status.Error(codes.Unauthenticated, "Bad authentication")
}

// adminKey marks, in a call's context, that its user is in $admins.
type adminKey struct{}

// isAdmin: a server without credentials lets everyone do everything, as
// KurrentDB run --insecure does.
func (s *Server) isAdmin(ctx context.Context) bool {
	admin, ok := ctx.Value(adminKey{}).(bool)
	return !ok || admin
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	// ServerFeatures authorizes no one (ServerFeatures.cs): the client
	// asks it, without credentials, while it connects.
	if info.FullMethod == serverfeatures.ServerFeatures_GetSupportedMethods_FullMethodName {
		return h(ctx, req)
	}
	admin, err := s.authorize(ctx)
	if err != nil {
		return nil, err
	}
	return h(context.WithValue(ctx, adminKey{}, admin), req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	admin, err := s.authorize(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, &adminStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), adminKey{}, admin)})
}

// adminStream carries the caller's role into a streaming handler.
type adminStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *adminStream) Context() context.Context { return a.ctx }

// Append implements the Streams service.
func (s *Server) Append(stream grpc.ClientStreamingServer[streams.AppendReq, streams.AppendResp]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil || opts.GetStreamIdentifier() == nil || len(opts.GetStreamIdentifier().GetStreamName()) == 0 {
		return status.Error(codes.InvalidArgument, "append: the first message must name the stream")
	}
	var msgs []*streams.AppendReq_ProposedMessage
	size := 0
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		m := req.GetProposedMessage()
		if m == nil {
			return status.Error(codes.InvalidArgument, "append: expected a proposed message")
		}
		if m.GetMetadata()["type"] == "" || m.GetMetadata()["content-type"] == "" {
			return status.Error(codes.InvalidArgument, "append: a proposed message needs type and content-type metadata")
		}
		if _, err := eventID(m.GetId()); err != nil {
			return status.Errorf(codes.InvalidArgument, "append: %v", err)
		}
		msgs = append(msgs, m)
		// KurrentDB's Streams.Append sums each proposed message's
		// Event.SizeOnDisk and refuses the whole append, before writing
		// any of it, once the sum exceeds MaxAppendSize, with
		// RpcExceptions.MaxAppendSizeExceeded: InvalidArgument, "Maximum
		// Append Size of N Exceeded.", trailers exception =
		// maximum-append-size-exceeded and maximum-append-size = N.
		if size += appendSize(m); s.maxAppendSize() > 0 && size > s.maxAppendSize() {
			stream.SetTrailer(metadata.Pairs("exception", "maximum-append-size-exceeded", "maximum-append-size", strconv.Itoa(s.maxAppendSize())))
			return status.Errorf(codes.InvalidArgument, "Maximum Append Size of %d Exceeded.", s.maxAppendSize())
		}
	}
	name := string(opts.GetStreamIdentifier().GetStreamName())

	s.mu.Lock()
	current, exists := s.revision[name]
	wrong := &streams.AppendResp_WrongExpectedVersion{}
	if exists {
		wrong.CurrentRevisionOption = &streams.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: current}
	} else {
		wrong.CurrentRevisionOption = &streams.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
	}
	ok := true
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *streams.AppendReq_Options_Any:
		wrong.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
	case *streams.AppendReq_Options_NoStream:
		ok = !exists
		wrong.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	case *streams.AppendReq_Options_StreamExists:
		ok = exists
		wrong.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
	case *streams.AppendReq_Options_Revision:
		ok = exists && current == e.Revision
		wrong.ExpectedRevisionOption = &streams.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: e.Revision}
	default:
		s.mu.Unlock()
		return status.Error(codes.InvalidArgument, "append: no expected stream revision")
	}
	if !ok {
		s.mu.Unlock()
		return stream.SendAndClose(&streams.AppendResp{Result: &streams.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: wrong}})
	}
	if len(msgs) == 0 {
		s.mu.Unlock()
		success := &streams.AppendResp_Success{PositionOption: &streams.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}}}
		if exists {
			success.CurrentRevisionOption = &streams.AppendResp_Success_CurrentRevision{CurrentRevision: current}
		} else {
			success.CurrentRevisionOption = &streams.AppendResp_Success_NoStream{NoStream: &shared.Empty{}}
		}
		return stream.SendAndClose(&streams.AppendResp{Result: &streams.AppendResp_Success_{Success: success}})
	}
	firstPos, lastPos, lastRev := s.appendLocked(name, msgs)
	s.mu.Unlock()
	return stream.SendAndClose(&streams.AppendResp{Result: &streams.AppendResp_Success_{Success: &streams.AppendResp_Success{
		CurrentRevisionOption: &streams.AppendResp_Success_CurrentRevision{CurrentRevision: lastRev},
		// Commit: the write's commit record (its last event); prepare:
		// the transaction's first prepare.
		PositionOption: &streams.AppendResp_Success_Position{Position: &streams.AppendResp_Position{CommitPosition: lastPos, PreparePosition: firstPos}},
	}}})
}

// appendSize is KurrentDB's Event.SizeOnDisk of a proposed message: data
// plus (custom) metadata plus twice the event type's length
// (src/KurrentDB.Core/Data/Event.cs).
func appendSize(m *streams.AppendReq_ProposedMessage) int {
	return len(m.GetData()) + len(m.GetCustomMetadata()) + 2*len(m.GetMetadata()["type"])
}

func (s *Server) maxAppendSize() int {
	if s.opts.MaxAppendSize == 0 {
		return DefaultMaxAppendSize
	}
	return s.opts.MaxAppendSize
}

// Fill appends n events of another application (type "ForeignEvent", the
// given data) to stream in one go, in process: a shared KurrentDB's
// foreign traffic for tests and benchmarks, without n gRPC calls.
func (s *Server) Fill(stream string, n int, data []byte) {
	msgs := make([]*streams.AppendReq_ProposedMessage, n)
	for i := range msgs {
		msgs[i] = &streams.AppendReq_ProposedMessage{
			Id:       &shared.UUID{Value: &shared.UUID_String_{String_: uuid.NewString()}},
			Metadata: map[string]string{"type": "ForeignEvent", "content-type": "application/json"},
			Data:     data,
		}
	}
	s.appendRecords(stream, msgs)
}

func (s *Server) appendRecords(name string, msgs []*streams.AppendReq_ProposedMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLocked(name, msgs)
}

func (s *Server) appendLocked(name string, msgs []*streams.AppendReq_ProposedMessage) (firstPos, lastPos, lastRev uint64) {
	rev, exists := s.revision[name]
	if !exists {
		rev = ^uint64(0) // so that the first event is revision 0
	}
	created := strconv.FormatInt(time.Now().UnixNano()/100, 10) // .NET ticks since the Unix epoch
	for i, m := range msgs {
		rev++
		id, _ := eventID(m.GetId())
		meta := map[string]string{"created": created}
		for k, v := range m.GetMetadata() {
			meta[k] = v
		}
		r := record{stream: name, revision: rev, id: id, meta: meta, custom: m.GetCustomMetadata(), data: m.GetData(), pos: s.next}
		if i == 0 {
			firstPos = r.pos
		}
		lastPos = r.pos
		s.next += uint64(recordOverhead + len(name) + len(r.data) + len(r.custom))
		s.log = append(s.log, r)
	}
	s.revision[name] = rev
	close(s.appended)
	s.appended = make(chan struct{})
	return firstPos, lastPos, rev
}

// Tombstone implements the Streams service. KurrentDB writes the tombstone
// as a record of the deleted stream with type "$streamDeleted"
// (SystemEventTypes.StreamDeleted) at event number long.MaxValue
// (EventNumber.DeletedStream): see KurrentDB's
// src/KurrentDB.Core/Data/EventNumber.cs and SystemEventTypes.cs. So a
// reader of $all meets a record inside the stream that is not an event its
// application wrote. Expected revisions are not checked here.
func (s *Server) Tombstone(_ context.Context, req *streams.TombstoneReq) (*streams.TombstoneResp, error) {
	name := string(req.GetOptions().GetStreamIdentifier().GetStreamName())
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "tombstone: no stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pos := s.next
	s.log = append(s.log, record{stream: name, revision: math.MaxInt64, id: uuid.New(),
		meta: map[string]string{"type": "$streamDeleted", "content-type": "application/octet-stream", "created": strconv.FormatInt(time.Now().UnixNano()/100, 10)}, pos: pos})
	s.next += uint64(recordOverhead + len(name))
	s.revision[name] = math.MaxInt64
	close(s.appended)
	s.appended = make(chan struct{})
	return &streams.TombstoneResp{PositionOption: &streams.TombstoneResp_Position_{Position: &streams.TombstoneResp_Position{CommitPosition: pos, PreparePosition: pos}}}, nil
}

func eventID(id *shared.UUID) (uuid.UUID, error) {
	switch v := id.GetValue().(type) {
	case *shared.UUID_Structured_:
		var b [16]byte
		for i := 0; i < 8; i++ {
			b[i] = byte(uint64(v.Structured.MostSignificantBits) >> (56 - 8*i))
			b[8+i] = byte(uint64(v.Structured.LeastSignificantBits) >> (56 - 8*i))
		}
		return uuid.UUID(b), nil
	case *shared.UUID_String_:
		return uuid.Parse(v.String_)
	default:
		return uuid.Nil, errors.New("event id missing")
	}
}

// filter decides which events a filtered read or subscription yields.
type filter struct {
	onType   bool
	prefixes []string
	re       *regexp.Regexp
}

func newFilter(o *streams.ReadReq_Options) (*filter, error) {
	fo := o.GetFilter()
	if fo == nil {
		return nil, nil
	}
	f := &filter{}
	expr := fo.GetStreamIdentifier()
	if expr == nil {
		expr, f.onType = fo.GetEventType(), true
	}
	if expr == nil {
		return nil, errors.New("filter on neither stream nor event type")
	}
	f.prefixes = expr.GetPrefix()
	if expr.GetRegex() != "" {
		re, err := regexp.Compile(expr.GetRegex())
		if err != nil {
			return nil, fmt.Errorf("filter regex: %w", err)
		}
		f.re = re
	}
	return f, nil
}

func (f *filter) allows(r record) bool {
	if f == nil {
		return true
	}
	subject := r.stream
	if f.onType {
		subject = r.meta["type"]
	}
	if f.re != nil {
		return f.re.MatchString(subject)
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(subject, p) {
			return true
		}
	}
	return false
}

// Read implements the Streams service: reads of a stream or of $all, and
// catch-up subscriptions to $all.
func (s *Server) Read(req *streams.ReadReq, out grpc.ServerStreamingServer[streams.ReadResp]) error {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "read: no options")
	}
	f, err := newFilter(o)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "read: %v", err)
	}
	stringIDs := o.GetUuidOption().GetString_() != nil
	// KurrentDB's default ACL for $all (the system-stream ACL,
	// $systemStreamAcl, whose read role defaults to $admins) refuses any
	// other user: PermissionDenied "Access Denied" (RpcExceptions.AccessDenied
	// in KurrentDB's source; docs: security/user-authorization, "Default ACL").
	if o.GetAll() != nil && !s.isAdmin(out.Context()) {
		return status.Error(codes.PermissionDenied, "Access Denied")
	}
	if o.GetSubscription() != nil {
		all := o.GetAll()
		if all == nil {
			return status.Error(codes.Unimplemented, "kurrentdbtest: only $all subscriptions are implemented")
		}
		return s.subscribe(out, all, f, stringIDs)
	}
	count := o.GetCount()
	backwards := o.GetReadDirection() == streams.ReadReq_Options_Backwards
	var events []record
	if st := o.GetStream(); st != nil {
		name := string(st.GetStreamIdentifier().GetStreamName())
		var found bool
		events, found = s.readStream(name, st, backwards, count)
		if !found {
			return out.Send(&streams.ReadResp{Content: &streams.ReadResp_StreamNotFound_{StreamNotFound: &streams.ReadResp_StreamNotFound{StreamIdentifier: st.GetStreamIdentifier()}}})
		}
	} else if all := o.GetAll(); all != nil {
		events = s.readAll(all, backwards, count, f)
	} else {
		return status.Error(codes.InvalidArgument, "read: neither a stream nor $all")
	}
	for _, r := range events {
		if err := out.Send(eventResp(r, stringIDs)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) readStream(name string, st *streams.ReadReq_Options_StreamOptions, backwards bool, count uint64) ([]record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last, found := s.revision[name]
	if !found {
		return nil, false
	}
	var from uint64
	switch v := st.GetRevisionOption().(type) {
	case *streams.ReadReq_Options_StreamOptions_Revision:
		from = v.Revision
	case *streams.ReadReq_Options_StreamOptions_End:
		from = last + 1
		if backwards {
			from = last
		}
	default: // start
		if backwards {
			from = 0
		}
	}
	var out []record
	for _, r := range s.log {
		if r.stream == name && ((!backwards && r.revision >= from) || (backwards && r.revision <= from)) {
			out = append(out, r)
		}
	}
	if backwards {
		reverse(out)
	}
	return limit(out, count), true
}

// readAll reads $all: forwards from a position inclusive, backwards from a
// position exclusive (KurrentDB reads backwards from a post-position).
func (s *Server) readAll(all *streams.ReadReq_Options_AllOptions, backwards bool, count uint64, f *filter) []record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lo, hi int // s.log[lo:hi] is the candidate range
	switch v := all.GetAllOption().(type) {
	case *streams.ReadReq_Options_AllOptions_Position:
		at := s.index(v.Position.GetCommitPosition())
		if backwards {
			lo, hi = 0, at
		} else {
			lo, hi = at, len(s.log)
		}
	case *streams.ReadReq_Options_AllOptions_End:
		if backwards {
			lo, hi = 0, len(s.log)
		} else {
			lo, hi = len(s.log), len(s.log)
		}
	default: // start
		if !backwards {
			lo, hi = 0, len(s.log)
		}
	}
	var out []record
	for i := range hi - lo {
		r := s.log[lo+i]
		if backwards {
			r = s.log[hi-1-i]
		}
		if f.allows(r) {
			out = append(out, r)
			if uint64(len(out)) == count {
				break
			}
		}
	}
	return out
}

// index is the index of the first record at or after position pos.
func (s *Server) index(pos uint64) int {
	return sort.Search(len(s.log), func(i int) bool { return s.log[i].pos >= pos })
}

func (s *Server) subscribe(out grpc.ServerStreamingServer[streams.ReadResp], all *streams.ReadReq_Options_AllOptions, f *filter, stringIDs bool) error {
	s.mu.Lock()
	var next int
	switch v := all.GetAllOption().(type) {
	case *streams.ReadReq_Options_AllOptions_Position:
		next = s.index(v.Position.GetCommitPosition() + 1) // subscriptions start after the position
	case *streams.ReadReq_Options_AllOptions_End:
		next = len(s.log)
	}
	dropped := s.dropped
	s.mu.Unlock()
	if err := out.Send(&streams.ReadResp{Content: &streams.ReadResp_Confirmation{Confirmation: &streams.ReadResp_SubscriptionConfirmation{SubscriptionId: uuid.NewString()}}}); err != nil {
		return err
	}
	caughtUp := false
	for {
		s.mu.Lock()
		batch := append([]record(nil), s.log[next:]...)
		next = len(s.log)
		appended := s.appended
		s.mu.Unlock()
		skipped := false
		for _, r := range batch {
			if !f.allows(r) {
				skipped = true
				continue
			}
			if err := out.Send(eventResp(r, stringIDs)); err != nil {
				return err
			}
		}
		if skipped && len(batch) > 0 {
			last := batch[len(batch)-1].pos
			if err := out.Send(&streams.ReadResp{Content: &streams.ReadResp_Checkpoint_{Checkpoint: &streams.ReadResp_Checkpoint{CommitPosition: last, PreparePosition: last}}}); err != nil {
				return err
			}
		}
		if !caughtUp {
			caughtUp = true
			if err := out.Send(&streams.ReadResp{Content: &streams.ReadResp_CaughtUp_{CaughtUp: &streams.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
		}
		select {
		case <-out.Context().Done():
			return out.Context().Err()
		case <-dropped:
			return status.Error(codes.Unavailable, "Server is shutting down")
		case <-appended:
		}
	}
}

func eventResp(r record, stringIDs bool) *streams.ReadResp {
	id := &shared.UUID{Value: &shared.UUID_String_{String_: r.id.String()}}
	if !stringIDs {
		var most, least uint64
		for i := 0; i < 8; i++ {
			most = most<<8 | uint64(r.id[i])
			least = least<<8 | uint64(r.id[8+i])
		}
		id = &shared.UUID{Value: &shared.UUID_Structured_{Structured: &shared.UUID_Structured{MostSignificantBits: int64(most), LeastSignificantBits: int64(least)}}}
	}
	return &streams.ReadResp{Content: &streams.ReadResp_Event{Event: &streams.ReadResp_ReadEvent{
		Event: &streams.ReadResp_ReadEvent_RecordedEvent{
			Id:               id,
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(r.stream)},
			StreamRevision:   r.revision,
			PreparePosition:  r.pos,
			CommitPosition:   r.pos,
			Metadata:         r.meta,
			CustomMetadata:   r.custom,
			Data:             r.data,
		},
		Position: &streams.ReadResp_ReadEvent_CommitPosition{CommitPosition: r.pos},
	}}}
}

func reverse(rs []record) {
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
}

func limit(rs []record, count uint64) []record {
	if uint64(len(rs)) > count {
		return rs[:count]
	}
	return rs
}

// Package qdranttest is a protocol-level Qdrant for tests: a real gRPC
// server on a loopback port, registered with go-client's generated
// RegisterCollectionsServer, RegisterPointsServer and RegisterQdrantServer,
// implementing exactly the calls infra/qdrant makes with Qdrant's
// documented semantics:
//
//   - collections of dense vectors of one size with cosine distance
//     (vectors are normalised on upsert, the score is the dot product with
//     the normalised query, so it lies in [-1, 1]);
//   - payloads of strings, integers, booleans and lists of them; filters
//     of must / must_not / should over field conditions with match
//     keyword, match any (keywords), match bool and numeric ranges, where a
//     list payload matches when one of its elements does;
//   - score_threshold (less similar results are not returned), limit
//     (default 10), with_payload;
//   - wait: an update sent with wait=false is acknowledged at once and
//     applied a little later, as Qdrant does, so an adapter that forgets
//     wait=true loses read-your-writes;
//   - the api-key metadata header (the health check needs none), and
//     errors as gRPC status codes (NotFound for a missing collection,
//     InvalidArgument for a vector of the wrong size or an existing
//     collection, Unauthenticated for a wrong key).
//
// Scoring is exact brute force. Anything else the adapter might send is
// answered with Unimplemented, so a new call cannot pass silently.
package qdranttest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
)

// lateApply is how long after the acknowledgement an update sent with
// wait=false becomes visible.
const lateApply = 50 * time.Millisecond

// Server is the test server.
type Server struct {
	// Addr is the host:port of its gRPC listener.
	Addr string

	apiKey string
	grpc   *grpc.Server

	mu          sync.Mutex
	version     string // what the health check reports
	collections map[string]*collection
	late        sync.WaitGroup
}

type collection struct {
	size    int
	points  map[string]*point // by point id
	indexes map[string]qdrant.FieldType
}

type point struct {
	id      string // the id's canonical text, the key in collection.points
	pid     *qdrant.PointId
	unit    []float32 // the vector, normalised
	payload map[string]*qdrant.Value
}

// Start starts a server on a random loopback port, requiring apiKey in the
// api-key header when it is not empty; it stops when the test ends.
func Start(t testing.TB, apiKey string) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1:0", apiKey)
}

// StartOn is Start on the given address (a server restarted where a
// stopped one was), empty.
func StartOn(t testing.TB, addr, apiKey string) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: lis.Addr().String(), apiKey: apiKey, version: DefaultVersion, collections: map[string]*collection{}}
	s.grpc = grpc.NewServer(grpc.UnaryInterceptor(s.checkKey))
	qdrant.RegisterQdrantServer(s.grpc, qdrantService{s: s})
	qdrant.RegisterCollectionsServer(s.grpc, collectionsService{s: s})
	qdrant.RegisterPointsServer(s.grpc, pointsService{s: s})
	go func() { _ = s.grpc.Serve(lis) }()
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server at once, as a crash would; it is idempotent.
func (s *Server) Stop() {
	s.grpc.Stop()
	s.late.Wait()
}

// checkKey requires the API key on every call but the health check, which
// Qdrant answers unauthenticated (like its /healthz route) for probes.
func (s *Server) checkKey(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.apiKey != "" && info.FullMethod != qdrant.Qdrant_HealthCheck_FullMethodName {
		md, _ := metadata.FromIncomingContext(ctx)
		if got := md.Get("api-key"); len(got) != 1 || got[0] != s.apiKey {
			return nil, status.Error(codes.Unauthenticated, "Invalid api-key")
		}
	}
	return handler(ctx, req)
}

// Collections returns the names of the collections.
func (s *Server) Collections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name := range s.collections {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// FieldIndexes returns the payload indexes of a collection (nil when it
// does not exist).
func (s *Server) FieldIndexes(name string) map[string]qdrant.FieldType {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.collections[name]
	if !ok {
		return nil
	}
	out := make(map[string]qdrant.FieldType, len(c.indexes))
	for k, v := range c.indexes {
		out[k] = v
	}
	return out
}

// Payload returns a copy of the payload of the point, or nil.
func (s *Server) Payload(collectionName, pointID string) map[string]*qdrant.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.collections[collectionName]; ok {
		if p, ok := c.points[pointID]; ok {
			out := make(map[string]*qdrant.Value, len(p.payload))
			for k, v := range p.payload {
				out[k] = v
			}
			return out
		}
	}
	return nil
}

// Contents describes every point of every collection, keyed
// "collection/point id": its vector as stored (normalised) and its payload
// in text form, keys sorted, for tests that compare whole indexes.
func (s *Server) Contents() map[string]string {
	s.late.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for name, c := range s.collections {
		for id, p := range c.points {
			var b strings.Builder
			fmt.Fprintf(&b, "%v", p.unit)
			for _, k := range slices.Sorted(maps.Keys(p.payload)) {
				fmt.Fprintf(&b, " %s=%s", k, prototext.Format(p.payload[k]))
			}
			out[name+"/"+id] = b.String()
		}
	}
	return out
}

// update applies fn under the lock, now when wait is set, a little later
// otherwise (Qdrant acknowledges an update without wait once it is queued).
func (s *Server) update(wait *bool, fn func()) *qdrant.PointsOperationResponse {
	if wait != nil && *wait {
		s.mu.Lock()
		fn()
		s.mu.Unlock()
		return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Completed}}
	}
	s.late.Add(1)
	time.AfterFunc(lateApply, func() {
		defer s.late.Done()
		s.mu.Lock()
		fn()
		s.mu.Unlock()
	})
	return &qdrant.PointsOperationResponse{Result: &qdrant.UpdateResult{Status: qdrant.UpdateStatus_Acknowledged}}
}

func (s *Server) collection(name string) (*collection, error) {
	c, ok := s.collections[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

// DefaultVersion is the Qdrant version the server reports unless told
// otherwise (SetVersion).
const DefaultVersion = "1.17.1"

// SetVersion makes the health check report version, as a Qdrant of that
// version does: Qdrant's HealthCheckReply carries the server's package
// version (lib/api/src/grpc/proto/qdrant.proto; filled from
// CARGO_PKG_VERSION in src/tonic/mod.rs), which go-client's own
// compatibility check reads. Only the reported version changes.
func (s *Server) SetVersion(version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = version
}

type qdrantService struct {
	qdrant.UnimplementedQdrantServer
	s *Server
}

func (q qdrantService) HealthCheck(context.Context, *qdrant.HealthCheckRequest) (*qdrant.HealthCheckReply, error) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return &qdrant.HealthCheckReply{Title: "qdrant - vector search engine (qdranttest)", Version: q.s.version}, nil
}

type collectionsService struct {
	qdrant.UnimplementedCollectionsServer
	s *Server
}

func (cs collectionsService) List(context.Context, *qdrant.ListCollectionsRequest) (*qdrant.ListCollectionsResponse, error) {
	resp := &qdrant.ListCollectionsResponse{}
	for _, name := range cs.s.Collections() {
		resp.Collections = append(resp.Collections, &qdrant.CollectionDescription{Name: name})
	}
	return resp, nil
}

func (cs collectionsService) CollectionExists(_ context.Context, req *qdrant.CollectionExistsRequest) (*qdrant.CollectionExistsResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	_, ok := cs.s.collections[req.GetCollectionName()]
	return &qdrant.CollectionExistsResponse{Result: &qdrant.CollectionExists{Exists: ok}}, nil
}

func (cs collectionsService) Create(_ context.Context, req *qdrant.CreateCollection) (*qdrant.CollectionOperationResponse, error) {
	name := req.GetCollectionName()
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "<>:\"/\\|?*\x00") {
		return nil, status.Errorf(codes.InvalidArgument, "Validation error: invalid collection name %q", name)
	}
	params := req.GetVectorsConfig().GetParams()
	if params == nil {
		return nil, status.Error(codes.Unimplemented, "qdranttest: only a single unnamed dense vector per collection")
	}
	if params.GetSize() == 0 {
		return nil, status.Error(codes.InvalidArgument, "Validation error: vector size must be at least 1")
	}
	if params.GetDistance() != qdrant.Distance_Cosine {
		return nil, status.Errorf(codes.Unimplemented, "qdranttest: distance %v", params.GetDistance())
	}
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	if _, ok := cs.s.collections[name]; ok {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Collection `%s` already exists!", name)
	}
	cs.s.collections[name] = &collection{size: int(params.GetSize()), points: map[string]*point{}, indexes: map[string]qdrant.FieldType{}}
	return &qdrant.CollectionOperationResponse{Result: true}, nil
}

func (cs collectionsService) Delete(_ context.Context, req *qdrant.DeleteCollection) (*qdrant.CollectionOperationResponse, error) {
	cs.s.mu.Lock()
	defer cs.s.mu.Unlock()
	_, ok := cs.s.collections[req.GetCollectionName()]
	delete(cs.s.collections, req.GetCollectionName())
	return &qdrant.CollectionOperationResponse{Result: ok}, nil
}

type pointsService struct {
	qdrant.UnimplementedPointsServer
	s *Server
}

func (ps pointsService) CreateFieldIndex(_ context.Context, req *qdrant.CreateFieldIndexCollection) (*qdrant.PointsOperationResponse, error) {
	if req.FieldType == nil {
		return nil, status.Error(codes.InvalidArgument, "Validation error: field_type is required")
	}
	ps.s.mu.Lock()
	c, err := ps.s.collection(req.GetCollectionName())
	ps.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ps.s.update(req.Wait, func() { c.indexes[req.GetFieldName()] = req.GetFieldType() }), nil
}

func (ps pointsService) Upsert(_ context.Context, req *qdrant.UpsertPoints) (*qdrant.PointsOperationResponse, error) {
	ps.s.mu.Lock()
	c, err := ps.s.collection(req.GetCollectionName())
	ps.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// Qdrant validates the whole batch before applying any of it.
	pts := make([]*point, 0, len(req.GetPoints()))
	for _, in := range req.GetPoints() {
		id, err := pointID(in.GetId())
		if err != nil {
			return nil, err
		}
		vec := denseOf(in.GetVectors().GetVector())
		if vec == nil {
			return nil, status.Error(codes.Unimplemented, "qdranttest: only a single unnamed dense vector per point")
		}
		if len(vec) != c.size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(vec))
		}
		pts = append(pts, &point{id: id, pid: in.GetId(), unit: normalise(vec), payload: in.GetPayload()})
	}
	return ps.s.update(req.Wait, func() {
		for _, p := range pts {
			c.points[p.id] = p
		}
	}), nil
}

func (ps pointsService) Delete(_ context.Context, req *qdrant.DeletePoints) (*qdrant.PointsOperationResponse, error) {
	ps.s.mu.Lock()
	c, err := ps.s.collection(req.GetCollectionName())
	ps.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ps.s.update(req.Wait, func() {
		for _, p := range ps.selected(c, req.GetPoints()) {
			delete(c.points, p.id)
		}
	}), nil
}

func (ps pointsService) SetPayload(_ context.Context, req *qdrant.SetPayloadPoints) (*qdrant.PointsOperationResponse, error) {
	if req.Key != nil {
		return nil, status.Error(codes.Unimplemented, "qdranttest: set_payload with a nested key")
	}
	ps.s.mu.Lock()
	c, err := ps.s.collection(req.GetCollectionName())
	if err == nil {
		// Qdrant refuses to set the payload of a point id that is absent.
		for _, id := range req.GetPointsSelector().GetPoints().GetIds() {
			sid, idErr := pointID(id)
			if idErr != nil {
				err = idErr
				break
			}
			if _, ok := c.points[sid]; !ok {
				err = status.Errorf(codes.NotFound, "Not found: No point with id %s found", sid)
				break
			}
		}
	}
	ps.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ps.s.update(req.Wait, func() {
		for _, p := range ps.selected(c, req.GetPointsSelector()) {
			merged := make(map[string]*qdrant.Value, len(p.payload)+len(req.GetPayload()))
			for k, v := range p.payload {
				merged[k] = v
			}
			for k, v := range req.GetPayload() {
				merged[k] = v
			}
			p.payload = merged
		}
	}), nil
}

// selected returns the points a selector names; the caller holds the lock.
func (ps pointsService) selected(c *collection, sel *qdrant.PointsSelector) []*point {
	var out []*point
	if f := sel.GetFilter(); f != nil {
		for _, p := range c.points {
			if matches(f, p.payload) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, id := range sel.GetPoints().GetIds() {
		sid, err := pointID(id)
		if err != nil {
			continue
		}
		if p, ok := c.points[sid]; ok {
			out = append(out, p)
		}
	}
	return out
}

func (ps pointsService) Count(_ context.Context, req *qdrant.CountPoints) (*qdrant.CountResponse, error) {
	if err := checkFilter(req.GetFilter()); err != nil {
		return nil, err
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	n := 0
	for _, p := range c.points {
		if matches(req.GetFilter(), p.payload) {
			n++
		}
	}
	return &qdrant.CountResponse{Result: &qdrant.CountResult{Count: uint64(n)}}, nil
}

func (ps pointsService) Query(_ context.Context, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	if len(req.GetPrefetch()) > 0 || req.Using != nil || req.Offset != nil || req.LookupFrom != nil {
		return nil, status.Error(codes.Unimplemented, "qdranttest: prefetch, using, offset and lookup_from")
	}
	q := req.GetQuery().GetNearest().GetDense().GetData()
	if q == nil {
		return nil, status.Error(codes.Unimplemented, "qdranttest: only a nearest query by a dense vector")
	}
	if err := checkFilter(req.GetFilter()); err != nil {
		return nil, err
	}
	ps.s.mu.Lock()
	defer ps.s.mu.Unlock()
	c, err := ps.s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if len(q) != c.size {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(q))
	}
	unit := normalise(q)
	type scored struct {
		p     *point
		score float32
	}
	var found []scored
	for _, p := range c.points {
		if !matches(req.GetFilter(), p.payload) {
			continue
		}
		var dot float32
		for i := range unit {
			dot += unit[i] * p.unit[i]
		}
		if req.ScoreThreshold != nil && dot < req.GetScoreThreshold() {
			continue
		}
		found = append(found, scored{p, dot})
	}
	// Best first; Qdrant leaves the order of equal scores unspecified, and
	// ordering them by point id here keeps an adapter from relying on it.
	slices.SortFunc(found, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.p.id, b.p.id)
	})
	limit := 10
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	found = found[:min(len(found), limit)]
	hits := make([]*qdrant.ScoredPoint, len(found))
	for i, f := range found {
		hits[i] = &qdrant.ScoredPoint{Id: f.p.pid, Score: f.score, Payload: selectPayload(req.GetWithPayload(), f.p.payload)}
	}
	return &qdrant.QueryResponse{Result: hits}, nil
}

func pointID(id *qdrant.PointId) (string, error) {
	switch v := id.GetPointIdOptions().(type) {
	case *qdrant.PointId_Uuid:
		u, err := uuid.Parse(v.Uuid)
		if err != nil {
			return "", status.Errorf(codes.InvalidArgument, "Unable to parse UUID: %s", v.Uuid)
		}
		return u.String(), nil
	case *qdrant.PointId_Num:
		return fmt.Sprint(v.Num), nil
	default:
		return "", status.Error(codes.InvalidArgument, "point id is required")
	}
}

func denseOf(v *qdrant.Vector) []float32 {
	if d := v.GetDense(); d != nil {
		return d.GetData()
	}
	return v.GetData() // the deprecated field older clients fill
}

// normalise returns v scaled to length 1; Qdrant stores a zero vector
// unchanged.
func normalise(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := slices.Clone(v)
	if sum == 0 {
		return out
	}
	n := float32(math.Sqrt(sum))
	for i := range out {
		out[i] /= n
	}
	return out
}

func selectPayload(sel *qdrant.WithPayloadSelector, payload map[string]*qdrant.Value) map[string]*qdrant.Value {
	switch {
	case sel.GetEnable():
		return payload
	case sel.GetInclude() != nil:
		out := map[string]*qdrant.Value{}
		for _, k := range sel.GetInclude().GetFields() {
			if v, ok := payload[k]; ok {
				out[k] = v
			}
		}
		return out
	default:
		return nil
	}
}

// checkFilter refuses the conditions the test server does not implement.
func checkFilter(f *qdrant.Filter) error {
	if f == nil {
		return nil
	}
	if f.MinShould != nil {
		return status.Error(codes.Unimplemented, "qdranttest: min_should")
	}
	for _, c := range slices.Concat(f.GetMust(), f.GetMustNot(), f.GetShould()) {
		if nested := c.GetFilter(); nested != nil {
			if err := checkFilter(nested); err != nil {
				return err
			}
			continue
		}
		fc := c.GetField()
		if fc == nil {
			return status.Errorf(codes.Unimplemented, "qdranttest: condition %T", c.GetConditionOneOf())
		}
		switch {
		case fc.GetRange() != nil && fc.GetMatch() == nil:
		case fc.GetMatch() != nil && fc.GetRange() == nil:
			switch fc.GetMatch().GetMatchValue().(type) {
			case *qdrant.Match_Keyword, *qdrant.Match_Keywords, *qdrant.Match_Boolean, *qdrant.Match_Integer:
			default:
				return status.Errorf(codes.Unimplemented, "qdranttest: match %T", fc.GetMatch().GetMatchValue())
			}
		default:
			return status.Errorf(codes.Unimplemented, "qdranttest: field condition on %q", fc.GetKey())
		}
	}
	return nil
}

// matches applies Qdrant's filter semantics: every must, no must_not, and
// at least one should when there are any.
func matches(f *qdrant.Filter, payload map[string]*qdrant.Value) bool {
	if f == nil {
		return true
	}
	for _, c := range f.GetMust() {
		if !condition(c, payload) {
			return false
		}
	}
	for _, c := range f.GetMustNot() {
		if condition(c, payload) {
			return false
		}
	}
	if len(f.GetShould()) == 0 {
		return true
	}
	for _, c := range f.GetShould() {
		if condition(c, payload) {
			return true
		}
	}
	return false
}

func condition(c *qdrant.Condition, payload map[string]*qdrant.Value) bool {
	if nested := c.GetFilter(); nested != nil {
		return matches(nested, payload)
	}
	fc := c.GetField()
	v, ok := payload[fc.GetKey()]
	if !ok {
		return false
	}
	// A field condition on a list matches when one element matches.
	values := []*qdrant.Value{v}
	if l := v.GetListValue(); l != nil {
		values = l.GetValues()
	}
	for _, v := range values {
		if fc.GetMatch() != nil && matchValue(fc.GetMatch(), v) {
			return true
		}
		if r := fc.GetRange(); r != nil && inRange(r, v) {
			return true
		}
	}
	return false
}

func matchValue(m *qdrant.Match, v *qdrant.Value) bool {
	switch want := m.GetMatchValue().(type) {
	case *qdrant.Match_Keyword:
		s, ok := v.GetKind().(*qdrant.Value_StringValue)
		return ok && s.StringValue == want.Keyword
	case *qdrant.Match_Keywords:
		s, ok := v.GetKind().(*qdrant.Value_StringValue)
		return ok && slices.Contains(want.Keywords.GetStrings(), s.StringValue)
	case *qdrant.Match_Boolean:
		b, ok := v.GetKind().(*qdrant.Value_BoolValue)
		return ok && b.BoolValue == want.Boolean
	case *qdrant.Match_Integer:
		i, ok := v.GetKind().(*qdrant.Value_IntegerValue)
		return ok && i.IntegerValue == want.Integer
	}
	return false
}

func inRange(r *qdrant.Range, v *qdrant.Value) bool {
	var x float64
	switch n := v.GetKind().(type) {
	case *qdrant.Value_IntegerValue:
		x = float64(n.IntegerValue)
	case *qdrant.Value_DoubleValue:
		x = n.DoubleValue
	default:
		return false
	}
	return (r.Lt == nil || x < r.GetLt()) && (r.Gt == nil || x > r.GetGt()) &&
		(r.Lte == nil || x <= r.GetLte()) && (r.Gte == nil || x >= r.GetGte())
}

// Package qdrant is the domain.VectorIndex on a Qdrant server, over gRPC
// with github.com/qdrant/go-client.
//
// Layout: a collection per vector space (model, dimensions), named
// <prefix>_<model>_<dimensions>, cosine distance. A point is one memory of
// one agent in that space; its id is a UUID derived from user, agent and
// memory id, so redelivering a point replaces it. The payload holds user,
// agent, memory_id, type, tags, created_at (Unix milliseconds), forgotten
// and text_hash, each with a payload index. Every query and every scoped
// write carries the user+agent filter built from the IndexScope the server
// passes in; type, tag, time, forgotten and min_score are part of Qdrant's
// own query, so a page is never short. Every write waits (wait=true) until
// Qdrant has applied it, so the next query sees it.
package qdrant

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/serverversion"
)

// Payload keys.
const (
	keyUser      = "user"
	keyAgent     = "agent"
	keyMemory    = "memory_id"
	keyType      = "type"
	keyTags      = "tags"
	keyCreatedAt = "created_at"
	keyForgotten = "forgotten"
	keyTextHash  = "text_hash"
)

// DefaultPort is Qdrant's gRPC port.
const DefaultPort = 6334

// Config configures the adapter.
type Config struct {
	// URL of Qdrant's gRPC endpoint: host:port, http://host:port or
	// https://host:port (TLS). The port defaults to 6334.
	URL string
	// APIKey is sent in the api-key header when not empty. The wiring
	// reads it from ENGRAM_QDRANT_API_KEY only, never from a flag.
	APIKey string
	// CollectionPrefix starts the name of every collection the adapter
	// owns ([A-Za-z0-9-], default "engram"); DropAll deletes exactly those.
	CollectionPrefix string
	// Timeout bounds each call to Qdrant (default 10s); a call that runs
	// out fails with domain.ErrIndexUnavailable.
	Timeout time.Duration
}

// Index is the Qdrant vector index. It is safe for concurrent use.
type Index struct {
	client  *qdrant.Client
	prefix  string
	owned   *regexp.Regexp // matches the names of the collections of prefix
	timeout time.Duration

	mu      sync.Mutex
	created map[string]bool // collections known to exist with their indexes
	// versionOK: the server answered a version the adapter supports
	// (checked on the first call that reaches it, again after a refusal).
	versionOK bool
}

var _ domain.VectorIndex = (*Index)(nil)

// prefixPattern is what a collection prefix looks like, compiled at first use, not at every process start (every command of the command line is one).
var prefixPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9-]+$`) })

// New returns the index for cfg. It does not contact Qdrant (gRPC connects
// lazily), so Engram starts while Qdrant is down and Ready reports it.
func New(ctx context.Context, cfg Config) (*Index, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, port, useTLS, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	prefix := cmp.Or(cfg.CollectionPrefix, "engram")
	if !prefixPattern().MatchString(prefix) {
		return nil, fmt.Errorf("qdrant: collection prefix %q: only letters, digits and '-'", prefix)
	}
	client, err := qdrant.NewClient(&qdrant.Config{
		Host: host, Port: port, APIKey: cfg.APIKey, UseTLS: useTLS,
		// The client's check would call Qdrant from the constructor and
		// only log; checkVersion refuses an old server instead.
		SkipCompatibilityCheck: true,
	})
	if err != nil {
		return nil, fmt.Errorf("qdrant: client for %s: %w", cfg.URL, err)
	}
	ix := &Index{
		client:  client,
		prefix:  prefix,
		owned:   regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `_[a-z0-9.-]+(_h[0-9a-f]{8})?_[0-9]+$`),
		timeout: cmp.Or(cfg.Timeout, 10*time.Second),
		created: map[string]bool{},
	}
	// A server that answers and is too old is refused at start; one that
	// does not answer yet is checked on the first call that reaches it.
	if err := ix.checkVersion(ctx); errors.Is(err, errUnsupportedServer) {
		client.Close()
		return nil, err
	}
	return ix, nil
}

// The oldest Qdrant the adapter works with: 1.12 (dense vectors in the
// Vector oneof, the Query API, is_tenant payload indexes). An older server
// accepts the calls but drops every point as rejected.
const minMajor, minMinor = 1, 12

// errUnsupportedServer marks a Qdrant older than minMajor.minMinor; it is
// wrapped together with domain.ErrIndexUnavailable.
var errUnsupportedServer = errors.New("unsupported Qdrant version")

// checkVersion asks the server its version (the health check reports it)
// once, and refuses one older than minMajor.minMinor.
func (ix *Index) checkVersion(ctx context.Context) error {
	ix.mu.Lock()
	ok := ix.versionOK
	ix.mu.Unlock()
	if ok {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, ix.timeout)
	defer cancel()
	reply, err := ix.client.HealthCheck(cctx)
	if err != nil {
		return ix.mapErr(ctx, "health check", err)
	}
	if !serverversion.AtLeast(reply.GetVersion(), minMajor, minMinor) {
		return fmt.Errorf("qdrant: server version %q: Engram needs Qdrant %d.%d or later: %w: %w", reply.GetVersion(), minMajor, minMinor, errUnsupportedServer, domain.ErrIndexUnavailable)
	}
	ix.mu.Lock()
	ix.versionOK = true
	ix.mu.Unlock()
	return nil
}

// parseURL splits a Qdrant gRPC URL into host, port and whether to use TLS.
func parseURL(raw string) (host string, port int, useTLS bool, err error) {
	hostport := raw
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		switch scheme {
		case "http":
		case "https":
			useTLS = true
		default:
			return "", 0, false, fmt.Errorf("qdrant: URL %q: scheme must be http or https", raw)
		}
		u, perr := url.Parse(raw)
		if perr != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return "", 0, false, fmt.Errorf("qdrant: URL %q: want scheme://host[:port] only", raw)
		}
		hostport = rest
		hostport = strings.TrimSuffix(hostport, "/")
	}
	if hostport == "" {
		return "", 0, false, fmt.Errorf("qdrant: URL is empty")
	}
	h, p, splitErr := net.SplitHostPort(hostport)
	if splitErr != nil {
		// No port: the whole thing is the host.
		if strings.Contains(hostport, ":") && !strings.HasPrefix(hostport, "[") {
			return "", 0, false, fmt.Errorf("qdrant: URL %q: %v", raw, splitErr)
		}
		return hostport, DefaultPort, useTLS, nil
	}
	n, convErr := strconv.Atoi(p)
	if convErr != nil || n < 1 || n > 65535 || h == "" {
		return "", 0, false, fmt.Errorf("qdrant: URL %q: want host:port with a port in 1-65535", raw)
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]" // go-client joins host and port with a bare ':'
	}
	return h, n, useTLS, nil
}

// Close closes the connections.
func (ix *Index) Close() error { return ix.client.Close() }

// CollectionName is the collection of space: the model lower-cased with
// every character but [a-z0-9.-] replaced by '-' (and cut to 128 bytes,
// as Qdrant limits names to 255), and when that changed the name, a hash
// of the exact model so two models never share one.
func (ix *Index) CollectionName(space domain.VectorSpace) string {
	model := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		default:
			return '-'
		}
	}, space.Model)
	model = model[:min(len(model), maxModelInName)]
	if model != space.Model || model == "" {
		sum := sha256.Sum256([]byte(space.Model))
		model = cmp.Or(model, "-") + "_h" + hex.EncodeToString(sum[:4])
	}
	return ix.prefix + "_" + model + "_" + strconv.Itoa(space.Dimensions)
}

const maxModelInName = 128

// PointID is the id of the memory's point in each of its spaces.
func PointID(userID, agentID, memoryID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("engram:"+userID+"\x00"+agentID+"\x00"+memoryID)).String()
}

// call runs fn with the per-call timeout and maps its error.
func (ix *Index) call(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	if err := ix.checkVersion(ctx); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, ix.timeout)
	defer cancel()
	return ix.mapErr(ctx, what, fn(cctx))
}

// mapErr is the one place Qdrant's errors become the port's: the caller's
// own cancellation stays itself, a refused write is ErrIndexRejected, and
// everything else (down, timed out, refused key, server fault) is
// ErrIndexUnavailable, which the projection retries and search maps to 503.
func (ix *Index) mapErr(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("qdrant: %s: %w", what, ctx.Err())
	}
	switch status.Code(err) {
	case codes.InvalidArgument:
		return fmt.Errorf("qdrant: %s: %w: %w", what, domain.ErrIndexRejected, err)
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("qdrant: %s: %w: the API key was refused (ENGRAM_QDRANT_API_KEY): %w", what, domain.ErrIndexUnavailable, err)
	default:
		return fmt.Errorf("qdrant: %s: %w: %w", what, domain.ErrIndexUnavailable, err)
	}
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// scopeConditions confine a filter to the agent.
func scopeConditions(scope domain.IndexScope) []*qdrant.Condition {
	return []*qdrant.Condition{
		qdrant.NewMatchKeyword(keyUser, scope.UserID),
		qdrant.NewMatchKeyword(keyAgent, scope.AgentID),
	}
}

func memoryFilter(scope domain.IndexScope, memoryID string) *qdrant.Filter {
	return &qdrant.Filter{Must: append(scopeConditions(scope), qdrant.NewMatchKeyword(keyMemory, memoryID))}
}

// searchable is the agent's points that are not forgotten.
func searchable(scope domain.IndexScope) []*qdrant.Condition {
	return append(scopeConditions(scope), qdrant.NewMatchBool(keyForgotten, false))
}

// payloadIndexes are created with every collection: the filter fields.
var payloadIndexes = []struct {
	field  string
	typ    qdrant.FieldType
	params *qdrant.PayloadIndexParams
}{
	// is_tenant lets Qdrant lay points out by user (multitenancy).
	{keyUser, qdrant.FieldType_FieldTypeKeyword, qdrant.NewPayloadIndexParamsKeyword(&qdrant.KeywordIndexParams{IsTenant: qdrant.PtrOf(true)})},
	{keyAgent, qdrant.FieldType_FieldTypeKeyword, nil},
	{keyMemory, qdrant.FieldType_FieldTypeKeyword, nil},
	{keyType, qdrant.FieldType_FieldTypeKeyword, nil},
	{keyTags, qdrant.FieldType_FieldTypeKeyword, nil},
	{keyCreatedAt, qdrant.FieldType_FieldTypeInteger, nil},
	{keyForgotten, qdrant.FieldType_FieldTypeBool, nil},
}

// ensureCollection creates the space's collection and its payload indexes
// unless this Index already saw them.
func (ix *Index) ensureCollection(ctx context.Context, name string, dims int) error {
	ix.mu.Lock()
	known := ix.created[name]
	ix.mu.Unlock()
	if known {
		return nil
	}
	err := ix.call(ctx, "create collection "+name, func(ctx context.Context) error {
		exists, err := ix.client.CollectionExists(ctx, name)
		if err != nil || exists {
			return err
		}
		err = ix.client.CreateCollection(ctx, &qdrant.CreateCollection{
			CollectionName: name,
			VectorsConfig:  qdrant.NewVectorsConfig(&qdrant.VectorParams{Size: uint64(dims), Distance: qdrant.Distance_Cosine}),
		})
		if err != nil {
			// Another writer may have created it first ("already exists").
			if exists, existsErr := ix.client.CollectionExists(ctx, name); existsErr == nil && exists {
				return nil
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	// Creating an index that exists is a no-op in Qdrant, so this also
	// completes a collection whose creator stopped half-way.
	for _, pi := range payloadIndexes {
		err := ix.call(ctx, "index "+pi.field+" of "+name, func(ctx context.Context) error {
			_, err := ix.client.CreateFieldIndex(ctx, &qdrant.CreateFieldIndexCollection{
				CollectionName: name, Wait: qdrant.PtrOf(true),
				FieldName: pi.field, FieldType: qdrant.PtrOf(pi.typ), FieldIndexParams: pi.params,
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	ix.mu.Lock()
	ix.created[name] = true
	ix.mu.Unlock()
	return nil
}

// forget drops the cached knowledge that collections exist.
func (ix *Index) forget(names ...string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(names) == 0 {
		clear(ix.created)
	}
	for _, n := range names {
		delete(ix.created, n)
	}
}

// ownCollections lists the collections of this prefix.
func (ix *Index) ownCollections(ctx context.Context) ([]string, error) {
	var names []string
	err := ix.call(ctx, "list collections", func(ctx context.Context) error {
		all, err := ix.client.ListCollections(ctx)
		for _, n := range all {
			if ix.owned.MatchString(n) {
				names = append(names, n)
			}
		}
		return err
	})
	return names, err
}

// checkVector says why Qdrant could never use v in a space of dims.
func checkVector(v []float32, dims int) error {
	if len(v) != dims {
		return fmt.Errorf("%d-dimensional vector in a %d-dimensional space", len(v), dims)
	}
	var sum float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("vector has a non-finite component")
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return errors.New("zero vector has no direction (cosine)")
	}
	return nil
}

// UpsertVectors implements domain.VectorIndex: one wait=true upsert per
// collection. Points Qdrant could never accept are left out and reported
// with domain.ErrIndexRejected after the others are stored.
func (ix *Index) UpsertVectors(ctx context.Context, points ...domain.VectorPoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	type group struct {
		dims   int
		points []*qdrant.PointStruct
	}
	groups := map[string]*group{}
	var order []string
	var rejected []error
	for _, p := range points {
		if err := checkVector(p.Vector, p.Space.Dimensions); err != nil {
			rejected = append(rejected, fmt.Errorf("%w: memory %s in space %s@%d: %v",
				domain.ErrIndexRejected, p.MemoryID, p.Space.Model, p.Space.Dimensions, err))
			continue
		}
		tags := make([]any, len(p.Tags))
		for i, t := range p.Tags {
			tags[i] = t
		}
		payload, err := qdrant.TryValueMap(map[string]any{
			keyUser: p.UserID, keyAgent: p.AgentID, keyMemory: p.MemoryID,
			keyType: p.Type, keyTags: tags, keyCreatedAt: p.CreatedAt.UnixMilli(),
			keyForgotten: p.Forgotten, keyTextHash: p.TextHash,
		})
		if err != nil { // a string that is not UTF-8
			rejected = append(rejected, fmt.Errorf("%w: memory %s: payload: %v", domain.ErrIndexRejected, p.MemoryID, err))
			continue
		}
		name := ix.CollectionName(p.Space)
		g, ok := groups[name]
		if !ok {
			g = &group{dims: p.Space.Dimensions}
			groups[name] = g
			order = append(order, name)
		}
		g.points = append(g.points, &qdrant.PointStruct{
			Id:      qdrant.NewIDUUID(PointID(p.UserID, p.AgentID, p.MemoryID)),
			Vectors: qdrant.NewVectorsDense(p.Vector),
			Payload: payload,
		})
	}
	for _, name := range order {
		g := groups[name]
		for _, part := range splitBySize(g.points, upsertRequestBytes) {
			if err := ix.upsert(ctx, name, g.dims, part); err != nil {
				return err
			}
		}
	}
	return errors.Join(rejected...)
}

// upsertRequestBytes bounds the points of one upsert request, well under
// the 4 MiB a gRPC server accepts by default (Qdrant's own limit is
// configurable); a larger batch goes in several requests. Redelivery of a
// batch that failed half-way is harmless: the points are idempotent.
const upsertRequestBytes = 1 << 20

// splitBySize cuts points into runs of at most limit encoded bytes (a
// single larger point goes alone).
func splitBySize(points []*qdrant.PointStruct, limit int) [][]*qdrant.PointStruct {
	var parts [][]*qdrant.PointStruct
	start, size := 0, 0
	for i, p := range points {
		n := proto.Size(p)
		if i > start && size+n > limit {
			parts = append(parts, points[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(points) {
		parts = append(parts, points[start:])
	}
	return parts
}

func (ix *Index) upsert(ctx context.Context, name string, dims int, points []*qdrant.PointStruct) error {
	for attempt := 0; ; attempt++ {
		if err := ix.ensureCollection(ctx, name, dims); err != nil {
			return err
		}
		var notFound bool
		err := ix.call(ctx, "upsert into "+name, func(ctx context.Context) error {
			_, err := ix.client.Upsert(ctx, &qdrant.UpsertPoints{CollectionName: name, Wait: qdrant.PtrOf(true), Points: points})
			notFound = isNotFound(err)
			return err
		})
		if notFound && attempt == 0 {
			// Deleted behind this Index's back (DropAll elsewhere): create
			// it again once.
			ix.forget(name)
			continue
		}
		return err
	}
}

// eachCollection runs fn on every collection of the prefix; a collection
// deleted meanwhile is skipped.
func (ix *Index) eachCollection(ctx context.Context, what string, fn func(ctx context.Context, name string) error) error {
	names, err := ix.ownCollections(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		err := ix.call(ctx, what+" in "+name, func(ctx context.Context) error {
			if err := fn(ctx, name); err != nil && !isNotFound(err) {
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SetForgotten implements domain.VectorIndex.
func (ix *Index) SetForgotten(ctx context.Context, scope domain.IndexScope, memoryID string, forgotten bool) error {
	return ix.eachCollection(ctx, "set forgotten", func(ctx context.Context, name string) error {
		_, err := ix.client.SetPayload(ctx, &qdrant.SetPayloadPoints{
			CollectionName: name, Wait: qdrant.PtrOf(true),
			Payload:        qdrant.NewValueMap(map[string]any{keyForgotten: forgotten}),
			PointsSelector: qdrant.NewPointsSelectorFilter(memoryFilter(scope, memoryID)),
		})
		return err
	})
}

func (ix *Index) deleteWhere(ctx context.Context, name string, f *qdrant.Filter) error {
	_, err := ix.client.Delete(ctx, &qdrant.DeletePoints{
		CollectionName: name, Wait: qdrant.PtrOf(true), Points: qdrant.NewPointsSelectorFilter(f),
	})
	return err
}

// DeleteMemory implements domain.VectorIndex.
func (ix *Index) DeleteMemory(ctx context.Context, scope domain.IndexScope, memoryID string) error {
	return ix.eachCollection(ctx, "delete memory", func(ctx context.Context, name string) error {
		return ix.deleteWhere(ctx, name, memoryFilter(scope, memoryID))
	})
}

// DeleteAgent implements domain.VectorIndex.
func (ix *Index) DeleteAgent(ctx context.Context, scope domain.IndexScope) error {
	return ix.eachCollection(ctx, "delete agent", func(ctx context.Context, name string) error {
		return ix.deleteWhere(ctx, name, &qdrant.Filter{Must: scopeConditions(scope)})
	})
}

// DeleteSpace implements domain.VectorIndex: the agent's points go, the
// collection stays for the other agents of that model.
func (ix *Index) DeleteSpace(ctx context.Context, scope domain.IndexScope, space domain.VectorSpace) error {
	name := ix.CollectionName(space)
	return ix.call(ctx, "delete space "+name, func(ctx context.Context) error {
		if err := ix.deleteWhere(ctx, name, &qdrant.Filter{Must: scopeConditions(scope)}); err != nil && !isNotFound(err) {
			return err
		}
		return nil
	})
}

// DropAll implements domain.VectorIndex: it deletes every collection of
// the prefix (a rebuild creates them again).
func (ix *Index) DropAll(ctx context.Context) error {
	names, err := ix.ownCollections(ctx)
	if err != nil {
		return err
	}
	ix.forget()
	for _, name := range names {
		err := ix.call(ctx, "drop "+name, func(ctx context.Context) error {
			if err := ix.client.DeleteCollection(ctx, name); err != nil && !isNotFound(err) {
				return err
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SearchVectors implements domain.VectorIndex. Qdrant's cosine score is
// mapped to max(0, cosine); min_score goes to Qdrant as score_threshold.
// Qdrant leaves the order of equal scores unspecified, so the page is
// re-ordered newer first, then by memory id, among equal scores.
func (ix *Index) SearchVectors(ctx context.Context, q domain.VectorQuery) ([]domain.IndexHit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	if err := checkVector(q.Vector, q.Space.Dimensions); err != nil {
		return nil, domain.Invalid("query", "query vector: %v", err)
	}
	must := scopeConditions(q.Scope)
	if !q.Filter.IncludeForgotten {
		must = searchable(q.Scope)
	}
	if len(q.Filter.Types) > 0 {
		must = append(must, qdrant.NewMatchKeywords(keyType, q.Filter.Types...))
	}
	for _, tag := range q.Filter.Tags {
		must = append(must, qdrant.NewMatchKeyword(keyTags, tag))
	}
	if r := timeRange(q.Filter); r != nil {
		must = append(must, qdrant.NewRange(keyCreatedAt, r))
	}
	req := &qdrant.QueryPoints{
		CollectionName: ix.CollectionName(q.Space),
		Query:          qdrant.NewQueryDense(q.Vector),
		Filter:         &qdrant.Filter{Must: must},
		Limit:          qdrant.PtrOf(uint64(q.Limit)),
		WithPayload:    qdrant.NewWithPayloadInclude(keyMemory, keyCreatedAt),
	}
	if q.MinScore > 0 {
		// One float32 step below, so a hit scoring exactly min_score is
		// kept whether Qdrant compares with > or >=.
		req.ScoreThreshold = qdrant.PtrOf(math.Nextafter32(float32(q.MinScore), float32(math.Inf(-1))))
	}
	var points []*qdrant.ScoredPoint
	err := ix.call(ctx, "query "+req.CollectionName, func(ctx context.Context) error {
		var err error
		points, err = ix.client.Query(ctx, req)
		if isNotFound(err) {
			return nil // nothing was ever stored in this space
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	hits := make([]domain.IndexHit, 0, len(points))
	for _, p := range points {
		score := cosineScore(float64(p.GetScore()))
		if score < q.MinScore {
			continue
		}
		pl := p.GetPayload()
		hits = append(hits, domain.IndexHit{
			MemoryID:  pl[keyMemory].GetStringValue(),
			Score:     score,
			CreatedAt: time.UnixMilli(pl[keyCreatedAt].GetIntegerValue()).UTC(),
		})
	}
	slices.SortStableFunc(hits, func(a, b domain.IndexHit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.MemoryID, b.MemoryID))
	})
	return hits, nil
}

// timeRange is the created_at condition of f, nil when it has none. The
// payload holds milliseconds, so a bound inside a millisecond is rounded
// up to the next one.
func timeRange(f domain.IndexFilter) *qdrant.Range {
	if f.CreatedAfter.IsZero() && f.CreatedBefore.IsZero() {
		return nil
	}
	r := &qdrant.Range{}
	if !f.CreatedAfter.IsZero() {
		r.Gte = qdrant.PtrOf(float64(ceilMilli(f.CreatedAfter)))
	}
	if !f.CreatedBefore.IsZero() {
		r.Lt = qdrant.PtrOf(float64(ceilMilli(f.CreatedBefore)))
	}
	return r
}

func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// cosineScore maps a cosine similarity onto [0, 1] as the embedded index
// does: unrelated and opposite texts score 0, identical ones 1.
func cosineScore(cos float64) float64 {
	if math.IsNaN(cos) {
		return 0
	}
	return min(1, max(0, cos))
}

// CountVectors implements domain.VectorIndex (an exact count).
func (ix *Index) CountVectors(ctx context.Context, scope domain.IndexScope, space domain.VectorSpace) (int, error) {
	name := ix.CollectionName(space)
	var n uint64
	err := ix.call(ctx, "count in "+name, func(ctx context.Context) error {
		var err error
		n, err = ix.client.Count(ctx, &qdrant.CountPoints{
			CollectionName: name, Filter: &qdrant.Filter{Must: searchable(scope)}, Exact: qdrant.PtrOf(true),
		})
		if isNotFound(err) {
			n, err = 0, nil
		}
		return err
	})
	return int(n), err
}

// Ready implements domain.VectorIndex: Qdrant's health check, then a
// listing of the collections, because Qdrant answers the health check
// without looking at the API key and a refused key must not look ready.
func (ix *Index) Ready(ctx context.Context) error {
	err := ix.call(ctx, "health check", func(ctx context.Context) error {
		_, err := ix.client.HealthCheck(ctx)
		return err
	})
	if err != nil {
		return err
	}
	_, err = ix.ownCollections(ctx)
	return err
}

// Entries is the number of points in this index's collections (forgotten
// ones included), an approximate count as Qdrant keeps it.
func (ix *Index) Entries(ctx context.Context) (int, error) {
	names, err := ix.ownCollections(ctx)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, name := range names {
		err := ix.call(ctx, "count in "+name, func(ctx context.Context) error {
			n, err := ix.client.Count(ctx, &qdrant.CountPoints{CollectionName: name})
			if isNotFound(err) {
				n, err = 0, nil
			}
			total += n
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	return int(total), nil
}

package api_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/projections"
	"github.com/engram-memory/engram/projections/search"
)

// embStack is the embedding side of the server in process: SQLite log and
// read models in a data directory, the projection engine with the memories,
// jobs and vector projections, the real local provider (built-in model plus
// a generated static model), the memory and embedding commands, the job
// runner and the HTTP API on a loopback port. Two fixed bearer credentials
// stand for two users.
type embStack struct {
	t        testing.TB
	dataDir  string
	db       *sqlite.DB
	store    *sqlite.EventStore
	memories *sqlite.Memories
	jobs     *sqlite.Jobs
	keyword  *sqlite.Keyword
	vectors  *projections.Vectors
	engine   *projections.Engine
	writer   *commands.EventWriter
	provider *flakyProvider
	catalog  *embed.Catalog
	memCmds  *commands.Memories
	emb      *commands.Embeddings
	runner   *commands.JobRunner
	srv      *httptest.Server
	handler  atomic.Pointer[http.Handler]

	stopRunner func()
	closeAll   func()
}

// The two test users and their bearer credentials.
const (
	alice    = "user-alice"
	bob      = "user-bob"
	aliceKey = "test-key-alice"
	bobKey   = "test-key-bob"
)

// staticModel is the name of the generated Model2Vec-style model.
const staticModel = "test-static-64"

type embOptions struct {
	dataDir string // reuse a data directory (a restart); empty: a new one
	runner  commands.RunnerConfig
	noRun   bool // do not start the runner: the test steps it
}

func newEmbStack(t testing.TB, opts embOptions) *embStack {
	t.Helper()
	s := &embStack{t: t, dataDir: opts.dataDir}
	if s.dataDir == "" {
		s.dataDir = t.TempDir()
	}
	logger := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, s.dataDir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
	s.store = sqlite.NewEventStore(db, 10*time.Millisecond)
	s.memories = sqlite.NewMemories(db)
	s.jobs = sqlite.NewJobs(db)
	s.keyword = sqlite.NewKeyword(db)
	index := vectorindex.New(vectorindex.Options{})
	s.vectors = projections.NewVectors(sqlite.NewVectorStore(db), index, logger)
	s.engine = projections.NewEngine(s.store, logger, s.memories, s.jobs, s.keyword, s.vectors)
	engineCtx, stopEngine := context.WithCancel(ctx)
	engineDone := make(chan error, 1)
	go func() { engineDone <- s.engine.Run(engineCtx) }()
	head, err := s.store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.engine.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}

	lp, err := local.New(local.Options{ModelDirs: []string{staticModelDir(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s.provider = &flakyProvider{Provider: lp}
	s.catalog = newCatalog(t, s.provider, local.BuiltinModelName)
	s.writer = commands.NewEventWriter(s.store, s.engine)
	// The handler is swapped by wire; the server reads it per request.
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	rc := opts.runner
	if rc.ID == "" {
		rc.ID = "test-runner"
	}
	if rc.PollInterval == 0 {
		rc.PollInterval = 20 * time.Millisecond
	}
	if rc.RetryBackoff == 0 {
		rc.RetryBackoff = time.Millisecond
	}
	s.wire(s.catalog, rc)
	s.stopRunner = func() {}
	if !opts.noRun {
		s.startRunner()
	}
	var once sync.Once
	s.closeAll = func() {
		once.Do(func() {
			s.srv.Close()
			s.stopRunner()
			stopEngine()
			<-engineDone
			index.Close()
			db.Close()
		})
	}
	t.Cleanup(s.closeAll)
	return s
}

// startRunner runs the stack's runner until stopRunner.
func (s *embStack) startRunner() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.runner.Run(ctx)
	}()
	var once sync.Once
	s.stopRunner = func() { once.Do(func() { cancel(); <-done }) }
}

// fixedAuth maps fixed bearer strings to users.
type fixedAuth map[string]string

func (a fixedAuth) Authenticate(_ context.Context, credential string) (domain.Actor, error) {
	user, ok := a[credential]
	if !ok {
		return domain.Actor{}, domain.Errorf(domain.KindUnauthorized, "unknown credential")
	}
	return domain.Actor{Kind: domain.ActorKey, ID: "key-" + user, UserID: user}, nil
}

// flakyProvider is the real local provider with a switch that simulates
// an outage; calls counts the calls that reached it.
type flakyProvider struct {
	*local.Provider
	down  atomic.Bool
	calls atomic.Int64
}

func (p *flakyProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "the embedding provider is unavailable")
	}
	return p.Provider.Embed(ctx, req)
}

// newCatalog is the server's catalog over one provider, with its default.
func newCatalog(t testing.TB, provider domain.EmbeddingProvider, def string) *embed.Catalog {
	t.Helper()
	c, err := embed.NewCatalog(embed.CatalogOptions{Providers: []domain.EmbeddingProvider{provider}, DefaultModel: def})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// staticModelDir writes a small Model2Vec-style model in the real file
// formats (safetensors with an F32 "embeddings" tensor, a WordPiece
// tokenizer.json) and returns its directory, named staticModel.
func staticModelDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), staticModel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
	words := strings.Fields(`the a an and or of to in on for with is was be it this that deploy deployed
		server database backup restore user users coffee tea morning evening team meeting release bug fix
		fixed test tests cache latency memory memories agent note notes goal plan learn learned prefer likes
		python go rust code review friday monday night alert page oncall rollback config migration`)
	for _, w := range words {
		if _, ok := vocab[w]; !ok {
			vocab[w] = len(vocab)
		}
	}
	for _, suffix := range []string{"s", "ed", "ing", "er"} {
		vocab["##"+suffix] = len(vocab)
	}
	const dims = 64
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4*dims*len(vocab))
	for i := 0; i < dims*len(vocab); i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	header, err := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"embeddings":   map[string]any{"dtype": "F32", "shape": []int{len(vocab), dims}, "data_offsets": []int{0, len(data)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var st bytes.Buffer
	binary.Write(&st, binary.LittleEndian, uint64(len(header)))
	st.Write(header)
	st.Write(data)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := json.Marshal(map[string]any{
		"added_tokens":  []map[string]any{{"id": 0, "content": "[PAD]", "special": true}},
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": vocab},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// embResponse is a decoded response.
type embResponse struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r embResponse) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

func (r embResponse) code() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r embResponse) details() map[string]any {
	e, _ := r.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

// do sends a JSON request as bearer (empty: none); a string body is sent
// as is.
func (s *embStack) do(method, path, bearer string, body any) embResponse {
	s.t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, reader)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	r := embResponse{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		s.t.Fatalf("%s %s: response is not JSON: %v\n%s", method, path, err, raw)
	}
	return r
}

// must sends a request and fails the test unless it answers status.
func (s *embStack) must(status int, method, path, bearer string, body any) embResponse {
	s.t.Helper()
	r := s.do(method, path, bearer, body)
	if r.status != status {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.raw)
	}
	return r
}

// wantError fails unless r is a failure with status and code.
func wantError(t *testing.T, r embResponse, status int, code string) {
	t.Helper()
	if r.status != status || r.code() != code || r.body["success"] != false {
		t.Fatalf("got %d %s, want %d %s: %s", r.status, r.code(), status, code, r.raw)
	}
}

// seed creates n notes (and one drive) in the user's agent through the
// memory commands, and returns the note ids in id order.
func (s *embStack) seed(userID, agentID string, n int) []string {
	s.t.Helper()
	in := make([]commands.MemoryInput, 0, n+1)
	for i := range n {
		content, _ := json.Marshal(map[string]any{"content": fmt.Sprintf("note %d: the team deployed release %d to the server and fixed a cache bug", i, i)})
		in = append(in, commands.MemoryInput{Type: "notes", Content: content})
	}
	in = append(in, commands.MemoryInput{Type: "drive", Content: json.RawMessage(`{"drive_type":"curiosity","intensity":0.5}`)})
	var ids []string
	for start := 0; start < len(in); start += memory.MaxBatch {
		created, err := s.memCmds.CreateBatch(context.Background(), metaFor(userID), agentID, in[start:min(len(in), start+memory.MaxBatch)])
		if err != nil {
			s.t.Fatal(err)
		}
		for _, c := range created {
			if c.Type == memory.Note {
				ids = append(ids, c.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func metaFor(userID string) domain.Metadata {
	return domain.Metadata{Actor: domain.Actor{Kind: domain.ActorKey, ID: "key-" + userID, UserID: userID}, RequestID: "test"}
}

// jobEvents counts the MemoryEmbedded events of the log that carry jobID,
// and the distinct memories among them.
func (s *embStack) jobEvents(jobID string) (events, memories int) {
	s.t.Helper()
	seen := map[string]bool{}
	var after uint64
	for {
		batch, err := s.store.ReadAll(context.Background(), after, 1000)
		if err != nil {
			s.t.Fatal(err)
		}
		if len(batch) == 0 {
			return events, len(seen)
		}
		for _, e := range batch {
			after = e.Position
			if e.Type != (memory.MemoryEmbedded{}).EventType() {
				continue
			}
			var p memory.MemoryEmbedded
			if err := e.Decode(&p); err != nil {
				s.t.Fatal(err)
			}
			if p.JobID == jobID {
				events++
				seen[p.MemoryID] = true
			}
		}
	}
}

// waitJob polls the job until cond holds or the deadline passes.
func (s *embStack) waitJob(bearer, jobID string, cond func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d := s.must(http.StatusOK, "GET", "/v1/embeddings/jobs/"+jobID, bearer, nil).data()
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s never reached the expected state: %v", jobID, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusIs(status string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["status"] == status }
}

// num reads a JSON number.
func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// floats reads a JSON array of numbers.
func floats(v any) []float32 {
	arr, _ := v.([]any)
	out := make([]float32, len(arr))
	for i, x := range arr {
		f, _ := x.(float64)
		out[i] = float32(f)
	}
	return out
}

type commandsInput = commands.MemoryInput

// wire builds the commands, the runner and the API over catalog, as the
// server wires them, and serves the API on the stack's loopback port.
func (s *embStack) wire(c *embed.Catalog, rc commands.RunnerConfig) {
	s.t.Helper()
	s.catalog = c
	var err error
	s.memCmds, err = commands.NewMemories(commands.MemoriesConfig{Writer: s.writer, Reader: s.memories, Embedder: c, DefaultModel: c.DefaultModel()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.runner = commands.NewJobRunner(s.writer, s.jobs, s.memories, c, rc)
	searcher := s.searcher(c)
	s.emb = commands.NewEmbeddings(commands.EmbeddingsDeps{
		Catalog: c, Memories: s.memories, Jobs: s.jobs, Writer: s.writer, Runner: s.runner,
		Similar: searcher,
	})
	h := api.New(api.Config{
		Search:        searcher,
		Logger:        slog.New(slog.DiscardHandler),
		UserRateLimit: api.RateLimit{PerSecond: 10000, Burst: 10000},
		Auth:          fixedAuth{aliceKey: alice, bobKey: bob},
		Embeddings:    s.emb,
	}).Handler()
	s.handler.Store(&h)
}

// searcher is the search service over the stack's indexes, embedding
// queries with catalog c.
func (s *embStack) searcher(c *embed.Catalog) *search.Service {
	s.t.Helper()
	svc, err := search.New(s.keyword, s.vectors, search.ProviderEmbedder{Provider: c}, s.memories, slog.New(slog.DiscardHandler), search.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	return svc
}

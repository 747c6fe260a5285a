package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
	"github.com/engram-memory/engram/infra/embed/local"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// memStack is the memory API in process on the real stack: SQLite log
// and read models, the projection engine, real accounts for bearer
// credentials, the built-in local embedding model (behind a counting
// switch) and the embedding queue, served on a loopback port.
type memStack struct {
	db       *sqlite.DB
	store    *sqlite.EventStore
	readMod  *sqlite.Memories
	engine   *projections.Engine
	provider *memProvider
	queue    *commands.EmbedQueue
	accounts *commands.Accounts
	srv      *httptest.Server

	mu     sync.Mutex
	tokens map[string]string // e-mail → newest verification token

	stopEngine func()
	stopQueue  func()
}

func newMemStack(t testing.TB) *memStack {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &memStack{db: db, tokens: map[string]string{}}
	s.store = sqlite.NewEventStore(db, 20*time.Millisecond)
	s.readMod = sqlite.NewMemories(db)
	accountsRM := sqlite.NewAccounts(db)
	s.engine = projections.NewEngine(s.store, logger, accountsRM, s.readMod)
	s.stopEngine = memRunInBackground(s.engine.Run)

	lp, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.provider = &memProvider{inner: lp}
	writer := commands.NewEventWriter(s.store, s.engine)
	s.queue, err = commands.NewEmbedQueue(commands.EmbedQueueConfig{
		Writer: writer, Reader: s.readMod, Embedder: s.provider, Logger: logger,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.stopQueue = memRunInBackground(s.queue.Run)
	memories, err := commands.NewMemories(commands.MemoriesConfig{
		Writer: writer, Reader: s.readMod, Embedder: s.provider, Queue: s.queue, Logger: logger,
		DefaultModel: lp.Models()[0],
	})
	if err != nil {
		t.Fatal(err)
	}
	s.accounts, err = commands.NewAccounts(commands.AccountsConfig{
		Writer: writer, Reader: accountsRM, Agents: s.readMod, Logger: logger,
		Mailer: commands.MailerFunc(s.captureToken),
	})
	if err != nil {
		t.Fatal(err)
	}
	generousLimit := api.RateLimit{PerSecond: 1e6, Burst: 1e6}
	server := api.New(api.Config{
		Logger: logger, UserRateLimit: generousLimit, IPRateLimit: generousLimit,
		Auth: s.accounts, Accounts: s.accounts, Memories: memories,
	})
	s.srv = httptest.NewServer(server.Handler())
	t.Cleanup(func() {
		s.srv.Close()
		s.stopQueue()
		s.stopEngine()
		db.Close()
	})
	return s
}

// memRunInBackground runs run until the returned stop is called.
func memRunInBackground(run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

var memTokenLine = regexp.MustCompile(`(?m)^(engv_\S+)\r?$`)

func (s *memStack) captureToken(_ context.Context, m commands.Mail) error {
	match := memTokenLine.FindStringSubmatch(m.Text)
	if match == nil {
		return errors.New("no token in the verification mail")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[m.To] = match[1]
	return nil
}

// user registers and verifies an account and returns its id and API key.
func (s *memStack) user(t testing.TB, email string) (userID, apiKey string) {
	t.Helper()
	ctx := context.Background()
	meta := domain.Metadata{RequestID: "test"}
	reg, err := s.accounts.Register(ctx, meta, email)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	token := s.tokens[reg.Email]
	s.mu.Unlock()
	v, err := s.accounts.Verify(ctx, meta, token)
	if err != nil {
		t.Fatal(err)
	}
	return v.UserID, v.APIKey
}

// memProvider is the real local provider behind a switch that simulates
// an outage, counting the calls that reach it.
type memProvider struct {
	inner *local.Provider
	down  atomic.Bool
	calls atomic.Int64 // calls answered with vectors
	texts atomic.Int64
}

func (p *memProvider) Embed(ctx context.Context, req domain.EmbedRequest) (domain.EmbedResult, error) {
	if p.down.Load() {
		return domain.EmbedResult{}, domain.Errorf(domain.KindProviderUnavailable, "embedding provider is down (test)")
	}
	res, err := p.inner.Embed(ctx, req)
	if err == nil {
		p.calls.Add(1)
		p.texts.Add(int64(len(req.Texts)))
	}
	return res, err
}

// memResp is a decoded API response.
type memResp struct {
	status int
	raw    []byte
	env    struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Error   struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
}

func (s *memStack) call(t testing.TB, method, path, bearer string, body any) memResp {
	t.Helper()
	var reader io.Reader
	if body != nil {
		raw, ok := body.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(body); err != nil {
				t.Fatal(err)
			}
		}
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := memResp{status: res.StatusCode}
	if r.raw, err = io.ReadAll(res.Body); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.raw, &r.env); err != nil {
		t.Fatalf("%s %s: response is not JSON: %v: %s", method, path, err, r.raw)
	}
	return r
}

// must fails unless the response has status, then decodes data into out
// (when not nil).
func (r memResp) must(t testing.TB, status int, out any) memResp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if out != nil {
		if err := json.Unmarshal(r.env.Data, out); err != nil {
			t.Fatalf("decode data: %v: %s", err, r.raw)
		}
	}
	return r
}

// invalid fails unless the response is 400 naming field.
func (r memResp) invalid(t testing.TB, field string) memResp {
	t.Helper()
	if r.status != http.StatusBadRequest || r.env.Error.Code != "invalid_request" {
		t.Fatalf("status %d code %q, want 400 invalid_request: %s", r.status, r.env.Error.Code, r.raw)
	}
	if got, _ := r.env.Error.Details["field"].(string); got != field {
		t.Fatalf("details.field = %q, want %q: %s", got, field, r.raw)
	}
	return r
}

// memCreated is one entry of a create response.
type memCreated struct {
	Type      string                `json:"type"`
	ID        string                `json:"id"`
	CreatedAt time.Time             `json:"created_at"`
	Embedding memory.EmbeddingState `json:"embedding"`
}

type memList struct {
	Memories   []memory.View `json:"memories"`
	NextCursor *string       `json:"next_cursor"`
}

// create posts one memory and returns the response entry.
func (s *memStack) create(t testing.TB, bearer, agentID, typ string, content any) memCreated {
	t.Helper()
	var c memCreated
	s.call(t, "POST", "/v1/memories", bearer, map[string]any{"agent_id": agentID, "type": typ, "content": content}).
		must(t, http.StatusCreated, &c)
	return c
}

func (s *memStack) get(t testing.TB, bearer, id string) memory.View {
	t.Helper()
	var v memory.View
	s.call(t, "GET", "/v1/memories/"+id, bearer, nil).must(t, http.StatusOK, &v)
	return v
}

// listAll pages through a listing with the given query and page size.
func (s *memStack) listAll(t testing.TB, bearer, query string, limit int) []memory.View {
	t.Helper()
	var all []memory.View
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("listing does not end")
		}
		path := fmt.Sprintf("/v1/memories?%s&limit=%d", query, limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page memList
		s.call(t, "GET", path, bearer, nil).must(t, http.StatusOK, &page)
		all = append(all, page.Memories...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// export is the memories read model's export.
func (s *memStack) export(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.readMod.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// eventually polls cond until it holds or a few seconds pass.
func memEventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

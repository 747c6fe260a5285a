package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/mail"
	"github.com/engram-memory/engram/infra/mail/mailtest"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/projections"
)

// stack is the whole server in process, wired as `engram serve` wires it:
// SQLite event log and read model in a temp dir, the projection engine,
// the account commands, mail to an outbox (or SMTP) and the HTTP API on a
// loopback port.
type stack struct {
	t        *testing.T
	dataDir  string
	outbox   string
	db       *sqlite.DB
	store    *sqlite.EventStore
	model    *sqlite.Accounts
	engine   *projections.Engine
	usage    *commands.UsageRecorder
	accounts *commands.Accounts
	clock    *testClock
	logs     *syncBuffer
	smtp     *mailtest.Server // nil unless stackOptions.smtp
	srv      *httptest.Server

	stopEngine func() // stops the engine's Run and waits for it
}

type stackOptions struct {
	smtp       bool
	maxBody    int64
	ipLimit    api.RateLimit
	userLimit  api.RateLimit
	sessionTTL time.Duration
}

// generous limits keep tests that fire many requests clear of 429.
var generous = api.RateLimit{PerSecond: 10000, Burst: 10000}

func newStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	if opts.ipLimit == (api.RateLimit{}) {
		opts.ipLimit = generous
	}
	if opts.userLimit == (api.RateLimit{}) {
		opts.userLimit = generous
	}
	s := &stack{t: t, dataDir: t.TempDir(), clock: &testClock{}, logs: &syncBuffer{}}
	s.outbox = filepath.Join(s.dataDir, "outbox")
	logger := slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()

	db, err := sqlite.Open(ctx, s.dataDir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
	s.store = sqlite.NewEventStore(db, 20*time.Millisecond)
	s.model = sqlite.NewAccounts(db)
	s.engine = projections.NewEngine(s.store, logger, s.model)
	s.startEngine()

	smtpURL := ""
	if opts.smtp {
		s.smtp = mailtest.Start(t)
		smtpURL = s.smtp.URL()
	}
	sender, err := mail.NewFromConfig(smtpURL, s.outbox, logger)
	if err != nil {
		t.Fatal(err)
	}
	writer := commands.NewEventWriter(s.store, s.engine)
	s.usage = commands.NewUsageRecorder(writer, time.Hour, logger)
	s.accounts, err = commands.NewAccounts(commands.AccountsConfig{
		Writer: writer,
		Reader: s.model,
		Mailer: commands.MailerFunc(func(ctx context.Context, m commands.Mail) error {
			return sender.Send(ctx, mail.Message(m))
		}),
		Usage:      s.usage,
		Logger:     logger,
		PublicURL:  "http://engram.test:8080",
		SessionTTL: opts.sessionTTL,
		Now:        s.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := api.New(api.Config{
		Logger:        logger,
		MaxBodyBytes:  opts.maxBody,
		UserRateLimit: opts.userLimit,
		IPRateLimit:   opts.ipLimit,
		Auth:          s.accounts,
		Accounts:      s.accounts,
	})
	s.srv = httptest.NewServer(server.Handler())
	t.Cleanup(func() {
		s.srv.Close()
		s.stopEngine()
		db.Close()
	})
	return s
}

func (s *stack) startEngine() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.engine.Run(ctx) }()
	var once sync.Once
	s.stopEngine = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// testClock is the service clock; tests move it forward to expire tokens
// and sessions without sleeping.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// response is a decoded API response.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// data is the success envelope's data object.
func (r response) data() map[string]any {
	d, _ := r.body["data"].(map[string]any)
	return d
}

func (r response) str(key string) string {
	v, _ := r.data()[key].(string)
	return v
}

// errorCode is the failure envelope's code.
func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call sends a JSON request: body nil sends none, a string is sent as is,
// anything else is marshalled.
func (s *stack) call(method, path, bearer string, body any) response {
	s.t.Helper()
	var reader io.Reader
	if body != nil {
		if str, ok := body.(string); ok {
			reader = strings.NewReader(str)
		} else {
			raw, err := json.Marshal(body)
			if err != nil {
				s.t.Fatal(err)
			}
			reader = bytes.NewReader(raw)
		}
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
	return s.send(req)
}

func (s *stack) send(req *http.Request) response {
	s.t.Helper()
	res, err := s.srv.Client().Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			s.t.Fatalf("%s %s: response is not JSON: %v\n%s", req.Method, req.URL.Path, err, raw)
		}
	}
	return r
}

// expect fails the test unless the response has the status.
func expect(t *testing.T, r response, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

var (
	tokenLine = regexp.MustCompile(`(?m)^(engv_[0-9A-Za-z]{43})$`)
	linkLine  = regexp.MustCompile(`(?m)^http://engram\.test:8080/v1/auth/verify\?token=(engv_[0-9A-Za-z]{43})$`)
)

// tokenFromMailBody returns the verification token of a mail body and
// checks it appears both in the link and alone on a line.
func tokenFromMailBody(t *testing.T, body string) string {
	t.Helper()
	body = strings.ReplaceAll(body, "\r\n", "\n")
	alone := tokenLine.FindStringSubmatch(body)
	link := linkLine.FindStringSubmatch(body)
	if alone == nil || link == nil || alone[1] != link[1] {
		t.Fatalf("mail body lacks the token alone on a line and in the link:\n%s", body)
	}
	return alone[1]
}

// outboxMails returns the bodies of the outbox mails to addr, oldest first.
func (s *stack) outboxMails(addr string) []string {
	s.t.Helper()
	files, err := filepath.Glob(filepath.Join(s.outbox, "*.eml"))
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Strings(files) // names start with the time
	var bodies []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			s.t.Fatal(err)
		}
		msg, err := netmail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			s.t.Fatal(err)
		}
		to, err := msg.Header.AddressList("To")
		if err != nil || len(to) != 1 {
			s.t.Fatalf("bad To in %s: %v", f, err)
		}
		if to[0].Address != addr {
			continue
		}
		body, _ := io.ReadAll(msg.Body)
		bodies = append(bodies, string(body))
	}
	return bodies
}

// latestToken is the token of the newest outbox mail to addr.
func (s *stack) latestToken(addr string) string {
	s.t.Helper()
	mails := s.outboxMails(addr)
	if len(mails) == 0 {
		s.t.Fatalf("no mail to %s in the outbox", addr)
	}
	return tokenFromMailBody(s.t, mails[len(mails)-1])
}

// signUp registers and verifies addr through the API and returns the user
// id and the initial key.
func (s *stack) signUp(addr string) (userID, apiKey string) {
	s.t.Helper()
	reg := expect(s.t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusOK)
	ver := expect(s.t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken(addr)}), http.StatusOK)
	if ver.str("user_id") != reg.str("user_id") {
		s.t.Fatalf("verify gave user %s, register %s", ver.str("user_id"), reg.str("user_id"))
	}
	return reg.str("user_id"), ver.str("api_key")
}

// createKey creates a key through the API and returns its id and secret.
func (s *stack) createKey(bearer, name string) (id, key string) {
	s.t.Helper()
	r := expect(s.t, s.call("POST", "/v1/auth/keys", bearer, map[string]string{"name": name}), http.StatusCreated)
	return r.str("id"), r.str("key")
}

// keyIDs returns the caller's key listing by name.
func (s *stack) listKeys(bearer string) []map[string]any {
	s.t.Helper()
	r := expect(s.t, s.call("GET", "/v1/auth/keys", bearer, nil), http.StatusOK)
	raw, _ := r.data()["keys"].([]any)
	out := make([]map[string]any, len(raw))
	for i, k := range raw {
		out[i], _ = k.(map[string]any)
	}
	return out
}

// metaNone is the metadata of a request without credential.
func metaNone() domain.Metadata { return domain.Metadata{RequestID: "test"} }

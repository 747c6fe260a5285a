package commands_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
	"github.com/engram-memory/engram/infra/sqlite"
	"github.com/engram-memory/engram/infra/sqlite/sqlitetest"
	"github.com/engram-memory/engram/internal/workers"
	"github.com/engram-memory/engram/projections"
)

// accountsFixture is the write side over real SQLite with the accounts read model
// and a running projection engine; mail is captured in memory.
type accountsFixture struct {
	store    *sqlite.EventStore
	model    *sqlite.Accounts
	writer   *commands.EventWriter
	usage    *workers.UsageRecorder
	accounts *commands.Accounts
	mail     *capturedMail
	now      time.Time
}

type capturedMail struct {
	mu   sync.Mutex
	sent []commands.Mail
	fail error
}

func (m *capturedMail) Send(_ context.Context, msg commands.Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.sent = append(m.sent, msg)
	return nil
}

func (m *capturedMail) last(t *testing.T) commands.Mail {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sent) == 0 {
		t.Fatal("no mail sent")
	}
	return m.sent[len(m.sent)-1]
}

var mailedTokenLine = regexp.MustCompile(`(?m)^(engv_[0-9A-Za-z]{43})$`)

func (m *capturedMail) token(t *testing.T) string {
	t.Helper()
	match := mailedTokenLine.FindStringSubmatch(m.last(t).Text)
	if match == nil {
		t.Fatalf("no token line in %q", m.last(t).Text)
	}
	return match[1]
}

func newAccountsFixture(t *testing.T, usageInterval time.Duration) *accountsFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := sqlite.Open(ctx, sqlitetest.Dir(t), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &accountsFixture{store: sqlite.NewEventStore(db, 20*time.Millisecond), model: sqlite.NewAccounts(db), mail: &capturedMail{}, now: time.Now().UTC()}
	engine := projections.NewEngine(f.store, logger, projections.NewAccounts(f.model))
	done := make(chan struct{})
	go func() { engine.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; db.Close() })
	f.writer = commands.NewEventWriter(f.store, engine, 0)
	f.usage = workers.NewUsageRecorder(f.writer, usageInterval, logger)
	f.accounts, err = commands.NewAccounts(commands.AccountsConfig{
		Writer: f.writer, Reader: f.model, Mailer: f.mail, Usage: f.usage, Logger: logger,
		Now: func() time.Time { return f.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// signUp registers and verifies addr and returns the initial key.
func (f *accountsFixture) signUp(t *testing.T, addr string) commands.Verified {
	t.Helper()
	ctx := context.Background()
	if _, err := f.accounts.Register(ctx, domain.Metadata{}, addr); err != nil {
		t.Fatal(err)
	}
	v, err := f.accounts.Verify(ctx, domain.Metadata{}, f.mail.token(t))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *accountsFixture) storedLastUse(t *testing.T, userID, keyID string) time.Time {
	t.Helper()
	keys, err := f.model.KeysByUser(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.ID == keyID {
			return k.LastUsedAt
		}
	}
	t.Fatalf("no key %s", keyID)
	return time.Time{}
}

// usedEvents reads the key-use stream of the user; uses never land on the
// user stream that decisions reload.
func (f *accountsFixture) usedEvents(t *testing.T, userID string) []domain.Event {
	t.Helper()
	events, err := f.store.ReadStream(context.Background(), account.UsageStream(userID), 0)
	if err != nil {
		t.Fatal(err)
	}
	var used []domain.Event
	for _, e := range events {
		if e.Type == account.TypeAPIKeysUsed {
			used = append(used, e)
		}
	}
	return used
}

func TestVerificationMail(t *testing.T) {
	f := newAccountsFixture(t, time.Hour)
	reg, err := f.accounts.Register(context.Background(), domain.Metadata{RequestID: "r1"}, " Grace@Example.COM ")
	if err != nil {
		t.Fatal(err)
	}
	m := f.mail.last(t)
	token := f.mail.token(t)
	if m.To != "grace@example.com" || reg.Email != "grace@example.com" || m.Subject == "" {
		t.Fatalf("mail %+v", m)
	}
	if !strings.Contains(m.Text, "\nhttp://127.0.0.1:8080/v1/auth/verify?token="+token+"\n") {
		t.Fatalf("no link ending in the token:\n%s", m.Text)
	}
	if !strings.Contains(m.Text, "24 hours") {
		t.Errorf("the mail does not say when the token expires:\n%s", m.Text)
	}
	events, _ := f.store.ReadStream(context.Background(), account.StreamFor("grace@example.com"), 0)
	if len(events) != 2 || events[0].Actor.Kind != domain.ActorUser || events[0].Actor.ID != reg.UserID || events[1].RequestID != "r1" {
		t.Fatalf("events %+v", events)
	}
}

func TestRegisterWhenMailFails(t *testing.T) {
	f := newAccountsFixture(t, time.Hour)
	f.mail.fail = errors.New("relay down")
	_, err := f.accounts.Register(context.Background(), domain.Metadata{}, "heidi@example.com")
	if domain.ErrorKind(err) != domain.KindProviderUnavailable {
		t.Fatalf("error %v, want provider_unavailable", err)
	}
	f.mail.fail = nil
	// The token was recorded before the mail failed, so it counts against
	// the re-send throttle: the address gets no second mail within a
	// minute (the failure may have been after delivery).
	_, err = f.accounts.Register(context.Background(), domain.Metadata{}, "heidi@example.com")
	if domain.ErrorKind(err) != domain.KindRateLimited {
		t.Fatalf("re-send at once: %v, want rate_limited", err)
	}
	// The user exists; registering again a minute later mails a token
	// that works.
	f.now = f.now.Add(commands.DefaultVerificationResendInterval)
	v := f.signUp(t, "heidi@example.com")
	if v.APIKey == "" {
		t.Fatal("no key")
	}
}

func TestNewAccountsNeedsDependencies(t *testing.T) {
	if _, err := commands.NewAccounts(commands.AccountsConfig{}); err == nil {
		t.Fatal("accounts without writer, reader and mailer")
	}
}

// TestUsageRecorder: uses show in the listing at once, become one
// APIKeysUsed event per user on Flush, and never move last_used_at back.
func TestUsageRecorder(t *testing.T) {
	f := newAccountsFixture(t, time.Hour)
	ctx := context.Background()
	v := f.signUp(t, "ivan@example.com")

	f.now = f.now.Add(time.Minute)
	usedAt := f.now
	actor, err := f.accounts.Authenticate(ctx, v.APIKey)
	if err != nil || actor.Kind != domain.ActorKey || actor.ID != v.KeyID || actor.UserID != v.UserID {
		t.Fatalf("authenticate: %+v %v", actor, err)
	}
	keys, err := f.accounts.ListKeys(ctx, actor)
	if err != nil || len(keys) != 1 || !keys[0].LastUsedAt.Equal(usedAt) {
		t.Fatalf("listing before flush: %+v %v", keys, err)
	}
	if !f.storedLastUse(t, v.UserID, v.KeyID).IsZero() {
		t.Fatal("use stored before the flush")
	}

	if err := f.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.storedLastUse(t, v.UserID, v.KeyID); !got.Equal(usedAt) {
		t.Fatalf("stored last use %v, want %v", got, usedAt)
	}
	if _, pending := f.usage.LastUse(v.KeyID); pending {
		t.Fatal("flushed use still pending")
	}
	used := f.usedEvents(t, v.UserID)
	if len(used) != 1 || used[0].Actor.Kind != domain.ActorSystem || used[0].Actor.UserID != v.UserID {
		t.Fatalf("APIKeysUsed events %+v", used)
	}

	// Nothing pending: no event.
	if err := f.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.usedEvents(t, v.UserID)); n != 1 {
		t.Fatalf("%d APIKeysUsed events after an empty flush", n)
	}

	// Many uses coalesce into one event; an older use never wins.
	for i := range 100 {
		f.usage.Record(v.UserID, v.KeyID, usedAt.Add(time.Duration(i)*time.Second))
	}
	f.usage.Record(v.UserID, v.KeyID, usedAt.Add(-time.Hour))
	if err := f.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := f.storedLastUse(t, v.UserID, v.KeyID), usedAt.Add(99*time.Second); !got.Equal(want) {
		t.Fatalf("stored last use %v, want %v", got, want)
	}
	f.usage.Record(v.UserID, v.KeyID, usedAt.Add(-time.Hour))
	if err := f.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := f.storedLastUse(t, v.UserID, v.KeyID), usedAt.Add(99*time.Second); !got.Equal(want) {
		t.Fatalf("an older use moved last_used_at back to %v", got)
	}
	if n := len(f.usedEvents(t, v.UserID)); n != 3 {
		t.Fatalf("%d APIKeysUsed events, want 3", n)
	}
}

// TestUsageRecorderRun flushes on its interval, and once more when stopped.
func TestUsageRecorderRun(t *testing.T) {
	f := newAccountsFixture(t, 20*time.Millisecond)
	v := f.signUp(t, "judy@example.com")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.usage.Run(ctx) }()

	f.usage.Record(v.UserID, v.KeyID, f.now)
	deadline := time.Now().Add(5 * time.Second)
	for f.storedLastUse(t, v.UserID, v.KeyID).IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the interval flush never happened")
		}
		time.Sleep(10 * time.Millisecond)
	}

	later := f.now.Add(time.Hour)
	f.usage.Record(v.UserID, v.KeyID, later)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.storedLastUse(t, v.UserID, v.KeyID); !got.Equal(later) {
		t.Fatalf("after stop, stored last use %v, want %v", got, later)
	}
}

// TestLoginRecordsUse: exchanging a key for a session counts as a use of
// the key; requests with the session do not.
func TestLoginRecordsUse(t *testing.T) {
	f := newAccountsFixture(t, time.Hour)
	ctx := context.Background()
	v := f.signUp(t, "ken@example.com")
	f.now = f.now.Add(time.Minute)
	s, err := f.accounts.Login(ctx, domain.Metadata{}, v.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := f.usage.LastUse(v.KeyID); !ok || !at.Equal(f.now) {
		t.Fatalf("login not recorded as a use: %v %v", at, ok)
	}
	f.now = f.now.Add(time.Minute)
	actor, err := f.accounts.Authenticate(ctx, s.Token)
	if err != nil || actor.Kind != domain.ActorSession || actor.ID != s.SessionID {
		t.Fatalf("session: %+v %v", actor, err)
	}
	if at, _ := f.usage.LastUse(v.KeyID); at.Equal(f.now) {
		t.Fatal("a session request was recorded as a key use")
	}
}

type stubAgents []string

func (a stubAgents) AgentIDs(context.Context, string) ([]string, error) { return a, nil }

// TestStatusAgents: agents come sorted from the lister, and are an empty
// list (never nil) without one.
func TestStatusAgents(t *testing.T) {
	f := newAccountsFixture(t, time.Hour)
	ctx := context.Background()
	v := f.signUp(t, "leo@example.com")
	actor := domain.Actor{Kind: domain.ActorKey, ID: v.KeyID, UserID: v.UserID}
	st, err := f.accounts.Status(ctx, actor)
	if err != nil || st.Agents == nil || len(st.Agents) != 0 || st.Email != "leo@example.com" || st.UserID != v.UserID {
		t.Fatalf("status without lister: %+v %v", st, err)
	}
	withAgents, err := commands.NewAccounts(commands.AccountsConfig{Writer: f.writer, Reader: f.model, Mailer: f.mail, Agents: stubAgents{"zeta", "alpha", "mid"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err = withAgents.Status(ctx, actor)
	if err != nil || strings.Join(st.Agents, ",") != "alpha,mid,zeta" {
		t.Fatalf("status agents %v %v", st.Agents, err)
	}
	if _, err := withAgents.Status(ctx, domain.Actor{Kind: domain.ActorKey, ID: "x", UserID: "nobody"}); domain.ErrorKind(err) != domain.KindUnauthorized {
		t.Fatalf("status of an unknown user: %v", err)
	}
}

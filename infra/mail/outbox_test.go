package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/mail"
)

var outboxNameRE = regexp.MustCompile(`^\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{16}\.eml$`)

func newOutbox(t *testing.T) (*mail.OutboxSender, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data", "outbox") // parent missing on purpose
	o, err := mail.NewOutboxSender(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o, dir
}

// dirEntries lists every name in dir, hidden temp files included.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestOutboxWritesParseableEML(t *testing.T) {
	o, dir := newOutbox(t)
	before := time.Now().Add(-time.Second)
	path, err := o.Deliver(t.Context(), verificationMessage("alice@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !outboxNameRE.MatchString(filepath.Base(path)) {
		t.Errorf("path = %q, want %s/<timestamp>-<random>.eml", path, dir)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{filepath.Base(path)}) {
		t.Errorf("outbox holds %v, want only the message (no temp files)", got)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := parseMessage(t, data)
	checkVerificationMail(t, p, "alice@example.com")
	from, err := p.header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Address != mail.DefaultFrom {
		t.Errorf("From = %v (err %v)", from, err)
	}
	date, _ := p.header.Date()
	if date.Before(before) || date.After(time.Now().Add(time.Second)) {
		t.Errorf("Date = %v, want about now", date)
	}
	if bytes.Contains(data, []byte("\r")) {
		t.Error("file contains CR; want LF line endings")
	}
}

func TestOutboxPermissions(t *testing.T) {
	o, dir := newOutbox(t)
	path, err := o.Deliver(t.Context(), verificationMessage("alice@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.want)
		}
	}
}

// The token must be findable with plain line tools (grep -x TOKEN), whatever
// else the body holds.
func TestOutboxTokenLineGreppable(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"ascii", verificationText()},
		{"utf-8 around the token", "Grüße aus Köln – 確認\n" + verificationText() + "\nÀ bientôt"},
		{"crlf input", "Hello\r\n" + testToken + "\r\nhttps://engram.example/auth/verify?token=" + testToken + "\r\n"},
	}
	tokenLine := regexp.MustCompile(`(?m)^` + testToken + `$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := newOutbox(t)
			path, err := o.Deliver(t.Context(), mail.Message{To: "a@example.com", Subject: "Verify", Text: tt.text})
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !tokenLine.Match(data) {
				t.Errorf("no line equal to the token in\n%s", data)
			}
			if !bytes.Contains(data, []byte("?token="+testToken+"\n")) {
				t.Errorf("link line not verbatim in\n%s", data)
			}
		})
	}
}

func TestOutboxConcurrentSendsUniqueFiles(t *testing.T) {
	o, dir := newOutbox(t)
	const n = 64
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			paths[i], errs[i] = o.Deliver(t.Context(), verificationMessage(fmt.Sprintf("u%d@example.com", i)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			t.Errorf("path %s returned twice", p)
		}
		seen[p] = true
	}
	names := dirEntries(t, dir)
	if len(names) != n {
		t.Errorf("%d entries in outbox, want %d", len(names), n)
	}
	for _, name := range names {
		if !outboxNameRE.MatchString(name) {
			t.Errorf("unexpected entry %q", name)
		}
	}
}

func TestOutboxNamesSortByTime(t *testing.T) {
	o, dir := newOutbox(t)
	var paths []string
	for i := range 5 {
		p, err := o.Deliver(t.Context(), verificationMessage(fmt.Sprintf("u%d@example.com", i)))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Base(p))
	}
	if names := dirEntries(t, dir); !slices.Equal(names, paths) { // ReadDir sorts by name
		t.Errorf("sorted names %v, want write order %v", names, paths)
	}
}

// The server must log where each mail went (decisions §3), and the log must
// not carry the token.
func TestOutboxLogsPath(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	o, err := mail.NewOutboxSender(t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Send(t.Context(), verificationMessage("alice@example.com")); err != nil {
		t.Fatal(err)
	}
	var rec struct{ Msg, Path, To string }
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	names := dirEntries(t, o.Dir())
	if len(names) != 1 || rec.Path != filepath.Join(o.Dir(), names[0]) {
		t.Errorf("logged path %q, outbox holds %v", rec.Path, names)
	}
	if rec.To != "alice@example.com" {
		t.Errorf("logged to = %q", rec.To)
	}
	if bytes.Contains(buf.Bytes(), []byte(testToken)) {
		t.Errorf("log contains the token: %s", buf.String())
	}
}

func TestOutboxRefusesWithoutWriting(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	type refusal struct {
		name    string
		ctx     context.Context
		msg     mail.Message
		wantErr error // checked with errors.Is when set
	}
	tests := []refusal{{"cancelled context", cancelled, verificationMessage("a@example.com"), context.Canceled}}
	for _, bm := range badMessages() {
		tests = append(tests, refusal{bm.name, t.Context(), bm.msg, nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, dir := newOutbox(t)
			err := o.Send(tt.ctx, tt.msg)
			if err == nil {
				t.Fatal("Send succeeded, want error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.wantErr)
			}
			if names := dirEntries(t, dir); len(names) != 0 {
				t.Errorf("outbox holds %v after a refused send", names)
			}
		})
	}
}

func TestNewOutboxSenderErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{
		"empty":          "",
		"path is a file": file,
		"under a file":   filepath.Join(file, "outbox"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := mail.NewOutboxSender(dir, nil); err == nil {
				t.Errorf("NewOutboxSender(%q) succeeded, want error", dir)
			}
		})
	}
}

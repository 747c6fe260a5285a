package cli

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/infra/mail/mailtest"
)

func TestPprofListener(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060", "nonsense"} {
		if _, _, err := servePprof(addr, logger); err == nil {
			t.Errorf("--pprof-addr %q accepted", addr)
		}
	}
	addr, stop, err := servePprof("127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	tests := []struct {
		host   string // Host header; empty: the listener's address
		status int
	}{
		{"", http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		// DNS rebinding: a loopback connection naming another host.
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1.evil.example", http.StatusMisdirectedRequest},
	}
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/", "/debug/pprof/goroutine"} {
		for _, tt := range tests {
			req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || len(body) == 0 {
				t.Errorf("GET %s with Host %q: %d %q, want %d", path, tt.host, resp.StatusCode, body, tt.status)
			}
			if tt.status != http.StatusOK && strings.TrimSpace(string(body)) != "Misdirected Request" {
				t.Errorf("GET %s with Host %q: body %q is not generic", path, tt.host, body)
			}
		}
	}
}

func TestPprofOffByDefault(t *testing.T) {
	var cfg serveConfig
	if err := parseFlags(serveFlags(&cfg), nil); err != nil {
		t.Fatal(err)
	}
	if cfg.PprofAddr != "" {
		t.Fatalf("pprof on by default: %q", cfg.PprofAddr)
	}
}

// TestRedactedCmdline: /debug/pprof/cmdline masks the password of every
// URL on the command line, however it is written, and keeps the rest.
func TestRedactedCmdline(t *testing.T) {
	tests := []struct{ arg, want string }{
		{"--smtp-url=smtp://mailer:hunter2@mail.example:587", "--smtp-url=smtp://mailer:xxxxx@mail.example:587"},
		{"-smtp-url=smtps://mailer:hunter2@mail.example", "-smtp-url=smtps://mailer:xxxxx@mail.example"},
		{"smtp://mailer:hunter2@mail.example:587?tls=none", "smtp://mailer:xxxxx@mail.example:587?tls=none"},
		{"smtp://me%40example.com:hun%ter2@mail.example", "smtp://me%40example.com:xxxxx@mail.example"},
		{"smtp://mailer:hun/ter@2@mail.example", "smtp://mailer:xxxxx@mail.example"},
		{"--openai-base-url=https://user:hunter2@llm.example/v1", "--openai-base-url=https://user:xxxxx@llm.example/v1"},
		{"smtp://mailer@mail.example:587", "smtp://mailer@mail.example:587"},
		{"--addr=127.0.0.1:8080", "--addr=127.0.0.1:8080"},
		{"--data-dir", "--data-dir"},
		{"/srv/engram=data", "/srv/engram=data"},
	}
	args := []string{"/usr/local/bin/engram", "serve"}
	want := []string{"/usr/local/bin/engram", "serve"}
	for _, tt := range tests {
		args = append(args, tt.arg)
		want = append(want, tt.want)
	}
	rec := &recorder{header: http.Header{}}
	redactedCmdline(args).ServeHTTP(rec, nil)
	got := strings.Split(rec.body.String(), "\x00")
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("argument %d: got %q, want %q", i, got[min(i, len(got)-1)], want[i])
		}
	}
	if strings.Contains(rec.body.String(), "hunter2") || strings.Contains(rec.body.String(), "ter2") {
		t.Errorf("a password is shown: %q", rec.body.String())
	}
}

type recorder struct {
	header http.Header
	body   strings.Builder
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}

var pprofServing = regexp.MustCompile(`msg="pprof serving" addr=(\S+)`)

// TestServeKeepsSMTPPasswordOffPprof runs the binary twice against a real
// SMTP server that requires a password: given with --smtp-url, the
// password is masked in /debug/pprof/cmdline; given with --smtp-url-file,
// it is not on the command line at all, and the verification mail still
// goes out through the authenticated SMTP server.
func TestServeKeepsSMTPPasswordOffPprof(t *testing.T) {
	t.Parallel()
	smtp := mailtest.Start(t, mailtest.WithAuth())
	// The password as it appears in the URL, percent-encoded.
	password := strings.TrimPrefix(url.UserPassword(mailtest.Username, mailtest.Password).String(), mailtest.Username+":")
	if !strings.Contains(smtp.URL(), password) {
		t.Fatalf("URL %q lacks the password %q", smtp.URL(), password)
	}
	cmdline := func(t *testing.T, log string) string {
		t.Helper()
		m := pprofServing.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no pprof address in the log:\n%s", log)
		}
		resp, err := http.Get("http://" + m[1] + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("cmdline: %d %s", resp.StatusCode, body)
		}
		return string(body)
	}

	t.Run("flag", func(t *testing.T) {
		p := startServer(t, t.TempDir(), nil, "--pprof-addr", "127.0.0.1:0", "--smtp-url", smtp.URL())
		got := cmdline(t, p.Log())
		if strings.Contains(got, password) || !strings.Contains(got, "--smtp-url") || !strings.Contains(got, ":xxxxx@"+smtp.Addr()) {
			t.Fatalf("cmdline %q: want the SMTP URL with its password masked", got)
		}
	})
	t.Run("file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "smtp-url")
		if err := os.WriteFile(file, []byte(smtp.URL()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startServer(t, t.TempDir(), nil, "--pprof-addr", "127.0.0.1:0", "--smtp-url-file", file)
		if got := cmdline(t, p.Log()); strings.Contains(got, password) || strings.Contains(got, "smtp://") {
			t.Fatalf("cmdline %q shows the SMTP URL", got)
		}
		resp, err := http.Post(p.APIURL()+"/auth/register", "application/json", strings.NewReader(`{"email":"filed@example.com"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("register: %d\n%s", resp.StatusCode, p.Log())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := smtp.WaitFor(ctx, "filed@example.com"); err != nil {
			t.Fatalf("no mail through the SMTP server of the file: %v", err)
		}
	})
}

func TestSMTPURLFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("  smtp://u:p@mail.example:587\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	tests := []struct {
		name, url, file, want string
		wantErr               bool
	}{
		{"no file", "smtp://a@b", "", "smtp://a@b", false},
		{"file, trimmed", "", good, "smtp://u:p@mail.example:587", false},
		{"both", "smtp://a@b", good, "", true},
		{"missing file", "", filepath.Join(dir, "nope"), "", true},
		{"empty file", "", empty, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := serveConfig{SMTPURL: tt.url, SMTPURLFile: tt.file}
			err := cfg.readSecretFiles()
			if (err != nil) != tt.wantErr || (!tt.wantErr && cfg.SMTPURL != tt.want) {
				t.Fatalf("SMTPURL %q, error %v; want %q, error %v", cfg.SMTPURL, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestWarnIfExposed: serving the API on anything but loopback logs a
// warning that says so; loopback is quiet.
func TestWarnIfExposed(t *testing.T) {
	tests := []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:8080", false},
		{"[::1]:8080", false},
		{"0.0.0.0:8080", true},
		{"[::]:8080", true},
		{"192.0.2.1:8080", true},
	}
	for _, tt := range tests {
		var log strings.Builder
		warnIfExposed(slog.New(slog.NewTextHandler(&log, nil)), tt.addr)
		warned := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "API is exposed") && strings.Contains(log.String(), tt.addr)
		if warned != tt.warn || (!tt.warn && log.Len() > 0) {
			t.Errorf("addr %s: log %q, want a warning: %v", tt.addr, log.String(), tt.warn)
		}
	}
}

// Package mailtest runs an in-process SMTP server on 127.0.0.1 that records
// what it receives, so tests exercise real SMTP (mailpit is not available,
// go-stack.md §A12). It depends on nothing in package mail, so mail's own
// tests can use it.
package mailtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Fixed credentials for servers started WithAuth; URL() includes them.
const (
	Username = "engram-test"
	Password = "p@ss w0rd:/?" // URL-special characters on purpose
)

// Received is one accepted message: the envelope and the raw DATA (headers
// and body, dot-unstuffed, CRLF line endings as sent). TLS says whether the
// session was encrypted when DATA arrived, so a test can tell that STARTTLS
// really happened.
type Received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
}

// Parse parses Data as an RFC 5322 message.
func (r Received) Parse() (*mail.Message, error) {
	return mail.ReadMessage(bytes.NewReader(r.Data))
}

// Option configures Start.
type Option func(*options)

type options struct {
	auth    bool
	tlsMode string // "", "starttls", "implicit"
}

// WithAuth requires AUTH PLAIN with Username and Password before MAIL FROM.
// It is offered without TLS because the server is on loopback.
func WithAuth() Option { return func(o *options) { o.auth = true } }

// WithSTARTTLS offers STARTTLS with a fresh self-signed certificate for
// 127.0.0.1; URL() then asks for tls=mandatory and ClientTLSConfig trusts it.
func WithSTARTTLS() Option { return func(o *options) { o.tlsMode = "starttls" } }

// WithImplicitTLS serves TLS from the first byte; URL() is then smtps://.
func WithImplicitTLS() Option { return func(o *options) { o.tlsMode = "implicit" } }

// Server is a running test server. Its methods are safe for concurrent use.
type Server struct {
	opts      options
	smtp      *smtp.Server
	ln        net.Listener
	clientTLS *tls.Config
	served    chan struct{}

	mu      sync.Mutex
	msgs    []Received
	arrived chan struct{} // closed and replaced on every arrival
	closed  bool
}

// Start listens on 127.0.0.1:0 and serves until the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{arrived: make(chan struct{}), served: make(chan struct{})}
	for _, opt := range opts {
		opt(&s.opts)
	}

	be := smtp.NewServer(backend{s})
	be.Domain = "localhost"
	be.AllowInsecureAuth = true // loopback only; lets WithAuth work without TLS
	be.ReadTimeout = 10 * time.Second
	be.WriteTimeout = 10 * time.Second
	be.MaxMessageBytes = 1 << 20
	be.MaxRecipients = 10
	be.ErrorLog = testLogger{t: t, s: s}
	s.smtp = be

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	if s.opts.tlsMode != "" {
		serverTLS, clientTLS, err := selfSignedTLS()
		if err != nil {
			_ = ln.Close()
			t.Fatalf("mailtest: %v", err)
		}
		s.clientTLS = clientTLS
		if s.opts.tlsMode == "implicit" {
			ln = tls.NewListener(ln, serverTLS)
		} else {
			be.TLSConfig = serverTLS
		}
	}
	s.ln = ln

	go func() {
		defer close(s.served)
		_ = be.Serve(ln)
	}()
	t.Cleanup(s.Close)
	return s
}

// Close stops the server; later connections are refused. Tests use it to
// simulate a relay that went away. Calling it again does nothing.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.smtp.Close()
	// Close the listener ourselves too: if Serve had not registered it yet,
	// smtp.Server.Close would miss it and Serve would block forever.
	_ = s.ln.Close()
	<-s.served
}

// Addr is the listening address, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is an SMTP URL for this server: smtp://…?tls=none by default,
// tls=mandatory WithSTARTTLS, smtps:// WithImplicitTLS, with Username and
// Password WithAuth.
func (s *Server) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr()}
	q := url.Values{}
	switch s.opts.tlsMode {
	case "implicit":
		u.Scheme = "smtps"
	case "starttls":
		q.Set("tls", "mandatory")
	default:
		q.Set("tls", "none")
	}
	if s.opts.auth {
		u.User = url.UserPassword(Username, Password)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// ClientTLSConfig trusts the server's self-signed certificate (nil without
// TLS). Pass it to the sender under test.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.clientTLS == nil {
		return nil
	}
	return s.clientTLS.Clone()
}

// Messages returns a copy of everything received so far, in arrival order.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = m.clone()
	}
	return out
}

// WaitFor returns the first message addressed to `to`, waiting for it if it
// has not arrived yet, until ctx ends.
func (s *Server) WaitFor(ctx context.Context, to string) (Received, error) {
	return s.WaitForNth(ctx, to, 1)
}

// WaitForNth returns the n-th (1-based) message addressed to `to`, waiting
// until ctx ends. It serves tests where one address gets several mails, e.g.
// a second registration that must send a fresh verification mail.
func (s *Server) WaitForNth(ctx context.Context, to string, n int) (Received, error) {
	if n < 1 {
		return Received{}, fmt.Errorf("mailtest: n = %d, want >= 1", n)
	}
	for {
		s.mu.Lock()
		seen := 0
		for _, m := range s.msgs {
			if m.addressedTo(to) {
				if seen++; seen == n {
					s.mu.Unlock()
					return m.clone(), nil
				}
			}
		}
		arrived := s.arrived
		s.mu.Unlock()

		select {
		case <-arrived:
		case <-ctx.Done():
			return Received{}, fmt.Errorf("mailtest: waiting for message %d to %s (%d arrived): %w",
				n, to, seen, ctx.Err())
		}
	}
}

func (s *Server) record(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, r)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

// addressedTo compares case-insensitively: tests write addresses by hand and
// no real mailbox differs only in case.
func (r Received) addressedTo(addr string) bool {
	for _, to := range r.To {
		if strings.EqualFold(to, addr) {
			return true
		}
	}
	return false
}

func (r Received) clone() Received {
	return Received{
		From: r.From,
		To:   append([]string(nil), r.To...),
		Data: append([]byte(nil), r.Data...),
		TLS:  r.TLS,
	}
}

// testLogger routes go-smtp's errors to the test log, but only while the
// server runs: connection goroutines can outlive the test, and t.Logf after
// the test has finished panics (or races with its end). The log is written
// under the server's lock, so Close, which a test's cleanup calls, waits
// for a log line in flight instead of letting it land after the test.
type testLogger struct {
	t testing.TB
	s *Server
}

func (l testLogger) Printf(format string, v ...any) {
	l.whileServing(func() { l.t.Logf("mailtest: "+format, v...) })
}

func (l testLogger) Println(v ...any) {
	l.whileServing(func() { l.t.Log(append([]any{"mailtest:"}, v...)...) })
}

func (l testLogger) whileServing(log func()) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.s.closed {
		log()
	}
}

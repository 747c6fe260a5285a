package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// SMTPSender delivers messages to an SMTP relay, one connection per message.
// It is safe for concurrent use. Delivery volume (verification mails) is too
// low to justify pooling connections, and a fresh connection never trips over
// a relay's idle timeout.
type SMTPSender struct {
	cfg smtpConfig
}

// SMTPOption adjusts an SMTPSender beyond what its URL says.
type SMTPOption func(*smtpConfig)

// WithTimeout overrides the per-Send time limit (the URL's ?timeout= or
// DefaultSMTPTimeout). Non-positive values are ignored.
func WithTimeout(d time.Duration) SMTPOption {
	return func(c *smtpConfig) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithTLSConfig sets the TLS client configuration, e.g. to trust a private CA.
// The config is cloned; an empty ServerName is filled in with the URL's host.
func WithTLSConfig(tc *tls.Config) SMTPOption {
	return func(c *smtpConfig) {
		if tc != nil {
			c.tlsConfig = tc.Clone()
		}
	}
}

// NewSMTPSender validates rawURL and returns a sender for it; no connection is
// made until Send. The URL form is
//
//	smtp[s]://[user[:password]@]host[:port][?from=ADDR&tls=MODE&timeout=DUR]
//
// smtp:// defaults to port 587 and tls=opportunistic (STARTTLS if offered);
// tls=none and tls=mandatory are the alternatives. smtps:// is implicit TLS on
// port 465. from defaults to DefaultFrom, timeout to DefaultSMTPTimeout.
// User name and password are percent-decoded. Errors wrap ErrInvalidSMTPURL.
func NewSMTPSender(rawURL string, opts ...SMTPOption) (*SMTPSender, error) {
	cfg, err := parseSMTPURL(rawURL)
	if err != nil {
		return nil, err
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.tlsConfig == nil {
		cfg.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.tlsConfig.ServerName == "" {
		cfg.tlsConfig.ServerName = cfg.host
	}
	return &SMTPSender{cfg: cfg}, nil
}

// String returns the URL with its password masked, fit for logs.
func (s *SMTPSender) String() string { return s.cfg.redacted }

// Send delivers m. It returns once the relay has accepted the message, or
// with an error wrapping the cause. If ctx was cancelled or the send timeout
// expired, the error also matches context.Canceled or
// context.DeadlineExceeded under errors.Is.
func (s *SMTPSender) Send(ctx context.Context, m Message) error {
	if err := m.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mail: smtp send to %s: %w", s.addr(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()

	client, err := gomail.NewClient(s.cfg.host, s.clientOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("mail: smtp client for %s: %w", s.addr(), err)
	}
	conn, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return s.fail(ctx, "connect", err)
	}
	// The relay has accepted (or refused) the message before QUIT, so a failing
	// QUIT changes nothing the caller could act on.
	defer func() { _ = client.CloseWithSMTPClient(conn) }()

	has8bit, _ := conn.Extension("8BITMIME")
	msg, err := compose(s.cfg.from, m, time.Now(), has8bit)
	if err != nil {
		return err
	}
	if err := client.SendWithSMTPClient(conn, msg); err != nil {
		return s.fail(ctx, "send", err)
	}
	return nil
}

func (s *SMTPSender) clientOptions(ctx context.Context) []gomail.Option {
	policy := gomail.TLSOpportunistic
	switch s.cfg.tls {
	case tlsNone, tlsImplicit: // implicit TLS is done by dial, not by STARTTLS
		policy = gomail.NoTLS
	case tlsMandatory:
		policy = gomail.TLSMandatory
	}
	opts := []gomail.Option{
		gomail.WithPort(s.cfg.port),
		gomail.WithTimeout(s.cfg.timeout),
		gomail.WithTLSPolicy(policy),
		gomail.WithTLSConfig(s.cfg.tlsConfig),
		gomail.WithDialContextFunc(s.dialer(ctx)),
	}
	if s.cfg.auth {
		// PLAIN and LOGIN between them cover the common relays (LOGIN for
		// Office 365). go-mail refuses both without TLS unless the host is
		// localhost, so a password never crosses the network in clear.
		opts = append(opts,
			gomail.WithUsername(s.cfg.user),
			gomail.WithPassword(s.cfg.pass),
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
		)
	}
	return opts
}

// dialer returns the connection function go-mail uses. go-mail honours a
// context only while dialing; afterwards it relies on per-command deadlines.
// Closing the socket when sendCtx ends makes cancellation and the overall
// timeout interrupt a stalled greeting, AUTH or DATA as well.
//
// The address go-mail passes is ignored: it formats host:port without
// brackets, which breaks IPv6 literals.
func (s *SMTPSender) dialer(sendCtx context.Context) gomail.DialContextFunc {
	return func(dialCtx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		raw, err := d.DialContext(dialCtx, network, s.addr())
		if err != nil {
			return nil, err
		}
		// Fires at the latest when Send's deferred cancel runs; closing an
		// already closed socket is harmless.
		context.AfterFunc(sendCtx, func() { _ = raw.Close() })
		if s.cfg.tls != tlsImplicit {
			return raw, nil
		}
		// Return the *tls.Conn itself: go-mail only treats the session as
		// encrypted (and so allows PLAIN/LOGIN) if the conn has that type.
		tc := tls.Client(raw, s.cfg.tlsConfig)
		if err := tc.HandshakeContext(dialCtx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		return tc, nil
	}
}

func (s *SMTPSender) addr() string {
	return net.JoinHostPort(s.cfg.host, strconv.Itoa(s.cfg.port))
}

// fail wraps err; if the context ended, its error is wrapped too, since the
// socket error go-mail reports ("use of closed network connection", "i/o
// timeout") hides why.
func (s *SMTPSender) fail(ctx context.Context, stage string, err error) error {
	ctxErr := ctx.Err()
	if ctxErr == nil {
		// go-mail's per-command deadline (same length as ours, set later)
		// can fire a hair before the context's timer does; it is still the
		// send timeout that expired.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			ctxErr = context.DeadlineExceeded
		}
	}
	if ctxErr != nil {
		return fmt.Errorf("mail: smtp %s %s: %w: %w", stage, s.addr(), ctxErr, err)
	}
	return fmt.Errorf("mail: smtp %s %s: %w", stage, s.addr(), err)
}

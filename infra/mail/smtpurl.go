package mail

import (
	"crypto/tls"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// tlsMode is how the SMTP connection is protected.
type tlsMode int

const (
	// tlsOpportunistic upgrades with STARTTLS when the server offers it. It is
	// the smtp:// default so that a plain relay (or a loopback test server)
	// works; credentials are still never sent in clear to a remote host.
	tlsOpportunistic tlsMode = iota
	tlsNone
	tlsMandatory // STARTTLS or fail
	tlsImplicit  // smtps://: TLS from the first byte
)

func (m tlsMode) String() string {
	switch m {
	case tlsNone:
		return "none"
	case tlsMandatory:
		return "mandatory"
	case tlsImplicit:
		return "implicit"
	default:
		return "opportunistic"
	}
}

const (
	defaultSubmissionPort = 587 // smtp:// (RFC 6409 message submission)
	defaultImplicitTLS    = 465 // smtps:// (RFC 8314)

	// DefaultSMTPTimeout bounds one Send (connect, TLS, AUTH and DATA) unless
	// the URL's ?timeout= or WithTimeout says otherwise, so a dead relay
	// cannot hold a request forever.
	DefaultSMTPTimeout = 15 * time.Second
)

// smtpConfig is the validated content of an SMTP URL. It is immutable after
// construction, which is what lets one SMTPSender serve concurrent sends.
type smtpConfig struct {
	host      string
	port      int
	user      string
	pass      string
	auth      bool
	from      string
	tls       tlsMode
	timeout   time.Duration
	tlsConfig *tls.Config
	redacted  string // for logs: the URL with the password replaced
}

// ErrInvalidSMTPURL wraps every URL error (test with errors.Is). Messages never
// quote the raw URL, because it may carry a password and errors end up in logs.
var ErrInvalidSMTPURL = errors.New("mail: invalid SMTP URL")

func badURL(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSMTPURL}, args...)...)
}

// parseSMTPURL parses smtp://[user[:pass]@]host[:port][?from=&tls=&timeout=]
// or smtps://… . Unknown query keys are errors, so a typo such as ?form= is
// caught at startup rather than silently ignored.
func parseSMTPURL(raw string) (smtpConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL, password included
		}
		return smtpConfig{}, badURL("%v", err)
	}
	cfg := smtpConfig{from: DefaultFrom, timeout: DefaultSMTPTimeout}
	switch u.Scheme {
	case "smtp":
		cfg.port, cfg.tls = defaultSubmissionPort, tlsOpportunistic
	case "smtps":
		cfg.port, cfg.tls = defaultImplicitTLS, tlsImplicit
	case "":
		return smtpConfig{}, badURL("missing scheme (want smtp:// or smtps://)")
	default:
		return smtpConfig{}, badURL("unsupported scheme %q (want smtp or smtps)", u.Scheme)
	}
	if u.Opaque != "" {
		return smtpConfig{}, badURL("want %s://host[:port]", u.Scheme)
	}
	if cfg.host = u.Hostname(); cfg.host == "" {
		return smtpConfig{}, badURL("missing host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return smtpConfig{}, badURL("port %q out of range 1-65535", p)
		}
		cfg.port = n
	}
	if u.Path != "" && u.Path != "/" {
		return smtpConfig{}, badURL("unexpected path %q", u.Path)
	}
	if u.Fragment != "" {
		return smtpConfig{}, badURL("unexpected fragment")
	}
	if u.User != nil {
		cfg.user = u.User.Username()
		cfg.pass, _ = u.User.Password()
		if cfg.user == "" {
			return smtpConfig{}, badURL("empty user name")
		}
		cfg.auth = true
	}
	if err := cfg.applyQuery(u.RawQuery); err != nil {
		return smtpConfig{}, err
	}
	if cfg.auth && cfg.tls == tlsNone && !isLocalhost(cfg.host) {
		return smtpConfig{}, badURL("tls=none with credentials would send the password in clear to %s", cfg.host)
	}
	cfg.redacted = u.Redacted()
	return cfg, nil
}

func (cfg *smtpConfig) applyQuery(rawQuery string) error {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return badURL("query: %v", err)
	}
	for key, vals := range q {
		if len(vals) != 1 {
			return badURL("query parameter %q given %d times", key, len(vals))
		}
		v := vals[0]
		switch key {
		case "from":
			if _, err := netmail.ParseAddress(v); err != nil {
				return badURL("from=%q is not an e-mail address: %v", v, err)
			}
			cfg.from = v
		case "tls":
			if err := cfg.setTLS(v); err != nil {
				return err
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return badURL("timeout=%q is not a positive duration such as 30s", v)
			}
			cfg.timeout = d
		default:
			return badURL("unknown query parameter %q (known: from, tls, timeout)", key)
		}
	}
	return nil
}

func (cfg *smtpConfig) setTLS(v string) error {
	if cfg.tls == tlsImplicit {
		// smtps is TLS by definition; accept only the value that agrees.
		if strings.EqualFold(v, "mandatory") {
			return nil
		}
		return badURL("tls=%q conflicts with smtps:// (implicit TLS); use smtp:// for STARTTLS or no TLS", v)
	}
	switch strings.ToLower(v) {
	case "none":
		cfg.tls = tlsNone
	case "opportunistic":
		cfg.tls = tlsOpportunistic
	case "mandatory":
		cfg.tls = tlsMandatory
	default:
		return badURL("tls=%q: want none, opportunistic or mandatory", v)
	}
	return nil
}

// isLocalhost mirrors go-mail's rule for allowing PLAIN/LOGIN without TLS, so
// a URL accepted here is not refused later at AUTH time.
func isLocalhost(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

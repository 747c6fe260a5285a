// Package webhookhttp delivers webhooks over HTTP: a POST per attempt,
// through a dialer that refuses loopback, private and link-local
// addresses at connect time (so a name that resolved to a public address
// when the webhook was registered, and to an internal one now, is still
// refused: DNS rebinding), without following redirects or using a proxy,
// within a timeout per attempt.
package webhookhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/webhook"
)

// DefaultTimeout bounds one delivery attempt, connect to last byte.
const DefaultTimeout = 10 * time.Second

// Options tune the client.
type Options struct {
	// Timeout bounds one attempt (0: DefaultTimeout).
	Timeout time.Duration
	// AllowPrivate lets deliveries reach loopback, private and link-local
	// addresses (--webhook-allow-private).
	AllowPrivate bool
	// UserAgent is sent with every delivery.
	UserAgent string
}

// Client posts deliveries and checks targets.
type Client struct {
	http     *http.Client
	resolver *net.Resolver
	opts     Options
}

// ErrForbiddenAddress marks a dial refused because the address is
// loopback, private or link-local.
var ErrForbiddenAddress = errors.New("webhook target address is loopback, private or link-local")

// New returns a client.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: opts.Timeout}
	if !opts.AllowPrivate {
		dialer.Control = refusePrivate
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	return &Client{
		http: &http.Client{
			Transport: transport,
			Timeout:   opts.Timeout,
			// A redirect is the receiver's answer, not a new target: it
			// could point anywhere, the checks notwithstanding.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		resolver: net.DefaultResolver,
		opts:     opts,
	}
}

// refusePrivate is the dialer's Control: it sees the address actually
// dialled, after resolution.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	if webhook.ForbiddenAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// CheckTarget refuses a URL whose host resolves to a loopback, private or
// link-local address, or does not resolve (commands.WebhookTargets).
func (c *Client) CheckTarget(ctx context.Context, u *url.URL) error {
	if c.opts.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		return checkAddr(addr)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return domain.Invalid("url", "url's host %s does not resolve", host).WithCode("invalid_webhook_url")
	}
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return err
		}
	}
	return nil
}

func checkAddr(addr netip.Addr) error {
	if webhook.ForbiddenAddr(addr) {
		return domain.Invalid("url", "url's host resolves to %s, a loopback, private or link-local address", addr.Unmap()).WithCode("invalid_webhook_url")
	}
	return nil
}

// Post sends one attempt: body, signed at now with secret, with the
// delivery's headers. A transport error (refused address, timeout, TLS)
// is err; any HTTP answer is its status code, the caller judging it.
func (c *Client) Post(ctx context.Context, p webhook.Pending, now time.Time) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(p.Body))
	if err != nil {
		return 0, err
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.TimestampHeader, fmt.Sprint(ts))
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(p.Secret, ts, p.Body))
	req.Header.Set(webhook.DeliveryHeader, p.ID)
	req.Header.Set(webhook.EventHeader, p.Event)
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Drain a little so the connection may be reused; the answer's body
	// is not ours to keep.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/http"
	netmail "net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// OutboxDir is the default outbox of a data directory (decisions §8:
// ENGRAM_MAIL_OUTBOX defaults to <data dir>/outbox).
func OutboxDir(dataDir string) string { return filepath.Join(dataDir, "outbox") }

// RegisterUser creates a verified user through the public API and returns
// its first API key: POST /auth/register, read the token from the newest
// outbox mail to email, POST /auth/verify. baseURL may end in /v1 or not.
func RegisterUser(ctx context.Context, baseURL, outboxDir, email string) (string, error) {
	token, err := RequestVerification(ctx, baseURL, outboxDir, email)
	if err != nil {
		return "", err
	}
	var verified struct {
		APIKey string `json:"api_key"`
	}
	if err := postJSON(ctx, apiURL(baseURL)+"/auth/verify", map[string]string{"token": token}, &verified); err != nil {
		return "", fmt.Errorf("verify %s: %w", email, err)
	}
	if verified.APIKey == "" {
		return "", errors.New("testserver: verify returned no api_key")
	}
	return verified.APIKey, nil
}

// RequestVerification registers email through the public API (POST
// /auth/register) and returns the verification token of the mail it
// sends, unspent: a caller that needs a token a request can still verify
// with (the API fuzzer) sends it itself.
func RequestVerification(ctx context.Context, baseURL, outboxDir, email string) (string, error) {
	since := time.Now().Add(-time.Second) // outbox names and mtimes have at least 1s slack
	if err := postJSON(ctx, apiURL(baseURL)+"/auth/register", map[string]string{"email": email}, nil); err != nil {
		return "", fmt.Errorf("register %s: %w", email, err)
	}
	return waitForToken(ctx, outboxDir, email, since)
}

// apiURL is baseURL ending in /v1, whether it did or not.
func apiURL(baseURL string) string {
	return strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1") + "/v1"
}

// postJSON posts body and decodes the success envelope's data into out.
// It is deliberately independent of package client, which tests with it.
func postJSON(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || !env.Success || resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

// waitForToken polls the outbox until a mail to email written after since
// carries a token; the mail may land a moment after register returns.
func waitForToken(ctx context.Context, dir, email string, since time.Time) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		token, err := newestToken(dir, email, since)
		if err == nil && token != "" {
			return token, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("no mail")
			}
			return "", fmt.Errorf("testserver: no verification mail to %s in %s: %w (%v)", email, dir, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// newestToken returns the token of the newest .eml in dir addressed to
// email, or "" when there is none yet.
func newestToken(dir, email string, since time.Time) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	type mailFile struct {
		path string
		mod  time.Time
	}
	var files []mailFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".eml") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().Before(since) {
			continue
		}
		files = append(files, mailFile{filepath.Join(dir, e.Name()), info.ModTime()})
	}
	// Names start with a nanosecond timestamp, so name order is write order.
	sort.Slice(files, func(i, j int) bool { return files[i].path > files[j].path })
	for _, f := range files {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			return "", err
		}
		to, body, err := parseMail(raw)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.path, err)
		}
		if !strings.EqualFold(to, email) {
			continue
		}
		return TokenFromMailBody(body)
	}
	return "", nil
}

// parseMail returns the first To address and the decoded text body.
func parseMail(raw []byte) (string, string, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", "", err
	}
	addrs, err := msg.Header.AddressList("To")
	if err != nil || len(addrs) == 0 {
		return "", "", fmt.Errorf("no To address: %v", err)
	}
	var body io.Reader = msg.Body
	if strings.EqualFold(strings.TrimSpace(msg.Header.Get("Content-Transfer-Encoding")), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	if mt, _, _ := mime.ParseMediaType(msg.Header.Get("Content-Type")); mt != "" && mt != "text/plain" {
		return "", "", fmt.Errorf("unexpected content type %q", mt)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return "", "", err
	}
	return addrs[0].Address, strings.ReplaceAll(string(b), "\r\n", "\n"), nil
}

var (
	linkToken  = regexp.MustCompile(`\?token=([A-Za-z0-9_-]+)\s*$`)
	aloneToken = regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`)
)

// TokenFromMailBody returns the verification token of a mail body. The
// mail carries it twice (decisions §8): at the end of a link and alone on a
// line; both must be present and agree.
func TokenFromMailBody(body string) (string, error) {
	var link, alone string
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if m := linkToken.FindStringSubmatch(line); m != nil && link == "" {
			link = m[1]
		} else if aloneToken.MatchString(line) && alone == "" {
			alone = line
		}
	}
	switch {
	case link == "" || alone == "":
		return "", fmt.Errorf("testserver: mail lacks the token in a link and alone on a line:\n%s", body)
	case link != alone:
		return "", fmt.Errorf("testserver: link token %q and line token %q differ", link, alone)
	}
	return link, nil
}

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
)

// credentials is ~/.engram/credentials.json (mode 0600): the API key of one
// cloud, bound to the base URL it was issued by, so a key is never sent to
// another server after cloud.base_url changes.
type credentials struct {
	BaseURL string    `json:"base_url"`
	UserID  string    `json:"user_id"`
	Email   string    `json:"email,omitempty"`
	APIKey  string    `json:"api_key"`
	SavedAt time.Time `json:"saved_at"`
}

// credentialsMode is the only mode credentials.json may have.
const credentialsMode os.FileMode = 0o600

func (c *cli) credentialsPath() string { return filepath.Join(c.home, "credentials.json") }

// readCredentials returns the stored credentials, or nil when there are
// none. A file others can read is refused rather than used.
func (c *cli) readCredentials() (*credentials, error) {
	path := c.credentialsPath()
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&^credentialsMode != 0 {
		return nil, fmt.Errorf("%s has mode %04o: other users may read the API key; run chmod 600 %s (or engram auth logout)", path, info.Mode().Perm(), path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cr credentials
	if err := json.Unmarshal(raw, &cr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cr.APIKey == "" || cr.BaseURL == "" {
		return nil, fmt.Errorf("%s holds no API key; run engram auth login", path)
	}
	return &cr, nil
}

// saveCredentials writes credentials.json with mode 0600, refusing a base
// URL that is neither https nor loopback.
func (c *cli) saveCredentials(cr credentials) error {
	if !client.SecureBaseURL(cr.BaseURL) {
		return insecureURLError(cr.BaseURL)
	}
	cr.SavedAt = time.Now().UTC()
	raw, err := json.MarshalIndent(cr, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(c.credentialsPath(), append(raw, '\n'), credentialsMode)
}

func insecureURLError(baseURL string) error {
	return domain.Invalid("cloud.base_url", "refusing to send credentials to %s: use https, or http only to a loopback host (127.0.0.1, ::1, localhost)", baseURL)
}

// keyPrefix is the public prefix of an API key (its first 12 characters,
// as the server lists it); secrets are shown only masked.
func keyPrefix(key string) string {
	if len(key) <= 12 {
		return "…"
	}
	return key[:12] + "…"
}

// cloud is the configured cloud: its client (authenticated when
// credentials for its base URL exist) and the search timeout.
type cloud struct {
	settings cliSettings
	creds    *credentials // nil: not logged in to this base URL
}

// loadCloud reads the settings and credentials. Credentials saved for
// another base URL do not apply.
func (c *cli) loadCloud() (*cloud, error) {
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	cr, err := c.readCredentials()
	if err != nil {
		return nil, err
	}
	if cr != nil && cr.BaseURL != s.baseURL {
		cr = nil
	}
	return &cloud{settings: s, creds: cr}, nil
}

// configured reports whether searches go to the cloud: there are
// credentials for the configured base URL.
func (cl *cloud) configured() bool { return cl.creds != nil }

// client returns a client of the cloud with the given timeout per request
// (0: the default); it carries the API key when there are credentials.
func (cl *cloud) client(timeout time.Duration) *client.Client {
	if timeout <= 0 {
		timeout = time.Minute
	}
	key := ""
	if cl.creds != nil {
		key = cl.creds.APIKey
	}
	return client.New(cl.settings.baseURL, key, client.WithHTTPClient(&http.Client{Timeout: timeout}), client.WithUserAgent("engram-cli"))
}

// requireLogin returns an error unless there are credentials.
func (cl *cloud) requireLogin() error {
	if cl.creds == nil {
		return domain.Errorf(domain.KindUnauthorized, "not logged in to %s: run engram auth login (or engram auth register)", cl.settings.baseURL)
	}
	return nil
}

package client_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

func TestAccountsFlow(t *testing.T) {
	ctx := t.Context()
	srv := testserver.Start(t, testserver.Options{})
	anon := client.New(srv.APIURL(), "")

	reg, err := anon.Register(ctx, "flow@example.com")
	noErr(t, err)
	if reg.UserID == "" || reg.Message == "" {
		t.Fatalf("register: %+v", reg)
	}
	token := latestToken(t, srv.DataDir)
	ver, err := anon.Verify(ctx, token)
	noErr(t, err)
	if !ver.Verified || ver.UserID != reg.UserID || !strings.HasPrefix(ver.APIKey, "eng_") {
		t.Fatalf("verify: %+v", ver)
	}
	// The token is single use.
	_, err = anon.Verify(ctx, token)
	if !client.IsStatus(err, http.StatusGone) {
		t.Fatalf("second verify: %v, want 410", err)
	}

	c := anon.WithAPIKey(ver.APIKey)
	st, err := c.Status(ctx)
	noErr(t, err)
	if !st.Authenticated || st.UserID != reg.UserID || st.Email != "flow@example.com" || st.CreatedAt.IsZero() {
		t.Fatalf("status: %+v", st)
	}

	sess, err := anon.Login(ctx, ver.APIKey)
	noErr(t, err)
	if sess.UserID != reg.UserID || sess.Token == "" || time.Until(sess.ExpiresAt) < time.Hour {
		t.Fatalf("login: %+v", sess)
	}
	st2, err := anon.WithAPIKey(sess.Token).Status(ctx)
	noErr(t, err)
	if st2.UserID != reg.UserID {
		t.Fatalf("status with the session token: %+v", st2)
	}

	created, err := c.CreateKey(ctx, "ci")
	noErr(t, err)
	if created.Name != "ci" || !strings.HasPrefix(created.Key, created.Prefix) || len(created.Prefix) != 12 {
		t.Fatalf("create key: %+v", created)
	}
	keys, err := c.ListKeys(ctx)
	noErr(t, err)
	if len(keys) != 2 {
		t.Fatalf("keys: %+v", keys)
	}
	for _, k := range keys {
		if !k.IsActive || k.Prefix == "" || k.CreatedAt.IsZero() {
			t.Fatalf("listing: %+v", k)
		}
	}

	cycled, err := c.CycleKey(ctx, created.ID)
	noErr(t, err)
	if cycled.OldKeyID != created.ID || !cycled.OldKeyRevoked || cycled.NewKey == "" || !strings.HasPrefix(cycled.NewKey, cycled.NewKeyPrefix) {
		t.Fatalf("cycle: %+v", cycled)
	}
	if _, err := c.WithAPIKey(created.Key).Status(ctx); !client.IsCode(err, "unauthorized") {
		t.Fatalf("cycled-out key: %v, want unauthorized", err)
	}
	revoked, err := c.RevokeKey(ctx, cycled.NewKeyID)
	noErr(t, err)
	if !revoked.Revoked || revoked.ID != cycled.NewKeyID || revoked.RevokedAt.IsZero() {
		t.Fatalf("revoke: %+v", revoked)
	}
	_, err = c.RevokeKey(ctx, cycled.NewKeyID)
	if !client.IsStatus(err, http.StatusConflict) {
		t.Fatalf("revoke twice: %v, want 409", err)
	}
}

func TestErrorEnvelopeFromServer(t *testing.T) {
	ctx := t.Context()
	srv := testserver.Start(t, testserver.Options{})

	_, err := client.New(srv.APIURL(), "eng_not_a_real_key_000000000000000000").Status(ctx)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != "unauthorized" || e.Message == "" || !strings.HasPrefix(e.RequestID, "req_") {
		t.Fatalf("bad key: %#v", err)
	}
	if !strings.Contains(e.Error(), e.RequestID) {
		t.Fatalf("Error() %q lacks the request id", e.Error())
	}

	_, err = client.New(srv.APIURL(), "").Register(ctx, "not an e-mail")
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code == "" || e.Details == nil {
		t.Fatalf("bad e-mail: %#v", err)
	}

	_, err = client.New(srv.APIURL(), "").Verify(ctx, "engv_nonsense")
	if !errors.As(err, &e) || e.Status/100 != 4 {
		t.Fatalf("bad token: %#v", err)
	}
}

// latestToken reads the verification token from the newest outbox mail.
func latestToken(t *testing.T, dataDir string) string {
	t.Helper()
	dir := testserver.OutboxDir(dataDir)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("outbox %s: %v", dir, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, entries[len(entries)-1].Name()))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n\n")
	tok, err := testserver.TokenFromMailBody(body)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain/account"
)

// TestAccountFlow walks the whole account life cycle over HTTP with mail in
// the outbox: register → token from the .eml → verify → login → status →
// two more keys → listing → cycle → revoke → sessions; and then checks that
// no secret reached the database, the event log or the logs.
func TestAccountFlow(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const addr = "alice@example.com"
	var secrets []string

	reg := expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "  Alice@Example.com "}), http.StatusOK)
	userID := reg.str("user_id")
	if userID == "" || reg.str("message") == "" || reg.header.Get("X-Request-Id") == "" {
		t.Fatalf("register response %s", reg.raw)
	}
	token := s.latestToken(addr) // the address is stored lower-cased
	secrets = append(secrets, token)

	ver := expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": token}), http.StatusOK)
	wantFields(t, ver.data(), "user_id", "verified", "api_key")
	initialKey := ver.str("api_key")
	if ver.str("user_id") != userID || ver.data()["verified"] != true || !account.LooksLikeAPIKey(initialKey) {
		t.Fatalf("verify response %s", ver.raw)
	}
	if ver.header.Get("Cache-Control") != "no-store" {
		t.Error("a response carrying a key may be cached")
	}
	secrets = append(secrets, initialKey)

	login := expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": initialKey}), http.StatusOK)
	wantFields(t, login.data(), "user_id", "token", "expires_at")
	session := login.str("token")
	secrets = append(secrets, session)
	expires, err := time.Parse(time.RFC3339, login.str("expires_at"))
	if err != nil || login.str("user_id") != userID || !account.LooksLikeSessionToken(session) {
		t.Fatalf("login response %s (%v)", login.raw, err)
	}
	if d := time.Until(expires); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("session expires in %v, want 24h", d)
	}

	st := expect(t, s.call("GET", "/v1/auth/status", initialKey, nil), http.StatusOK)
	wantFields(t, st.data(), "authenticated", "user_id", "email", "created_at", "agents")
	if st.data()["authenticated"] != true || st.str("user_id") != userID || st.str("email") != addr {
		t.Fatalf("status %s", st.raw)
	}
	if agents, ok := st.data()["agents"].([]any); !ok || len(agents) != 0 {
		t.Fatalf("agents = %#v, want []", st.data()["agents"])
	}
	if _, err := time.Parse(time.RFC3339, st.str("created_at")); err != nil || !strings.HasSuffix(st.str("created_at"), "Z") {
		t.Errorf("created_at %q is not RFC 3339 UTC", st.str("created_at"))
	}

	created := expect(t, s.call("POST", "/v1/auth/keys", initialKey, map[string]string{"name": "laptop"}), http.StatusCreated)
	wantFields(t, created.data(), "id", "name", "key", "prefix", "created_at")
	laptopID, laptopKey := created.str("id"), created.str("key")
	if created.str("name") != "laptop" || created.str("prefix") != laptopKey[:12] || !account.LooksLikeAPIKey(laptopKey) {
		t.Fatalf("create response %s", created.raw)
	}
	ciID, ciKey := s.createKey(session, "ci") // a session token works as Bearer
	secrets = append(secrets, laptopKey, ciKey)

	keys := s.listKeys(initialKey)
	if len(keys) != 3 {
		t.Fatalf("listing has %d keys, want 3", len(keys))
	}
	for _, k := range keys {
		wantFields(t, k, "id", "name", "prefix", "created_at", "last_used_at", "is_active")
		if p, _ := k["prefix"].(string); len(p) != 12 || !strings.HasPrefix(p, "eng_") {
			t.Errorf("prefix %q", p)
		}
		if k["is_active"] != true {
			t.Errorf("key %v inactive", k["name"])
		}
	}
	byName := func(name string) map[string]any {
		for _, k := range s.listKeys(initialKey) {
			if k["name"] == name {
				return k
			}
		}
		t.Fatalf("no key named %s", name)
		return nil
	}
	if byName("default")["last_used_at"] == nil {
		t.Error("the key in use has no last_used_at")
	}
	if byName("ci")["last_used_at"] != nil {
		t.Error("an unused key has a last_used_at")
	}
	listing := expect(t, s.call("GET", "/v1/auth/keys", initialKey, nil), http.StatusOK).raw
	for _, secret := range secrets {
		if bytes.Contains(listing, []byte(secret)) {
			t.Fatal("the listing contains a full secret")
		}
	}

	cyc := expect(t, s.call("POST", "/v1/auth/keys/"+laptopID+"/cycle", initialKey, nil), http.StatusOK)
	wantFields(t, cyc.data(), "old_key_id", "old_key_revoked", "new_key_id", "new_key", "new_key_prefix")
	newLaptopKey := cyc.str("new_key")
	secrets = append(secrets, newLaptopKey)
	if cyc.str("old_key_id") != laptopID || cyc.data()["old_key_revoked"] != true || cyc.str("new_key_prefix") != newLaptopKey[:12] || cyc.str("new_key_id") == laptopID {
		t.Fatalf("cycle response %s", cyc.raw)
	}
	expect(t, s.call("GET", "/v1/auth/status", laptopKey, nil), http.StatusUnauthorized)
	expect(t, s.call("GET", "/v1/auth/status", newLaptopKey, nil), http.StatusOK)
	for _, k := range s.listKeys(newLaptopKey) {
		if k["id"] == cyc.str("new_key_id") && (k["name"] != "laptop" || k["is_active"] != true) {
			t.Errorf("replacement listed as %v, want active and named laptop", k)
		}
		if k["id"] == laptopID && k["is_active"] != false {
			t.Errorf("cycled key listed as %v", k)
		}
	}

	rev := expect(t, s.call("DELETE", "/v1/auth/keys/"+ciID, initialKey, nil), http.StatusOK)
	wantFields(t, rev.data(), "id", "revoked", "revoked_at")
	if rev.str("id") != ciID || rev.data()["revoked"] != true {
		t.Fatalf("revoke response %s", rev.raw)
	}
	expect(t, s.call("GET", "/v1/auth/status", ciKey, nil), http.StatusUnauthorized)
	expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": ciKey}), http.StatusUnauthorized)
	if k := byName("ci"); k["is_active"] != false {
		t.Errorf("revoked key listed as %v", k)
	}

	// Revoking a key ends the sessions started from it.
	expect(t, s.call("GET", "/v1/auth/status", session, nil), http.StatusOK)
	expect(t, s.call("DELETE", "/v1/auth/keys/"+mustKeyID(t, s, initialKey, "default"), newLaptopKey, nil), http.StatusOK)
	expect(t, s.call("GET", "/v1/auth/status", session, nil), http.StatusUnauthorized)
	expect(t, s.call("GET", "/v1/auth/status", initialKey, nil), http.StatusUnauthorized)

	// A session expires after its TTL (24 h by default).
	login2 := expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": newLaptopKey}), http.StatusOK)
	session2 := login2.str("token")
	secrets = append(secrets, session2)
	expect(t, s.call("GET", "/v1/auth/keys", session2, nil), http.StatusOK)
	s.clock.Advance(24*time.Hour + time.Second)
	expect(t, s.call("GET", "/v1/auth/keys", session2, nil), http.StatusUnauthorized)
	expect(t, s.call("GET", "/v1/auth/keys", newLaptopKey, nil), http.StatusOK)

	if err := s.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertNoSecretsAtRest(t, s, secrets)
}

// mustKeyID finds a key's id by name while bearer is still valid.
func mustKeyID(t *testing.T, s *stack, bearer, name string) string {
	t.Helper()
	for _, k := range s.listKeys(bearer) {
		if k["name"] == name {
			return k["id"].(string)
		}
	}
	t.Fatalf("no key named %s", name)
	return ""
}

// wantFields checks an object has exactly the listed fields.
func wantFields(t *testing.T, obj map[string]any, fields ...string) {
	t.Helper()
	if len(obj) != len(fields) {
		t.Errorf("object has fields %v, want exactly %v", keysOf(obj), fields)
	}
	for _, f := range fields {
		if _, ok := obj[f]; !ok {
			t.Errorf("object %v lacks field %q", keysOf(obj), f)
		}
	}
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// assertNoSecretsAtRest greps the database file and its WAL, every event
// and the captured logs for the full secrets. The e-mail address must be
// found in the same bytes, which proves the grep sees the data at all.
func assertNoSecretsAtRest(t *testing.T, s *stack, secrets []string) {
	t.Helper()
	var dbBytes []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(s.db.Path() + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		dbBytes = append(dbBytes, b...)
	}
	events, err := s.store.ReadAll(context.Background(), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	eventBytes, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	logs := s.logs.Bytes()
	places := map[string][]byte{"database": dbBytes, "event log": eventBytes, "logs": logs}
	for name, b := range places {
		if len(b) == 0 {
			t.Fatalf("%s is empty", name)
		}
		for _, secret := range secrets {
			if secret == "" {
				t.Fatal("empty secret in the list")
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains a full secret (%s…)", name, secret[:12])
			}
			// The random part alone must not leak either.
			if i := strings.IndexByte(secret, '_'); bytes.Contains(b, []byte(secret[i+1:])) {
				t.Errorf("%s contains the random part of a secret (%s…)", name, secret[:12])
			}
		}
	}
	if !bytes.Contains(dbBytes, []byte("alice@example.com")) || !bytes.Contains(eventBytes, []byte(account.HashSecret(secrets[1]))) {
		t.Fatal("the grep does not see the stored data")
	}
}

// TestVerificationOverSMTP delivers the verification mail over a real SMTP
// connection to an in-process server and completes the sign-up with it.
func TestVerificationOverSMTP(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{smtp: true})
	const addr = "bob@example.org"
	reg := expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusOK)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := s.smtp.WaitFor(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := got.Parse()
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(msg.Body); err != nil {
		t.Fatal(err)
	}
	if subj := msg.Header.Get("Subject"); subj != "Verify your Engram account" {
		t.Errorf("subject %q", subj)
	}
	token := tokenFromMailBody(t, body.String())
	ver := expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": token}), http.StatusOK)
	if ver.str("user_id") != reg.str("user_id") {
		t.Fatalf("verified %s, registered %s", ver.str("user_id"), reg.str("user_id"))
	}
	expect(t, s.call("GET", "/v1/auth/status", ver.str("api_key"), nil), http.StatusOK)
	if mails := s.outboxMails(addr); len(mails) != 0 {
		t.Fatalf("with SMTP configured, %d mails went to the outbox", len(mails))
	}

	// The relay gone, a registration is 503 provider_unavailable: the
	// mail could not be sent, and registering again is the way on.
	s.smtp.Close()
	r := s.call("POST", "/v1/auth/register", "", map[string]string{"email": "dan@example.org"})
	wantError(t, r, http.StatusServiceUnavailable, "provider_unavailable")
	if !strings.Contains(r.errorMessage(), "could not be sent; try registering again later") {
		t.Errorf("register with the relay down: message %q", r.errorMessage())
	}
}

// TestReRegistrationSendsNewToken: an unverified address gets a new mail
// and keeps its user id; every unexpired token works until one is used.
func TestReRegistrationSendsNewToken(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const addr = "carol@example.net"
	first := expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusOK)
	s.clock.Advance(time.Minute) // past the re-send throttle
	second := expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "CAROL@example.net"}), http.StatusOK)
	if first.str("user_id") != second.str("user_id") {
		t.Fatalf("re-registration changed the user id: %s → %s", first.str("user_id"), second.str("user_id"))
	}
	mails := s.outboxMails(addr)
	if len(mails) != 2 {
		t.Fatalf("%d mails, want 2", len(mails))
	}
	older, newer := tokenFromMailBody(t, mails[0]), tokenFromMailBody(t, mails[1])
	if older == newer {
		t.Fatal("the second mail reuses the token")
	}
	expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": older}), http.StatusOK)
	r := expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": newer}), http.StatusGone)
	if r.errorCode() != "token_used" {
		t.Fatalf("code %s, want token_used", r.errorCode())
	}
	r = expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusConflict)
	if r.errorCode() != "email_already_registered" {
		t.Fatalf("code %s", r.errorCode())
	}
}

// TestVerifyPage: the mail's link leads to a page that verifies nothing by
// itself, so link scanners cannot spend the token.
func TestVerifyPage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const addr = "dave@example.com"
	expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr}), http.StatusOK)
	token := s.latestToken(addr)
	res, err := http.Get(s.srv.URL + "/v1/auth/verify?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		res.Header.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'sha256-") {
		t.Fatalf("page: %d %v", res.StatusCode, res.Header)
	}
	expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": token}), http.StatusOK)
	if bytes.Contains(s.logs.Bytes(), []byte(token)) {
		t.Fatal("the token in the link's query reached the log")
	}
}

package api_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAccountsReplayEquivalence builds the accounts read model through the
// API, exports it, drops it and replays the log, and requires the export to
// be byte-for-byte the same.
func TestAccountsReplayEquivalence(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{}, func(t *testing.T, s *stack) {
		ctx := context.Background()

		_, alice := s.signUp("alice@example.com")
		laptopID, laptop := s.createKey(alice, "laptop")
		ciID, _ := s.createKey(alice, "ci")
		expect(t, s.call("POST", "/v1/auth/keys/"+laptopID+"/cycle", alice, nil), http.StatusOK)
		expect(t, s.call("DELETE", "/v1/auth/keys/"+ciID, alice, nil), http.StatusOK)
		expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": alice}), http.StatusOK)
		expect(t, s.call("GET", "/v1/auth/status", laptop, nil), http.StatusUnauthorized)

		_, bob := s.signUp("bob@example.com")
		bobSession := expect(t, s.call("POST", "/v1/auth/login", "", map[string]string{"api_key": bob}), http.StatusOK).str("token")
		_, bob2 := s.createKey(bobSession, "second")
		expect(t, s.call("DELETE", "/v1/auth/keys/"+mustKeyID(t, s, bob2, "default"), bob2, nil), http.StatusOK) // ends bob's session

		// An unverified user with two tokens, one of them expired.
		expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "carol@example.com"}), http.StatusOK)
		s.clock.Advance(25 * time.Hour)
		expect(t, s.call("POST", "/v1/auth/register", "", map[string]string{"email": "carol@example.com"}), http.StatusOK)

		if err := s.usage.Flush(ctx); err != nil {
			t.Fatal(err)
		}

		var incremental bytes.Buffer
		if err := s.model.Export(ctx, &incremental); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"table":"account_users"`, `"table":"account_verification_tokens"`, `"table":"account_keys"`, `"table":"account_sessions"`, `"last_used_at":"20`, `"ended_at":"20`, `"revoked_at":"20`} {
			if !strings.Contains(incremental.String(), want) {
				t.Fatalf("export lacks %s:\n%s", want, incremental.String())
			}
		}

		s.stopEngine()
		if err := s.model.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		var empty bytes.Buffer
		if err := s.model.Export(ctx, &empty); err != nil {
			t.Fatal(err)
		}
		if empty.Len() != 0 {
			t.Fatalf("export after reset is not empty:\n%s", empty.String())
		}
		for round := 1; round <= 2; round++ {
			if err := s.engine.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			var replayed bytes.Buffer
			if err := s.model.Export(ctx, &replayed); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(incremental.Bytes(), replayed.Bytes()) {
				t.Fatalf("rebuild %d differs from the incremental build\nincremental:\n%s\nreplayed:\n%s", round, incremental.String(), replayed.String())
			}
		}
		head, _ := s.store.Head(ctx)
		if pos, _ := s.model.Checkpoint(ctx); pos != head {
			t.Fatalf("checkpoint %d after rebuild, head %d", pos, head)
		}
	})
}

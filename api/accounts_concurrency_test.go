package api_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/engram-memory/engram/domain/account"
)

// TestConcurrentCycle: 50 simultaneous cycles of one key give exactly one
// success, 49 × 409 key_already_revoked, and exactly one replacement.
func TestConcurrentCycle(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	_, initial := s.signUp("erin@example.com")
	_, opsKey := s.createKey(initial, "ops") // the bearer, so the cycled key is not
	target := mustKeyID(t, s, opsKey, "default")

	const n = 50
	results := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = s.call("POST", "/v1/auth/keys/"+target+"/cycle", opsKey, nil)
		}()
	}
	close(start)
	wg.Wait()

	var winners []response
	for _, r := range results {
		switch {
		case r.status == http.StatusOK:
			winners = append(winners, r)
		case r.status == http.StatusConflict && r.errorCode() == "key_already_revoked":
		default:
			t.Fatalf("unexpected response %d %s", r.status, r.raw)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d cycles succeeded, want exactly 1", len(winners))
	}
	newID := winners[0].str("new_key_id")
	active := map[string]bool{}
	for _, k := range s.listKeys(opsKey) {
		if k["is_active"] == true {
			active[k["id"].(string)] = true
		}
	}
	if len(active) != 2 || !active[newID] || active[target] {
		t.Fatalf("active keys %v, want ops and %s", active, newID)
	}
	expect(t, s.call("GET", "/v1/auth/status", winners[0].str("new_key"), nil), http.StatusOK)
	expect(t, s.call("GET", "/v1/auth/status", initial, nil), http.StatusUnauthorized)

	// One APIKeyCycled event, whatever the number of attempts.
	events, err := s.store.ReadStream(context.Background(), account.StreamFor("erin@example.com"), 0)
	if err != nil {
		t.Fatal(err)
	}
	cycled := 0
	for _, e := range events {
		if e.Type == account.TypeAPIKeyCycled {
			cycled++
		}
	}
	if cycled != 1 {
		t.Fatalf("%d APIKeyCycled events, want 1", cycled)
	}
}

// TestConcurrentRegistration: 20 simultaneous registrations of one address
// create one user and send one mail; the others are refused by the re-send
// throttle (429 with Retry-After), however the appends interleave.
func TestConcurrentRegistration(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	const addr = "frank@example.com"
	const n = 20
	results := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = s.call("POST", "/v1/auth/register", "", map[string]string{"email": addr})
		}()
	}
	close(start)
	wg.Wait()
	ids := map[string]int{}
	throttled := 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			ids[r.str("user_id")]++
		case http.StatusTooManyRequests:
			if r.errorCode() != "rate_limited" || r.header.Get("Retry-After") == "" {
				t.Fatalf("429 without rate_limited and Retry-After: %v %s", r.header, r.raw)
			}
			throttled++
		default:
			t.Fatalf("status %d: %s", r.status, r.raw)
		}
	}
	if len(ids) != 1 || throttled != n-1 {
		t.Fatalf("user ids %v and %d throttled, want one id once and %d throttled", ids, throttled, n-1)
	}
	events, err := s.store.ReadStream(context.Background(), account.StreamFor(addr), 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, []string{account.TypeUserRegistered, account.TypeVerificationIssued}) {
		t.Fatalf("events %v, want one registration and one token", types)
	}
	u, found, err := s.model.UserByEmail(context.Background(), addr)
	if err != nil || !found {
		t.Fatalf("read model: %v %v", found, err)
	}
	for id := range ids {
		if u.ID != id {
			t.Fatalf("read model has %s, API said %s", u.ID, id)
		}
	}
	// The mailed token verifies the one user.
	ver := expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken(addr)}), http.StatusOK)
	if ver.str("user_id") != u.ID {
		t.Fatalf("verified %s", ver.str("user_id"))
	}
}

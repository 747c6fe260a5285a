package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/engram-memory/engram/domain/account"
)

// TestConcurrentCycle: 50 simultaneous cycles of one key give exactly one
// success, 49 × 409 key_already_revoked, and exactly one replacement.
func TestConcurrentCycle(t *testing.T) {
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
// create one user; every caller gets its id.
func TestConcurrentRegistration(t *testing.T) {
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
	for _, r := range results {
		expect(t, r, http.StatusOK)
		ids[r.str("user_id")]++
	}
	if len(ids) != 1 {
		t.Fatalf("%d user ids for one address: %v", len(ids), ids)
	}
	events, err := s.store.ReadStream(context.Background(), account.StreamFor(addr), 0)
	if err != nil {
		t.Fatal(err)
	}
	registered := 0
	for _, e := range events {
		if e.Type == account.TypeUserRegistered {
			registered++
		}
	}
	if registered != 1 || len(events) != n+1 {
		t.Fatalf("%d UserRegistered events and %d events, want 1 and %d", registered, len(events), n+1)
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
	// Any of the mailed tokens verifies the one user.
	ver := expect(t, s.call("POST", "/v1/auth/verify", "", map[string]string{"token": s.latestToken(addr)}), http.StatusOK)
	if ver.str("user_id") != u.ID {
		t.Fatalf("verified %s", ver.str("user_id"))
	}
}

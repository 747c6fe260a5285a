package account_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/account"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// history builds a user from payloads the way Load sees them: as stored
// events, so the JSON round trip is covered too.
func history(t *testing.T, payloads ...domain.Payload) *account.User {
	t.Helper()
	events := make([]domain.Event, len(payloads))
	for i, p := range payloads {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		events[i] = domain.Event{Stream: "user-x", Version: uint64(i), Position: uint64(i + 1), Type: p.EventType(), Payload: raw}
	}
	u, err := account.Load(events)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func key(id string) account.KeyRecord {
	return account.KeyRecord{KeyID: id, Name: "k-" + id, Prefix: "eng_" + id, KeyHash: "hash-" + id, CreatedAt: t0}
}

func registered() []domain.Payload {
	return []domain.Payload{
		&account.UserRegistered{UserID: "u1", Email: "a@example.com", RegisteredAt: t0},
		&account.VerificationIssued{UserID: "u1", TokenHash: "tok1", IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)},
	}
}

func verified(extra ...domain.Payload) []domain.Payload {
	return append(append(registered(), &account.UserVerified{UserID: "u1", TokenHash: "tok1", VerifiedAt: t0, InitialKey: key("k1")}), extra...)
}

// wantCode checks err is a *domain.Error with the code, or nil for "".
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	de, ok := domain.AsError(err)
	if !ok || de.PublicCode() != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

func TestRegister(t *testing.T) {
	// The last token of registered() was issued at t0.
	tests := []struct {
		name      string
		history   []domain.Payload
		now       time.Time
		code      string
		wantTypes []string
		wantUser  string
		wantRetry int // retry_after_seconds of a rate_limited refusal
	}{
		{"new address", nil, t0, "", []string{"UserRegistered", "VerificationIssued"}, "new", 0},
		{"unverified address: new token, same user", registered(), t0.Add(time.Hour), "", []string{"VerificationIssued"}, "u1", 0},
		{"verified address", verified(), t0.Add(time.Hour), "email_already_registered", nil, "", 0},
		{"re-send at once", registered(), t0, "rate_limited", nil, "", 60},
		{"re-send after 59.5 s", registered(), t0.Add(59*time.Second + 500*time.Millisecond), "rate_limited", nil, "", 1},
		{"re-send after exactly the interval", registered(), t0.Add(time.Minute), "", []string{"VerificationIssued"}, "u1", 0},
		{"the newest token counts", append(registered(), &account.VerificationIssued{UserID: "u1", TokenHash: "tok3", IssuedAt: t0.Add(time.Hour), ExpiresAt: t0.Add(25 * time.Hour)}),
			t0.Add(time.Hour + 30*time.Second), "rate_limited", nil, "", 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := account.Registration{UserID: "new", Email: "a@example.com", TokenHash: "tok2", Now: tt.now, TokenTTL: 24 * time.Hour, ResendInterval: time.Minute}
			u := history(t, tt.history...)
			got, err := u.Register(in)
			wantCode(t, err, tt.code)
			if de, _ := domain.AsError(err); tt.wantRetry != 0 && de.Details[domain.DetailRetryAfterSeconds] != tt.wantRetry {
				t.Errorf("details %v, want %s %d", de.Details, domain.DetailRetryAfterSeconds, tt.wantRetry)
			}
			if len(got) != len(tt.wantTypes) {
				t.Fatalf("got %d events, want %v", len(got), tt.wantTypes)
			}
			for i, p := range got {
				if p.EventType() != tt.wantTypes[i] {
					t.Errorf("event %d is %s, want %s", i, p.EventType(), tt.wantTypes[i])
				}
			}
			if len(got) > 0 {
				issued := got[len(got)-1].(*account.VerificationIssued)
				if issued.UserID != tt.wantUser || !issued.ExpiresAt.Equal(in.Now.Add(24*time.Hour)) {
					t.Errorf("issued = %+v", issued)
				}
			}
		})
	}
}

func TestVerify(t *testing.T) {
	material := account.KeyMaterial{ID: "k9", Prefix: "eng_12345678", Hash: "h9"}
	tests := []struct {
		name    string
		history []domain.Payload
		token   string
		now     time.Time
		code    string
	}{
		{"valid token", registered(), "tok1", t0.Add(time.Hour), ""},
		{"just before expiry", registered(), "tok1", t0.Add(24*time.Hour - time.Nanosecond), ""},
		{"at expiry", registered(), "tok1", t0.Add(24 * time.Hour), "token_expired"},
		{"unknown token", registered(), "nope", t0, "invalid_request"},
		{"used token", verified(), "tok1", t0.Add(time.Hour), "token_used"},
		{"another token of a verified address", append(verified(), &account.VerificationIssued{UserID: "u1", TokenHash: "tok3", ExpiresAt: t0.Add(time.Hour)}), "tok3", t0, "token_used"},
		{"older token still valid before verification", append(registered(), &account.VerificationIssued{UserID: "u1", TokenHash: "tok3", ExpiresAt: t0.Add(48 * time.Hour)}), "tok1", t0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := history(t, tt.history...)
			p, err := u.Verify(tt.token, material, tt.now)
			wantCode(t, err, tt.code)
			if err != nil {
				return
			}
			v := p.(*account.UserVerified)
			if v.UserID != "u1" || v.InitialKey.Name != "default" || v.InitialKey.KeyHash != "h9" || v.InitialKey.KeyID != "k9" {
				t.Errorf("verified = %+v", v)
			}
		})
	}
}

func TestKeyDecisions(t *testing.T) {
	material := account.KeyMaterial{ID: "new", Prefix: "eng_abcdefgh", Hash: "hnew"}
	twoKeys := verified(&account.APIKeyCreated{UserID: "u1", Key: key("k2")})
	revokedK2 := append(verified(&account.APIKeyCreated{UserID: "u1", Key: key("k2")}), &account.APIKeyRevoked{UserID: "u1", KeyID: "k2", RevokedAt: t0})
	cycledK1 := verified(&account.APIKeyCycled{UserID: "u1", OldKeyID: "k1", RevokedAt: t0, NewKey: key("k3")})
	tests := []struct {
		name    string
		history []domain.Payload
		op      func(u *account.User) (domain.Payload, error)
		code    string
		want    string
	}{
		{"revoke one of two", twoKeys, func(u *account.User) (domain.Payload, error) { return u.RevokeKey("k2", t0) }, "", "APIKeyRevoked"},
		{"revoke last active", verified(), func(u *account.User) (domain.Payload, error) { return u.RevokeKey("k1", t0) }, "last_active_key", ""},
		{"revoke last active after another was revoked", revokedK2, func(u *account.User) (domain.Payload, error) { return u.RevokeKey("k1", t0) }, "last_active_key", ""},
		{"revoke revoked", revokedK2, func(u *account.User) (domain.Payload, error) { return u.RevokeKey("k2", t0) }, "key_already_revoked", ""},
		{"revoke unknown", twoKeys, func(u *account.User) (domain.Payload, error) { return u.RevokeKey("other-users-key", t0) }, "not_found", ""},
		{"cycle the only key", verified(), func(u *account.User) (domain.Payload, error) { return u.CycleKey("k1", material, t0) }, "", "APIKeyCycled"},
		{"cycle a cycled key", cycledK1, func(u *account.User) (domain.Payload, error) { return u.CycleKey("k1", material, t0) }, "key_already_revoked", ""},
		{"cycle the replacement", cycledK1, func(u *account.User) (domain.Payload, error) { return u.CycleKey("k3", material, t0) }, "", "APIKeyCycled"},
		{"cycle unknown", verified(), func(u *account.User) (domain.Payload, error) { return u.CycleKey("nope", material, t0) }, "not_found", ""},
		{"create", verified(), func(u *account.User) (domain.Payload, error) {
			return u.CreateKey("  laptop ", material, account.DefaultMaxActiveKeys, t0)
		}, "", "APIKeyCreated"},
		{"create with blank name", verified(), func(u *account.User) (domain.Payload, error) {
			return u.CreateKey("  ", material, account.DefaultMaxActiveKeys, t0)
		}, "invalid_request", ""},
		{"create with long name", verified(), func(u *account.User) (domain.Payload, error) {
			return u.CreateKey(string(make([]rune, 101)), material, account.DefaultMaxActiveKeys, t0)
		}, "invalid_request", ""},
		{"create with control character", verified(), func(u *account.User) (domain.Payload, error) {
			return u.CreateKey("a\nb", material, account.DefaultMaxActiveKeys, t0)
		}, "invalid_request", ""},
		{"login with active key", twoKeys, func(u *account.User) (domain.Payload, error) {
			return u.StartSession("hash-k2", "s1", "sh", t0, time.Hour)
		}, "", "SessionStarted"},
		{"login with revoked key", revokedK2, func(u *account.User) (domain.Payload, error) {
			return u.StartSession("hash-k2", "s1", "sh", t0, time.Hour)
		}, "unauthorized", ""},
		{"login with unknown key", twoKeys, func(u *account.User) (domain.Payload, error) {
			return u.StartSession("hash-zz", "s1", "sh", t0, time.Hour)
		}, "unauthorized", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.op(history(t, tt.history...))
			wantCode(t, err, tt.code)
			if err == nil && p.EventType() != tt.want {
				t.Fatalf("event %s, want %s", p.EventType(), tt.want)
			}
		})
	}
}

func TestCycleIsOneEventThatSwapsKeys(t *testing.T) {
	u := history(t, verified()...)
	p, err := u.CycleKey("k1", account.KeyMaterial{ID: "k2", Prefix: "eng_x", Hash: "h2"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	c := p.(*account.APIKeyCycled)
	if c.NewKey.Name != "k-k1" {
		t.Errorf("replacement is named %q, want the old key's name", c.NewKey.Name)
	}
	u.Apply(p)
	old, _ := u.Key("k1")
	repl, _ := u.Key("k2")
	if old.Active() || !repl.Active() || u.ActiveKeys() != 1 {
		t.Fatalf("after cycle: old active %v, new active %v, %d active", old.Active(), repl.Active(), u.ActiveKeys())
	}
}

// TestActiveKeyLimit: the key past the limit is refused, whatever the
// limit; one under it is created.
func TestActiveKeyLimit(t *testing.T) {
	for _, limit := range []int{account.DefaultMaxActiveKeys, 3} {
		h := verified()
		for i := 1; i < limit; i++ { // verification created the first key
			h = append(h, &account.APIKeyCreated{UserID: "u1", Key: key(fmt.Sprintf("k%d", i+1))})
		}
		u := history(t, h...)
		_, err := u.CreateKey("one too many", account.KeyMaterial{ID: "x"}, limit, t0)
		wantCode(t, err, "key_limit_reached")
		if _, err := u.CreateKey("room for one", account.KeyMaterial{ID: "y"}, limit+1, t0); err != nil {
			t.Fatalf("limit %d: a key under the limit: %v", limit+1, err)
		}
	}
}

func TestLoadRejectsForeignEvents(t *testing.T) {
	_, err := account.Load([]domain.Event{{Type: "MemoryCreated", Payload: json.RawMessage(`{}`)}})
	if err == nil {
		t.Fatal("a foreign event in a user stream was accepted")
	}
}

func TestVersionTracksStream(t *testing.T) {
	if v := account.New().Version; v != -1 {
		t.Fatalf("new user version %d, want -1", v)
	}
	if v := history(t, verified()...).Version; v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
}

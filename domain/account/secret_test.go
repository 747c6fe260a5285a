package account_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain/account"
)

func TestSecretShapes(t *testing.T) {
	tests := []struct {
		name   string
		gen    func() (account.IssuedSecret, error)
		re     *regexp.Regexp
		looks  func(string) bool
		others []func(string) bool
	}{
		{"api key", account.NewAPIKey, regexp.MustCompile(`^eng_[0-9A-Za-z]{40}$`), account.LooksLikeAPIKey,
			[]func(string) bool{account.LooksLikeSessionToken, account.LooksLikeVerificationToken}},
		{"session token", account.NewSessionToken, regexp.MustCompile(`^engs_[0-9A-Za-z]{43}$`), account.LooksLikeSessionToken,
			[]func(string) bool{account.LooksLikeAPIKey, account.LooksLikeVerificationToken}},
		{"verification token", account.NewVerificationToken, regexp.MustCompile(`^engv_[0-9A-Za-z]{43}$`), account.LooksLikeVerificationToken,
			[]func(string) bool{account.LooksLikeAPIKey, account.LooksLikeSessionToken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for i := 0; i < 200; i++ {
				s, err := tt.gen()
				if err != nil {
					t.Fatal(err)
				}
				if !tt.re.MatchString(s.Plain) || !tt.looks(s.Plain) {
					t.Fatalf("bad secret %q", s.Plain)
				}
				for _, other := range tt.others {
					if other(s.Plain) {
						t.Fatalf("%q is mistaken for another kind of secret", s.Plain)
					}
				}
				if s.Prefix != s.Plain[:12] || len(s.Hash) != 64 || s.Hash != account.HashSecret(s.Plain) || strings.Contains(s.Hash, s.Plain) {
					t.Fatalf("bad prefix or hash: %+v", s)
				}
				if seen[s.Plain] {
					t.Fatal("duplicate secret")
				}
				seen[s.Plain] = true
			}
			if tt.looks(strings.Repeat("x", 44)) || tt.looks("") {
				t.Fatal("garbage accepted")
			}
		})
	}
}

func TestSameHash(t *testing.T) {
	if !account.SameHash("abc", "abc") || account.SameHash("abc", "abd") || account.SameHash("abc", "ab") {
		t.Fatal("SameHash is wrong")
	}
}

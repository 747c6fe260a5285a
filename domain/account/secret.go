package account

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// Secret prefixes tell the three kinds of bearer secrets apart at a glance,
// and let secret scanners recognise leaked Engram credentials.
const (
	KeyPrefix          = "eng_"  // API keys
	SessionPrefix      = "engs_" // session tokens from /auth/login
	VerificationPrefix = "engv_" // e-mail verification tokens
)

// Lengths of the random part of each secret, in base62 characters. 40
// characters carry about 238 bits; 43 carry about 256.
const (
	keyRandomLen          = 40
	sessionRandomLen      = 43
	verificationRandomLen = 43
	// DisplayPrefixLen is how much of a key is shown in listings.
	DisplayPrefixLen = 12
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// IssuedSecret is a freshly generated secret. Plain goes to the client once;
// only Hash (and, for keys, Prefix) is ever recorded.
type IssuedSecret struct {
	Plain  string
	Hash   string
	Prefix string
}

// NewAPIKey generates an API key: "eng_" and 40 base62 characters.
func NewAPIKey() (IssuedSecret, error) { return newSecret(KeyPrefix, keyRandomLen) }

// NewSessionToken generates a session token: "engs_" and 43 base62 characters.
func NewSessionToken() (IssuedSecret, error) { return newSecret(SessionPrefix, sessionRandomLen) }

// NewVerificationToken generates a verification token: "engv_" and 43 base62
// characters (256 bits).
func NewVerificationToken() (IssuedSecret, error) {
	return newSecret(VerificationPrefix, verificationRandomLen)
}

func newSecret(prefix string, n int) (IssuedSecret, error) {
	random, err := randomBase62(n)
	if err != nil {
		return IssuedSecret{}, err
	}
	plain := prefix + random
	return IssuedSecret{Plain: plain, Hash: HashSecret(plain), Prefix: plain[:DisplayPrefixLen]}, nil
}

// randomBase62 draws n uniformly random base62 characters from crypto/rand.
// Bytes >= 248 are rejected so that b % 62 is unbiased (248 = 4 × 62).
func randomBase62(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("account: read random bytes: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out), nil
}

// HashSecret is the SHA-256 hex digest under which a secret is stored and
// looked up. The secrets are 238+ random bits, so a fast unsalted hash is
// enough: there is nothing to brute-force.
func HashSecret(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// SameHash compares two hex hashes in constant time.
func SameHash(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// LooksLikeAPIKey reports whether s has the shape of an API key, so callers
// can reject garbage without a lookup.
func LooksLikeAPIKey(s string) bool { return wellFormed(s, KeyPrefix, keyRandomLen) }

// LooksLikeSessionToken reports whether s has the shape of a session token.
func LooksLikeSessionToken(s string) bool { return wellFormed(s, SessionPrefix, sessionRandomLen) }

// LooksLikeVerificationToken reports whether s has the shape of a
// verification token.
func LooksLikeVerificationToken(s string) bool {
	return wellFormed(s, VerificationPrefix, verificationRandomLen)
}

func wellFormed(s, prefix string, n int) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != n {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

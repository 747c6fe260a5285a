package account

import (
	"crypto/sha256"
	"encoding/hex"
	"net/mail"
	"strings"
	"unicode"

	"github.com/engram-memory/engram/domain"
)

// MaxEmailLen is the longest address accepted (RFC 5321 path limit).
const MaxEmailLen = 254

// NormalizeEmail validates an address and returns its canonical form:
// trimmed and lower-cased. Addresses are compared case-insensitively (in
// practice no provider distinguishes Bob@ from bob@), so the canonical form
// is what is stored, mailed to, and hashed into the stream name.
//
// Accepted is a bare address (no display name, no angle brackets, no
// comments) whose domain contains a dot.
func NormalizeEmail(raw string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	if s == "" {
		return "", domain.Invalid("email", "field \"email\" is required")
	}
	if len(s) > MaxEmailLen {
		return "", domain.Invalid("email", "e-mail address is longer than %d characters", MaxEmailLen)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", invalidEmail()
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return "", invalidEmail()
	}
	at := strings.LastIndexByte(s, '@')
	host := s[at+1:]
	if at < 1 || !strings.Contains(host, ".") || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") {
		return "", invalidEmail()
	}
	// net/mail takes any dot-atom as the domain ("example.com*"); a host
	// that mail can reach is letters, digits and hyphens (RFC 5321's
	// Domain, as JSON Schema's "email" format checks it).
	if strings.IndexFunc(host, func(r rune) bool { return r != '.' && r != '-' && !('a' <= r && r <= 'z') && !('0' <= r && r <= '9') }) >= 0 {
		return "", invalidEmail()
	}
	return s, nil
}

func invalidEmail() *domain.Error {
	return domain.Invalid("email", "field \"email\" must be a plain e-mail address such as name@example.com")
}

// StreamPrefix starts the name of every user stream.
const StreamPrefix = "user-"

// StreamFor is the stream of the user with the given normalised address:
// "user-" and the first 32 hex characters of its SHA-256. Deriving the
// stream from the address makes the e-mail unique without a second index:
// two registrations of one address contend on one stream version.
func StreamFor(normalizedEmail string) string {
	sum := sha256.Sum256([]byte(normalizedEmail))
	return StreamPrefix + hex.EncodeToString(sum[:])[:32]
}

// UsageStream holds a user's coalesced key-use events (APIKeysUsed), apart
// from the user stream that decisions reload.
func UsageStream(userID string) string { return "keyuse-" + userID }

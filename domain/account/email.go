package account

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/engram-memory/engram/domain"
)

// MaxEmailLen is the longest address accepted (RFC 5321 path limit).
const MaxEmailLen = 254

// NormalizeEmail validates an address and returns its canonical form:
// trimmed and lower-cased. Addresses are compared case-insensitively (in
// practice no provider distinguishes Bob@ from bob@), so the canonical form
// is what is stored, mailed to, and hashed into the stream name.
//
// Accepted is a bare ASCII address (no display name, no angle brackets, no
// comments, no quoted local part): a dot-atom, "@", and a domain of
// letters, digits and hyphens with a dot, between white space; at most
// MaxEmailLen characters, the white space counted. It is the OpenAPI
// document's pattern for the field (api/openapi.json, RegisterRequest), so
// a client that checks the document's rule sends what the server takes.
// net/mail alone would take more: UTF-8 local parts (RFC 6532), quoted
// ones, and a letter that lower-cases to ASCII (the Kelvin sign).
func NormalizeEmail(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", domain.Invalid("email", "field \"email\" is required")
	}
	if utf8.RuneCountInString(raw) > MaxEmailLen {
		return "", domain.Invalid("email", "e-mail address is longer than %d characters", MaxEmailLen)
	}
	if !plainAddress().MatchString(s) {
		return "", invalidEmail()
	}
	return strings.ToLower(s), nil
}

// plainAddress is a dot-atom local part of ASCII atext (RFC 5322) and a
// domain of dot-separated labels of letters, digits and hyphens (RFC
// 5321's Domain), at least two of them.
var plainAddress = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$")
})

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

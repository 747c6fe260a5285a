package account_test

import (
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain/account"
)

func TestNormalizeEmail(t *testing.T) {
	long := strings.Repeat("a", 245) + "@example.com"
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"bob@example.com", "bob@example.com", true},
		{"  Bob@Example.COM \n", "bob@example.com", true},
		{"first.last+tag@sub.example.co.uk", "first.last+tag@sub.example.co.uk", true},
		{"", "", false},
		{"   ", "", false},
		{"bob", "", false},
		{"bob@localhost", "", false},
		{"bob@example.", "", false},
		{"bob@.example.com", "", false},
		{"bob@example..com", "", false},
		{"@example.com", "", false},
		{"Bob <bob@example.com>", "", false},
		{"<bob@example.com>", "", false},
		{"bob@example.com (comment)", "", false},
		{`"b o b"@example.com`, "", false},
		{"bob @example.com", "", false},
		{"bob@exa\x00mple.com", "", false},
		{"a@b.c,d@e.f", "", false},
		{"bob@example.com*", "", false},
		{"bob@ex_ample.com", "", false},
		{"bob@exämple.com", "", false},
		{"bob@my-host.example.com", "bob@my-host.example.com", true},
		{long, "", false},
		// net/mail takes these; the document's pattern does not (issue 25).
		{"é@example.com", "", false},
		{`"a..b"@example.com`, "", false},
		{"\u212a@example.com", "", false},
		{"\u00a0bob@example.com\u3000", "bob@example.com", true},
		{"   " + strings.Repeat("a", 240) + "@example.com", "", false},
		{"!#$%&'*+/=?^_`{|}~-@example.com", "!#$%&'*+/=?^_`{|}~-@example.com", true},
	}
	for _, tt := range tests {
		got, err := account.NormalizeEmail(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestStreamFor(t *testing.T) {
	s := account.StreamFor("bob@example.com")
	if !strings.HasPrefix(s, "user-") || len(s) != len("user-")+32 {
		t.Fatalf("stream %q", s)
	}
	if s == account.StreamFor("alice@example.com") || s != account.StreamFor("bob@example.com") {
		t.Fatal("stream is not a function of the address")
	}
}

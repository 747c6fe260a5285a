package testserver_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/engram-memory/engram/internal/testserver"
)

// binary is built once for this package's tests.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "testserver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary, err = testserver.Build(context.Background(), dir, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func TestStartRegisterStop(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Binary: binary})
	if !strings.HasPrefix(s.BaseURL, "http://127.0.0.1:") {
		t.Fatalf("BaseURL %q", s.BaseURL)
	}
	key := testserver.Register(t, s.APIURL(), s.DataDir, "ada@example.com")
	if !strings.HasPrefix(key, "eng_") {
		t.Fatalf("api key %q lacks the eng_ prefix", key)
	}
	// A second user in the same outbox must get its own token.
	if key2 := testserver.Register(t, s.BaseURL, s.DataDir, "bob@example.com"); key2 == key {
		t.Fatal("two users got the same key")
	}
	m, err := s.Proc.MemStat()
	if err != nil || m.RSSBytes <= 0 || m.PeakRSSBytes < m.RSSBytes {
		t.Fatalf("MemStat = %+v, %v", m, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.Log())
	}
}

func TestTokenFromMailBody(t *testing.T) {
	tok := "engv_0123456789abcdefghijABCDEFGHIJ0123456789abc"
	tests := []struct {
		name    string
		body    string
		want    string
		wantErr bool
	}{
		{"both", "Hi\n\nhttp://x/v1/auth/verify?token=" + tok + "\n\nor\n\n" + tok + "\n\nbye long words here\n", tok, false},
		{"crlf", "http://x/v1/auth/verify?token=" + tok + "\r\n" + tok + "\r\n", tok, false},
		{"link only", "http://x/v1/auth/verify?token=" + tok + "\n", "", true},
		{"alone only", tok + "\n", "", true},
		{"differ", "http://x/v1/auth/verify?token=" + tok + "\nengv_otherotherotherotherother\n", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testserver.TokenFromMailBody(strings.ReplaceAll(tc.body, "\r\n", "\n"))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

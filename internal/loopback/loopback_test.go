package loopback_test

import (
	"testing"

	"github.com/engram-memory/engram/internal/loopback"
)

func TestHost(t *testing.T) {
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.1:8420", true},
		{"localhost", true},
		{"LocalHost:6060", true},
		{"[::1]", true},
		{"[::1]:8420", true},
		{"", false},
		{"evil.example", false},
		{"evil.example:8420", false},
		{"localhost.evil.example", false},
		{"localhost.", false},
		{"127.0.0.1.nip.io:8420", false},
		{"127.0.0.2:8420", false},
		{"0.0.0.0:8420", false},
		{"[::ffff:127.0.0.1]:8420", false},
		{"192.168.1.10:8420", false},
		{"::1", true}, // malformed without brackets, but it still names loopback
	}
	for _, tt := range tests {
		if got := loopback.Host(tt.host); got != tt.ok {
			t.Errorf("Host(%q) = %v, want %v", tt.host, got, tt.ok)
		}
	}
}

func TestAddr(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.1.2.3:0", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"[::]:8080", false},
		{"192.0.2.1:8080", false},
		{"example.com:8080", false},
		{"nonsense", false},
	}
	for _, tt := range tests {
		if got := loopback.Addr(tt.addr); got != tt.ok {
			t.Errorf("Addr(%q) = %v, want %v", tt.addr, got, tt.ok)
		}
	}
}

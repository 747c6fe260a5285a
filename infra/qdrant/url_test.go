package qdrant

import "testing"

// TestParseURL: what --qdrant-url accepts, as go-client's Config needs it
// (go-client joins Host and Port with a bare ':', so an IPv6 host keeps
// its brackets).
func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		host string
		port int
		tls  bool
	}{
		{"localhost:6334", "localhost", 6334, false},
		{"localhost", "localhost", DefaultPort, false},
		{"http://qdrant:7000", "qdrant", 7000, false},
		{"https://qdrant.example.com", "qdrant.example.com", DefaultPort, true},
		{"https://qdrant.example.com:443/", "qdrant.example.com", 443, true},
		{"http://[::1]:6334", "[::1]", 6334, false},
		{"[::1]", "[::1]", DefaultPort, false},
	} {
		host, port, tls, err := parseURL(c.url)
		if err != nil || host != c.host || port != c.port || tls != c.tls {
			t.Errorf("parseURL(%q) = %q, %d, %v, %v; want %q, %d, %v", c.url, host, port, tls, err, c.host, c.port, c.tls)
		}
	}
}

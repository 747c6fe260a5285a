package client

import (
	"net/url"
	"testing"
)

func TestSecureURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.example.com/v1", true},
		{"http://127.0.0.1:8080/v1", true},
		{"http://127.1.2.3/v1", true},
		{"http://[::1]:8080/v1", true},
		{"http://localhost:8080/v1", true},
		{"http://LOCALHOST/v1", true},
		{"http://api.example.com/v1", false},
		{"http://10.0.0.1/v1", false},
		{"http://localhost.example.com/v1", false},
		{"http://localhost.evil.example/v1", false},
		{"http://127.0.0.1.nip.io/v1", false},
		{"ftp://127.0.0.1/v1", false},
	}
	if SecureBaseURL("127.0.0.1:8080") || SecureBaseURL("") {
		t.Error("SecureBaseURL accepted a base URL without scheme and host")
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := secureURL(u); got != tc.want {
			t.Errorf("secureURL(%s) = %v, want %v", tc.url, got, tc.want)
		}
		if got := SecureBaseURL(tc.url); got != tc.want {
			t.Errorf("SecureBaseURL(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

package dashboard_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engram-memory/engram/dashboard"
)

func TestListenAddrIsLoopbackOnly(t *testing.T) {
	cases := []struct {
		port    int
		want    string
		wantErr bool
	}{
		{dashboard.DefaultPort, "127.0.0.1:8420", false},
		{1, "127.0.0.1:1", false},
		{0, "", true},
		{70000, "", true},
	}
	for _, c := range cases {
		got, err := dashboard.ListenAddr(c.port)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ListenAddr(%d) = %q, %v; want %q, error %v", c.port, got, err, c.want, c.wantErr)
		}
	}
}

func TestGuard(t *testing.T) {
	var logs strings.Builder
	routes := http.NewServeMux()
	routes.HandleFunc("GET /api/stats", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"notes":1}`) })
	routes.HandleFunc("GET /api/boom", func(w http.ResponseWriter, r *http.Request) { panic("secret internal detail") })
	srv := httptest.NewServer(dashboard.Guard(routes, slog.New(slog.NewTextHandler(&logs, nil))))
	defer srv.Close()

	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	cases := []struct {
		method, path string
		host         string // the Host header; empty: the server's address
		status       int
		code         string // the error code; empty: the route's own body
	}{
		{"GET", "/api/stats", "", 200, ""},
		{"GET", "/api/stats/", "", 200, ""},
		{"POST", "/api/stats", "", 405, "method_not_allowed"},
		{"DELETE", "/api/stats", "", 405, "method_not_allowed"},
		{"GET", "/api/boom", "", 500, "internal"},
		// DNS rebinding: a loopback connection naming another host.
		{"GET", "/api/stats", "localhost:" + port, 200, ""},
		{"GET", "/api/stats", "[::1]:" + port, 200, ""},
		{"GET", "/api/stats", "127.0.0.1", 200, ""},
		{"GET", "/api/stats", "evil.example:" + port, 421, "misdirected_request"},
		{"GET", "/api/stats", "evil.example", 421, "misdirected_request"},
		{"GET", "/api/stats", "localhost.evil.example:" + port, 421, "misdirected_request"},
		{"POST", "/api/stats", "evil.example", 421, "misdirected_request"},
		{"GET", "/api/boom", "evil.example", 421, "misdirected_request"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `{"notes":1}`
		if c.code != "" {
			want = fmt.Sprintf(`{"success":false,"error":{"code":%q,"message":%q,"request_id":%q}}`, c.code, http.StatusText(c.status), resp.Header.Get("X-Request-Id"))
		}
		if resp.StatusCode != c.status || strings.TrimSpace(string(body)) != want {
			t.Errorf("%s %s (Host %q): %d %s, want %d %s", c.method, c.path, c.host, resp.StatusCode, body, c.status, want)
		}
		if c.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q, want GET, HEAD", c.method, c.path, resp.Header.Get("Allow"))
		}
		if resp.Header.Get("Content-Security-Policy") != dashboard.ContentSecurityPolicy {
			t.Errorf("%s %s: Content-Security-Policy %q", c.method, c.path, resp.Header.Get("Content-Security-Policy"))
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q", c.method, c.path, resp.Header.Get("Cache-Control"))
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: a CORS header was sent", c.method, c.path)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff header", c.method, c.path)
		}
		if strings.Contains(string(body), "secret") {
			t.Errorf("%s %s: internal detail leaked: %s", c.method, c.path, body)
		}
	}
	if !strings.Contains(logs.String(), "secret internal detail") {
		t.Error("the panic's detail is not in the log")
	}
}

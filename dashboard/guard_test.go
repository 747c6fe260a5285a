package dashboard_test

import (
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
		body         string
	}{
		{"GET", "/api/stats", "", 200, `{"notes":1}`},
		{"GET", "/api/stats/", "", 200, `{"notes":1}`},
		{"POST", "/api/stats", "", 405, `{"error":"Method Not Allowed"}`},
		{"DELETE", "/api/stats", "", 405, `{"error":"Method Not Allowed"}`},
		{"GET", "/api/boom", "", 500, `{"error":"Internal Server Error"}`},
		// DNS rebinding: a loopback connection naming another host.
		{"GET", "/api/stats", "localhost:" + port, 200, `{"notes":1}`},
		{"GET", "/api/stats", "[::1]:" + port, 200, `{"notes":1}`},
		{"GET", "/api/stats", "127.0.0.1", 200, `{"notes":1}`},
		{"GET", "/api/stats", "evil.example:" + port, 421, `{"error":"Misdirected Request"}`},
		{"GET", "/api/stats", "evil.example", 421, `{"error":"Misdirected Request"}`},
		{"GET", "/api/stats", "localhost.evil.example:" + port, 421, `{"error":"Misdirected Request"}`},
		{"POST", "/api/stats", "evil.example", 421, `{"error":"Misdirected Request"}`},
		{"GET", "/api/boom", "evil.example", 421, `{"error":"Misdirected Request"}`},
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
		if resp.StatusCode != c.status || strings.TrimSpace(string(body)) != c.body {
			t.Errorf("%s %s (Host %q): %d %s, want %d %s", c.method, c.path, c.host, resp.StatusCode, body, c.status, c.body)
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

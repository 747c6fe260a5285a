package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain/memory"
)

// rawRequest opens a connection to the stack and sends the request line
// and headers of a request with a JSON body of contentLength bytes (a
// bearer when key is set), and no body: the test sends it, or not.
func (s *stack) rawRequest(t *testing.T, method, path, key string, contentLength int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		method, path, s.srv.Listener.Addr(), contentLength)
	if key != "" {
		head += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answered reports whether conn has received bytes of a response; it
// consumes one if so, so only a connection about to be dropped is asked.
func answered(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	defer conn.SetReadDeadline(time.Time{})
	n, _ := conn.Read(make([]byte, 1))
	return n > 0
}

// readResponse reads one response from conn, failing after within.
func readResponse(t *testing.T, conn net.Conn, within time.Duration) (*http.Response, map[string]any) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", within, err)
	}
	defer resp.Body.Close()
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("response body: %v", err)
	}
	return resp, env
}

// closedWithin fails unless the server closes conn within d.
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the connection open for %v", d)
			}
			return
		}
	}
}

func errorCode(env map[string]any) string {
	e, _ := env["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// TestSlowBodyIsCutOff: a body sent at 1 byte/s is refused with 408
// request_timeout once the body read timeout passes, and the connection is
// closed; a body that arrives in time on the same stack is served.
func TestSlowBodyIsCutOff(t *testing.T) {
	// Not parallel: it bounds a wall-clock time, which tests beside it on
	// the same two cores would stretch (docs/testing.md#keeping-the-suite-fast).
	s := newStack(t, stackOptions{fixedAuth: true, bodyReadTimeout: time.Second})
	body := `{"agent_id":"slow","type":"note","content":{"content":"one byte at a time"}}`
	conn := s.rawRequest(t, "POST", "/v1/memories", aliceKey, len(body))
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := range len(body) {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	resp, env := readResponse(t, conn, 5*time.Second)
	if resp.StatusCode != http.StatusRequestTimeout || errorCode(env) != "request_timeout" {
		t.Fatalf("slow body: %d %v", resp.StatusCode, env)
	}
	if took := time.Since(start); took < time.Second || took > 3*time.Second {
		t.Errorf("cut off after %v, want about 1s", took)
	}
	closedWithin(t, conn, 2*time.Second)
	s.must(http.StatusCreated, "POST", "/v1/memories", aliceKey, body)
	r := s.must(http.StatusOK, "GET", "/v1/memories?agent_id=slow", aliceKey, nil)
	if n := len(r.data()["memories"].([]any)); n != 1 {
		t.Fatalf("%d memories, want only the one sent in time", n)
	}
}

// TestRejectedBodyIsNotWaitedFor: a request refused before its body is read
// (no credential, a bad one, a declared size over the limit) is answered
// at once and its connection closed, even though the client never sends
// the body it announced; nothing waits for a body that is never coming.
func TestRejectedBodyIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, maxBody: 1 << 20, bodyReadTimeout: time.Minute})
	tests := []struct {
		name, key     string
		contentLength int
		status        int
		code          string
	}{
		{"no credential", "", 100_000, 401, "unauthorized"},
		{"bad credential", "wrong", 100_000, 401, "unauthorized"},
		{"small body, no credential", "", 10, 401, "unauthorized"},
		{"over the body limit", aliceKey, 2 << 20, 413, "payload_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := s.rawRequest(t, "POST", "/v1/memories", tt.key, tt.contentLength)
			resp, env := readResponse(t, conn, 2*time.Second)
			if resp.StatusCode != tt.status || errorCode(env) != tt.code || !resp.Close {
				t.Fatalf("%d %v (Connection: close %v), want %d %s and close", resp.StatusCode, env, resp.Close, tt.status, tt.code)
			}
			closedWithin(t, conn, 2*time.Second)
		})
	}
	// A request whose body was read keeps its connection.
	conn := s.rawRequest(t, "POST", "/v1/memories", aliceKey, 2)
	io.WriteString(conn, "{}")
	resp, _ := readResponse(t, conn, 2*time.Second)
	if resp.StatusCode != http.StatusBadRequest || resp.Close {
		t.Fatalf("invalid but complete body: %d, Connection: close %v; want 400 on a kept connection", resp.StatusCode, resp.Close)
	}
}

// TestInFlightCap: above MaxInFlight requests at once the API answers 503
// server_busy with Retry-After and the envelope (request id included),
// /healthz still answers, and a freed slot serves again.
func TestInFlightCap(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, maxInFlight: 2, bodyReadTimeout: time.Minute})
	body := `{"agent_id":"busy","type":"note","content":{"content":"held"}}`
	// Two requests whose bodies have not arrived hold both slots.
	hold := func() net.Conn { return s.rawRequest(t, "POST", "/v1/memories", aliceKey, len(body)) }
	held := []net.Conn{hold(), hold()}
	var r response
	memEventually(t, "both slots taken", func() bool {
		r = s.call("GET", "/v1/agents", bobKey, nil)
		if r.status == http.StatusServiceUnavailable {
			return true
		}
		// A held request that reached the server while this probe had a
		// slot was refused (and answered): send it again.
		for i, c := range held {
			if answered(c) {
				held[i] = hold()
			}
		}
		return false
	})
	assertFailure(t, r, 503, "server_busy", "")
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
	if limit, _ := r.details()["limit"].(float64); limit != 2 {
		t.Errorf("details %v, want limit 2", r.details())
	}
	s.must(http.StatusOK, "GET", "/healthz", "", nil)

	io.WriteString(held[0], body)
	if resp, env := readResponse(t, held[0], 5*time.Second); resp.StatusCode != http.StatusCreated {
		t.Fatalf("held request: %d %v", resp.StatusCode, env)
	}
	s.must(http.StatusOK, "GET", "/v1/agents", bobKey, nil)
}

// TestStalledReaderIsCutOff: a client that asks for a large response and
// never reads it holds its in-flight slot only until the write timeout
// (without one it would hold it for as long as it keeps the connection).
func TestStalledReaderIsCutOff(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{fixedAuth: true, maxInFlight: 1, writeTimeout: time.Second})
	// 60 drives of 128 KB (drives are not embedded, so this is quick):
	// a 7.5 MB listing, more than the socket buffers hold.
	area := strings.Repeat("x", memory.MaxTextChars-1)
	content, _ := json.Marshal(map[string]any{"drive_type": "curiosity", "focus_areas": []string{area, area, area, area}})
	in := make([]commands.MemoryInput, 60)
	for i := range in {
		in[i] = commands.MemoryInput{Type: "drive", Content: content}
	}
	if _, err := s.memCmds.CreateBatch(t.Context(), metaFor(alice), "big", in); err != nil {
		t.Fatal(err)
	}
	stalled := func() net.Conn {
		conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET /v1/memories?agent_id=big&limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", aliceKey)
		return conn
	}
	// A stalled request that arrives while a probe below holds the only
	// slot is refused at once (503): send it again until it is served.
	// Reading its status line takes a few bytes of a 7.5 MB answer.
	conn := stalled()
	defer func() { conn.Close() }()
	served := false
	memEventually(t, "the stalled request holds the slot", func() bool {
		if s.call("GET", "/v1/agents", bobKey, nil).status == http.StatusServiceUnavailable {
			return true
		}
		if served {
			return false
		}
		status := make([]byte, len("HTTP/1.1 200"))
		conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, _ := io.ReadFull(conn, status)
		conn.SetReadDeadline(time.Time{})
		switch {
		case n == len(status) && string(status[9:]) == "200":
			served = true
		case n > 0:
			conn.Close()
			conn = stalled()
		}
		return false
	})
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for s.call("GET", "/v1/agents", bobKey, nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("a client that does not read its response holds the slot")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("slot freed %v after it was seen taken", time.Since(start))
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/engram-memory/engram/client"
)

// fakeIngest is a loopback stand-in for the API, ONLY to test how the fill
// handles the answers to its batches: a real server cannot be made to
// answer 503 write_not_yet_visible on cue from here (the real answer, from
// the real API and stack with nothing applying the write, is tested by
// api's TestClientWaitsForWriteNotYetVisible). It stores every batch it
// receives except those it fails, answers as the API documents, and keeps
// the count GET /agents reports.
type fakeIngest struct {
	late map[int]bool // arrival numbers answered 503 write_not_yet_visible (stored)
	fail map[int]bool // arrival numbers answered 500 internal (not stored)

	mu       sync.Mutex
	arrivals int
	sends    map[string]int // batch body → times received
	stored   int
	// asked counts the requests carrying each consistency token; the
	// first is answered 503 not_yet_consistent, as a server still behind.
	asked map[string]int
}

func (f *fakeIngest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/memories/batch":
		body, err := io.ReadAll(r.Body)
		var req client.BatchRequest
		if err != nil || json.Unmarshal(body, &req) != nil {
			fakeFail(w, http.StatusBadRequest, "invalid_request")
			return
		}
		n := f.arrivals
		f.arrivals++
		f.sends[string(body)]++
		if f.fail[n] {
			fakeFail(w, http.StatusInternalServerError, "internal")
			return
		}
		f.stored += len(req.Memories)
		if f.late[n] {
			w.Header().Set("Engram-Consistency-Token", fmt.Sprintf("v1.%d", n+1))
			w.Header().Set("Retry-After", "1")
			fakeFail(w, http.StatusServiceUnavailable, client.CodeWriteNotYetVisible)
			return
		}
		created := make([]map[string]any, len(req.Memories))
		for i := range created {
			created[i] = map[string]any{"id": fmt.Sprintf("m-%d-%d", n, i), "type": "note",
				"embedding": map[string]any{"model": "fake", "dimensions": 4, "status": "embedded"}}
		}
		fakeData(w, http.StatusCreated, map[string]any{"memories": created})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/agents":
		if token := r.Header.Get("Engram-Consistency-Token"); token != "" {
			f.asked[token]++
			if f.asked[token] == 1 {
				w.Header().Set("Retry-After", "1")
				fakeFail(w, http.StatusServiceUnavailable, "not_yet_consistent")
				return
			}
		}
		fakeData(w, http.StatusOK, map[string]any{"agents": []map[string]any{{"agent_id": "bench", "memory_count": f.stored}}, "next_cursor": nil})
	default:
		fakeFail(w, http.StatusNotFound, "not_found")
	}
}

func fakeData(w http.ResponseWriter, status int, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": data})
}

func fakeFail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"success": false, "error": map[string]any{"code": code, "message": code}})
}

// TestFillWaitsForWriteNotYetVisible: a batch answered 503
// write_not_yet_visible is waited for, never sent again, counted as stored
// and reported, and the run goes on to the end, its count holding; any
// other error still stops the run.
func TestFillWaitsForWriteNotYetVisible(t *testing.T) {
	const n, size = 25, 5 // five batches
	for _, tc := range []struct {
		name       string
		late, fail map[int]bool
		conc       int
		wantErr    string // "" : the fill completes
	}{
		{name: "one late batch", late: map[int]bool{1: true}, conc: 1},
		{name: "two late batches, two in flight", late: map[int]bool{0: true, 3: true}, conc: 2},
		{name: "another error stops the run", fail: map[int]bool{1: true}, conc: 1, wantErr: "500 internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeIngest{late: tc.late, fail: tc.fail, sends: map[string]int{}, asked: map[string]int{}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			var log strings.Builder
			st, err := fill(t.Context(), client.New(srv.URL+"/v1", "key"), cpuMeter{}, newSynth(1),
				loadConfig{n: n, batchSize: size, ingestConc: tc.conc, agent: "bench"}, &log)

			f.mu.Lock()
			defer f.mu.Unlock()
			for body, times := range f.sends {
				if times != 1 {
					t.Errorf("a batch was sent %d times: %.80s…", times, body)
				}
			}
			if tc.wantErr != "" {
				var e *client.Error
				if err == nil || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("fill: %v, want the %s to stop it", err, tc.wantErr)
				}
				if f.arrivals == n/size {
					t.Fatalf("every batch was sent after the failure of one")
				}
				return
			}
			if err != nil {
				t.Fatalf("fill: %v\n%s", err, log.String())
			}
			if len(f.sends) != n/size || f.stored != n || st.Memories != n {
				t.Fatalf("%d batches received, %d memories stored, %d counted; want %d, %d, %d", len(f.sends), f.stored, st.Memories, n/size, n, n)
			}
			if st.NotYetVisible != len(tc.late) || strings.Count(log.String(), "503 write_not_yet_visible") != len(tc.late) {
				t.Fatalf("not_yet_visible_answers %d, want %d; log:\n%s", st.NotYetVisible, len(tc.late), log.String())
			}
			for late := range tc.late {
				// Asked again after the 503 not_yet_consistent: waited until visible.
				if token := fmt.Sprintf("v1.%d", late+1); f.asked[token] != 2 {
					t.Fatalf("token %s asked for %d times, want 2 (behind, then visible)", token, f.asked[token])
				}
			}
		})
	}
}

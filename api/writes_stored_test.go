package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-memory/engram/api"
	"github.com/engram-memory/engram/commands"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/domain/memory"
)

// writeAnswer is what the API answered one write, reduced to what a
// client relies on.
type writeAnswer struct {
	requestID string
	status    int
	code      string // the failure envelope's code; empty on success
	token     string // Engram-Consistency-Token
	retry     string // Retry-After
}

// stored reports whether the answer tells the client its write is stored:
// 201, or 503 write_not_yet_visible ("do not send it again").
func (a writeAnswer) stored() bool {
	return a.status == http.StatusCreated || a.status == http.StatusServiceUnavailable && a.code == commands.WriteNotYetVisibleCode
}

// postWrite sends one memory create as requestID; safe from any goroutine.
func (s *stack) postWrite(bearer, requestID, agentID, text string) (writeAnswer, error) {
	body, err := json.Marshal(map[string]any{"agent_id": agentID, "type": "note", "content": map[string]any{"content": text}})
	if err != nil {
		return writeAnswer{}, err
	}
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+"/v1/memories", bytes.NewReader(body))
	if err != nil {
		return writeAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("X-Request-Id", requestID)
	res, err := s.srv.Client().Do(req)
	if err != nil {
		return writeAnswer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return writeAnswer{}, err
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return writeAnswer{}, fmt.Errorf("%s: response is not JSON: %s", requestID, raw)
	}
	return writeAnswer{requestID: requestID, status: res.StatusCode, code: env.Error.Code,
		token: res.Header.Get(api.ConsistencyTokenHeader), retry: res.Header.Get("Retry-After")}, nil
}

// TestOnlyStoredWritesAreAnsweredStored: with the projections stalled,
// concurrent writers to one agent each either append (and wait in vain for
// the read models: 503 write_not_yet_visible, stored) or lose the race for
// the agent stream and wait in vain for the log head before deciding
// again, having appended nothing. The log is the judge: every write
// answered stored is in it, at the position its own consistency token
// names, and every write answered 503 write_not_stored is absent from it,
// carries no token and may be sent again (Retry-After). Both the
// embedded log and PostgreSQL's are checked.
//
// The visibility timeout is a second rather than less so that, on a loaded
// machine, the first writer's own append commits within it (a request
// whose append did not commit in time is rightly answered not stored, and
// a round of only those would show nothing).
func TestOnlyStoredWritesAreAnsweredStored(t *testing.T) {
	t.Parallel()
	onEachReadModelBackend(t, stackOptions{fixedAuth: true, visibilityTimeout: time.Second}, testOnlyStoredWritesAreAnsweredStored)
}

func testOnlyStoredWritesAreAnsweredStored(t *testing.T, s *stack) {
	s.call("POST", "/v1/memories", aliceKey, map[string]any{"agent_id": "a1", "type": "note", "content": map[string]any{"content": "before the stall"}})
	s.stopEngine()

	const writers = 6
	answers := make([]writeAnswer, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = s.postWrite(aliceKey, fmt.Sprintf("req-stall-%d", i), "a1", fmt.Sprintf("written while nothing applies it %d", i))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// What the log holds, by the request that wrote it.
	createdAt := map[string][]uint64{}
	lastAt := map[string]uint64{} // the request's last event, which its token names
	events, err := s.store.ReadAll(t.Context(), 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		lastAt[e.RequestID] = e.Position
		if e.Type == (memory.MemoryCreated{}).EventType() {
			createdAt[e.RequestID] = append(createdAt[e.RequestID], e.Position)
		}
	}

	var stored, notStored int
	for _, a := range answers {
		positions := createdAt[a.requestID]
		switch {
		case a.stored():
			stored++
			if len(positions) != 1 || a.token != "v1."+strconv.FormatUint(lastAt[a.requestID], 10) {
				t.Errorf("%s answered %d %s with token %q, but the log holds its memory at %v and its last event at %d", a.requestID, a.status, a.code, a.token, positions, lastAt[a.requestID])
			}
		case a.status == http.StatusServiceUnavailable && a.code == string(domain.KindNotStored):
			notStored++
			if len(positions) != 0 {
				t.Errorf("%s answered 503 %s, but the log holds its memory at %v", a.requestID, a.code, positions)
			}
			if a.token != "" || a.retry == "" {
				t.Errorf("%s answered 503 %s with token %q and Retry-After %q, want no token and a Retry-After", a.requestID, a.code, a.token, a.retry)
			}
		default:
			t.Errorf("%s answered %d %s, want 201, 503 %s or 503 %s", a.requestID, a.status, a.code, commands.WriteNotYetVisibleCode, domain.KindNotStored)
		}
	}
	// The first writer's append succeeds; with nothing applying it, every
	// other writer decides on the stale read model and loses the race.
	if stored == 0 || notStored == 0 {
		t.Fatalf("%d writes answered stored, %d not stored: %s; want both (the stall makes every later writer lose the race)", stored, notStored, describeAnswers(answers))
	}
}

func describeAnswers(answers []writeAnswer) string {
	var b strings.Builder
	for _, a := range answers {
		fmt.Fprintf(&b, "%s=%d %s; ", a.requestID, a.status, a.code)
	}
	return b.String()
}

package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// observedFailures records each (operation, status, error code) of a
// failure envelope the API tests saw. With ENGRAM_OPENAPI_RECORD naming a
// file, each new one is appended to it as "operation status code": the
// record of a whole run of the package is what the document's per-route
// error responses are built from (test/openapi/error_table.py; see
// docs/api.md). The validation of each response against the document is
// what fails a test on a code its operation does not document.
var observedFailures = sync.OnceValue(func() *failureRecord {
	return &failureRecord{seen: map[string]bool{}, file: os.Getenv("ENGRAM_OPENAPI_RECORD")}
})

type failureRecord struct {
	mu   sync.Mutex
	seen map[string]bool
	file string
}

// recordFailure notes the failure envelope of body, if it is one.
func recordFailure(t testing.TB, operationID string, status int, body []byte) {
	if status < 400 {
		return
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error.Code == "" {
		return
	}
	line := fmt.Sprintf("%s %d %s\n", operationID, status, env.Error.Code)
	rec := observedFailures()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.seen[line] {
		return
	}
	rec.seen[line] = true
	if rec.file == "" {
		return
	}
	f, err := os.OpenFile(rec.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(line)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Errorf("ENGRAM_OPENAPI_RECORD: %v", err)
	}
}

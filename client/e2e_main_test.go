package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// engramBin is the server binary, built once for this package's tests.
var engramBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "engram-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if engramBin, err = testserver.Build(context.Background(), dir, true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// fixture is a running server with one verified user.
type fixture struct {
	srv *testserver.Server
	c   *client.Client // authenticated as the user
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	srv := testserver.Start(t, testserver.Options{Binary: engramBin})
	key, err := testserver.RegisterUser(t.Context(), srv.APIURL(), srv.OutboxDir(), "user@example.com")
	if errors.Is(err, testserver.ErrNoSuchEndpoint) {
		t.Skipf("SKIP: engram serve does not serve the account endpoints yet: %v", err)
	}
	noErr(t, err)
	return fixture{srv: srv, c: client.New(srv.APIURL(), key)}
}

// skipIfMissing skips when the server answers that the endpoint does not
// exist: parts of the API land one by one.
func skipIfMissing(t *testing.T, err error, endpoint string) {
	t.Helper()
	var e *client.Error
	if errors.As(err, &e) && (e.Status == 404 || e.Status == 405) && strings.Contains(e.Message, "no such endpoint") ||
		errors.As(err, &e) && e.Status == 405 {
		t.Skipf("SKIP: %s is not implemented by this server yet (%v)", endpoint, err)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func asError(err error, e **client.Error) bool { return errors.As(err, e) }

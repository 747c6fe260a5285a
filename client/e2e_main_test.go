package client_test

import (
	"errors"
	"testing"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/internal/testserver"
)

// fixture is a running server with one verified user.
type fixture struct {
	srv *testserver.Server
	c   *client.Client // authenticated as the user
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	srv := testserver.Start(t, testserver.Options{})
	key := testserver.Register(t, srv.APIURL(), srv.DataDir, "user@example.com")
	return fixture{srv: srv, c: client.New(srv.APIURL(), key)}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func asError(err error, e **client.Error) bool { return errors.As(err, e) }

package stack_test

import (
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/kurrentdb/kurrentdbtest"
	"github.com/engram-memory/engram/internal/stack"
)

// TestKurrentStackSharesItsLog opens two stacks (two nodes) over one
// KurrentDB (the protocol-level test server, over TLS with credentials) with
// a data dir each: an event appended through one is applied by the other's
// projections, and lands in KurrentDB under Engram's stream prefix.
func TestKurrentStackSharesItsLog(t *testing.T) {
	ctx := t.Context()
	tlsConf, err := kurrentdbtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kurrentdbtest.Start(kurrentdbtest.Options{Username: "engram", Password: "secret", TLS: tlsConf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	es := stack.EventStore{Backend: stack.KurrentLog, URL: srv.URL(), KurrentUsername: "engram", KurrentPassword: "secret"}
	one, two := runningNode(t, stack.Config{EventStore: es}), runningNode(t, stack.Config{EventStore: es})
	res, err := one.Store.Append(ctx, "s-1", domain.ExpectNoStream, []domain.NewEvent{{Type: "Unrelated", SchemaVersion: 1, Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := two.Engine.WaitFor(ctx, res.LastPosition); err != nil {
		t.Fatalf("the second node never applied the first node's append: %v", err)
	}
	if head, err := two.Store.Head(ctx); err != nil || head != res.LastPosition {
		t.Fatalf("second node's head = %d, %v; want %d", head, err, res.LastPosition)
	}
	if !strings.Contains(strings.Join(srv.Streams(), " "), "engram.s-1") {
		t.Fatalf("KurrentDB streams = %v, want engram.s-1", srv.Streams())
	}

	bad := es
	bad.KurrentPassword = "wrong"
	if _, err := stack.Open(ctx, stack.Config{DataDir: t.TempDir(), EventStore: bad}); err == nil || !strings.Contains(err.Error(), "--event-store kurrentdb") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Open with a wrong password = %v, want a clear error that does not echo the password", err)
	}
}

package domain

import "context"

// ProjectionLeases grants one node at a time the right to apply a
// projection whose store several nodes share (a remote search index and
// its state in a shared database, a shared read model). Without it every
// node would write the shared store at its own pace, and a lagging node
// could put back what a newer event changed.
//
// A lease belongs to the node that built the ProjectionLeases (its node
// id) and lives as long as that node's session with the lease service: a
// node that dies, or is cut off, loses its leases without releasing them,
// and a waiting node acquires them as soon as the service notices.
type ProjectionLeases interface {
	// Acquire blocks until this node holds the projection's lease, or ctx
	// ends (then it returns ctx's error and holds nothing).
	Acquire(ctx context.Context, projection string) (Lease, error)
	// Holder names the node holding the projection's lease ("" when no
	// node holds it).
	Holder(ctx context.Context, projection string) (string, error)
}

// Lease is one held projection lease.
type Lease interface {
	// Lost is closed when the lease is no longer certainly held: the
	// session behind it failed a check or died, or Release was called. The
	// holder must stop writing the shared store at once.
	Lost() <-chan struct{}
	// Release gives the lease up; another node may acquire it at once.
	Release(ctx context.Context) error
}

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

// ProjectionRebuilds records the live rebuilds of leased projections in
// the store the nodes share: any node records a request, the node holding
// the projection's lease runs it, and every node reads whether the
// projection is being rebuilt (its visibility waits leave it out
// meanwhile). A projection has at most one open rebuild.
type ProjectionRebuilds interface {
	// Request opens a rebuild of the projection, requested by node, and
	// returns it with opened true; when one is open already it opens
	// nothing and returns that one with opened false.
	Request(ctx context.Context, projection, node string) (rebuild ProjectionRebuild, opened bool, err error)
	// Get returns the projection's latest rebuild (a zero value, ID "",
	// when it was never rebuilt live).
	Get(ctx context.Context, projection string) (ProjectionRebuild, error)
	// Start marks the open rebuild id as running on node (again, when the
	// node that ran it lost its lease part-way).
	Start(ctx context.Context, projection, id, node string) error
	// Finish closes the rebuild id that node runs with its outcome: the
	// events replayed, or the failure ("" when it succeeded). It closes
	// nothing when another node has started it since.
	Finish(ctx context.Context, projection, id, node string, events uint64, failure string) error
}

// RebuildState is where a projection's live rebuild stands.
type RebuildState string

// A rebuild is requested, then running on the lease holder (restarted by
// the next holder if that one loses its lease), then done or failed.
const (
	RebuildRequested RebuildState = "requested"
	RebuildRunning   RebuildState = "running"
	RebuildDone      RebuildState = "done"
	RebuildFailed    RebuildState = "failed"
)

// Open reports whether the rebuild is yet to end.
func (s RebuildState) Open() bool { return s == RebuildRequested || s == RebuildRunning }

// ProjectionRebuild is one live rebuild of a leased projection.
type ProjectionRebuild struct {
	ID          string
	State       RebuildState
	RequestedBy string
	// Node runs it (once started).
	Node   string
	Events uint64
	// Error is why it failed.
	Error string
}

// ProjectionChanges tells a node when a node (itself included) changed a
// leased projection's shared state (its checkpoint, its rebuild record,
// its lease's holder), so the node need not poll for it.
type ProjectionChanges interface {
	// Listen calls changed with the projection's name after each such
	// change is committed, and with LeaseChange(projection) when a node
	// acquired its lease, until ctx ends or listening fails. It calls
	// changed with "" each time it starts listening, since changes made
	// while it did not listen were missed.
	Listen(ctx context.Context, changed func(key string)) error
}

// LeaseChange is the key ProjectionChanges announces a new holder of the
// projection's lease by.
func LeaseChange(projection string) string { return "lease:" + projection }

package projections

// SetMaxPending bounds the events queued for one projection, so a test
// reaches the bound with a few events.
func SetMaxPending(e *Engine, events int) { e.maxPending = events }

// SnapshotInterval is how many applied events make p's next image due.
func SnapshotInterval(p *Keyword) uint64 { return p.snap.interval() }

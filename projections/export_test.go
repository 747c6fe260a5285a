package projections

// SetMaxPending bounds the events queued for one projection, so a test
// reaches the bound with a few events.
func SetMaxPending(e *Engine, events int) { e.maxPending = events }

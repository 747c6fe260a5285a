package projections

// A process that does not search an in-process index (a local capture or
// read on the command line) neither loads nor writes it: the index
// projection applies its state and checkpoint alone, which is cheap, and
// leaves the index to the next process that searches it. That process
// restores the index's image and re-reads from the state the memories of
// every event after the image's checkpoint (Load), or refills it from the
// whole state when there is no usable image; either way it finds what was
// written meanwhile (docs/snapshots.md, "Writes that load no index").
// Nothing of the index is saved by such a process, and a replay (the
// read side's catch-up at open) neither drops it nor deletes its image:
// the image stays a valid start for the state, however far the state
// moves on.

// SkipIndex makes the projection leave its in-process index alone in this
// process (see above). Call it before the projection starts, and never
// with Load: the index stays empty.
func (p *Keyword) SkipIndex() { p.skipIndex = true }

// SkipIndex makes the projection leave its in-process index alone in this
// process (see above): the agents' spaces, which only searches read, are
// not loaded either. Call it before the projection starts, and never with
// Load: the index stays empty.
func (p *Vectors) SkipIndex() { p.skipIndex = true }

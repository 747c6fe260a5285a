package vectorindex

// Background graph building.
//
// A collection that reaches the ANN threshold becomes stable and gets an
// empty graph; one indexer goroutine then inserts slots into the graph in
// order until it has caught up, and is restarted by the next write that
// appends. Searches meanwhile walk the part that is built and scan the rest
// exactly, so they are always correct and get faster as the build proceeds.
// A bulk load therefore never blocks searches for the build (~2,000 inserts/s
// at 384 dims on one core).

// indexBatch is how many inserts an indexer makes before giving its build
// slot to another collection.
const indexBatch = 512

// afterWrite applies the mode transitions a write may trigger (caller holds
// c's write lock).
func (ix *Index) afterWrite(c *collection) {
	threshold := ix.opts.annThreshold(c.dim)
	switch {
	case !c.stable:
		if threshold > 0 && c.live() >= threshold {
			c.enterStable(newGraph(ix.graphParams(c), c.dim, cap(c.ids)))
			ix.startIndexer(c)
		}
	case c.nDead > 0 && float64(c.nDead) > ix.opts.CompactFraction*float64(len(c.ids)):
		// Tombstones cost scan time and graph hops; drop them and rebuild.
		// Searches scan exactly until the new graph catches up.
		c.compact()
		c.epoch++ // stops the old indexer
		c.indexing = false
		if c.live() < threshold/2 { // hysteresis: do not flap at the threshold
			c.stable, c.dead, c.tagSlots = false, nil, nil
			return
		}
		c.graph = newGraph(ix.graphParams(c), c.dim, len(c.ids))
		ix.startIndexer(c)
	case c.graph.n < len(c.ids):
		ix.startIndexer(c)
	}
}

// startIndexer starts c's indexer unless one is running (caller holds c's
// write lock).
func (ix *Index) startIndexer(c *collection) {
	select {
	case <-ix.stop:
		return
	default:
	}
	if c.indexing {
		return
	}
	c.indexing = true
	ix.bgMu.Lock()
	if ix.bgN == 0 {
		ix.bgIdle = make(chan struct{})
	}
	ix.bgN++
	ix.bgMu.Unlock()
	go ix.runIndexer(c, c.epoch)
}

func (ix *Index) indexerDone() {
	ix.bgMu.Lock()
	ix.bgN--
	if ix.bgN == 0 {
		close(ix.bgIdle)
	}
	ix.bgMu.Unlock()
}

func (ix *Index) runIndexer(c *collection, epoch uint64) {
	defer ix.indexerDone()
	p := new(planner)
	for {
		select {
		case ix.buildSlots <- struct{}{}:
		case <-ix.stop:
			ix.abandon(c, epoch)
			return
		}
		more := ix.indexSome(c, epoch, p)
		<-ix.buildSlots
		if !more {
			return
		}
	}
}

// indexSome inserts up to indexBatch pending slots. It returns false when
// the indexer should exit: caught up, superseded (drop, compaction) or the
// index is closing.
func (ix *Index) indexSome(c *collection, epoch uint64, p *planner) bool {
	for range indexBatch {
		select {
		case <-ix.stop:
			ix.abandon(c, epoch)
			return false
		default:
		}
		c.mu.RLock()
		if c.epoch != epoch {
			c.mu.RUnlock()
			return false
		}
		g := c.graph
		if g.n == len(c.ids) {
			c.mu.RUnlock()
			if ix.finish(c, epoch) {
				return false
			}
			continue
		}
		slot := uint32(g.n)
		g.plan(p, c.vecs, slot, c.isDead(slot))
		c.mu.RUnlock()

		c.mu.Lock()
		if c.epoch == epoch {
			g.apply(p)
		}
		c.mu.Unlock()
	}
	return true
}

// finish clears the indexing flag if the graph has really caught up; a
// writer that appends afterwards sees the flag clear and starts a new one.
func (ix *Index) finish(c *collection, epoch uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return true
	}
	if c.graph.n < len(c.ids) {
		return false
	}
	c.indexing = false
	return true
}

func (ix *Index) abandon(c *collection, epoch uint64) {
	c.mu.Lock()
	if c.epoch == epoch {
		c.indexing = false
	}
	c.mu.Unlock()
}

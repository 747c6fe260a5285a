package vectorindex

import "time"

// Background graph building.
//
// A collection that reaches the ANN threshold becomes stable and gets an
// empty graph; one indexer goroutine then inserts its slots, in order, until
// it has caught up, and is restarted by the next write that appends.
//
// The indexer builds on a private copy of the graph and needs no lock for
// the work itself: in stable mode the vectors of existing slots never change
// (writers only append, and compaction writes a fresh array), so a slice
// header taken under the read lock stays valid. Every publishInterval, and
// when it has caught up, the indexer publishes its copy with a pointer swap
// under the write lock and carries on with a fresh copy. Searches therefore
// read a graph nobody mutates, walk the published part and scan the slots
// after it exactly: results never depend on how far the build has got, and
// the build never waits for searches or makes them wait.

const (
	// indexBatch is how many inserts an indexer makes between looks at the
	// collection (new slots, drop, compaction) and before giving its build
	// slot to another collection.
	indexBatch = 256
	// publishInterval bounds how stale the published graph gets during a
	// long build; each publication copies the graph (~100 bytes a node).
	publishInterval = 200 * time.Millisecond
	// writeQuiet is how long after a collection's last write its graph
	// build counts it as being written (see Options.BuildWhileWriting):
	// longer than the gap between two batches of a busy ingest (1,000
	// memories every 0.2-0.5 s), so the build does not slip into them.
	writeQuiet = time.Second
)

// afterWrite applies the mode transitions a write may trigger (caller holds
// c's write lock).
func (ix *Index) afterWrite(c *collection) {
	threshold := ix.opts.annThreshold(c.dim)
	switch {
	case !c.stable:
		if threshold > 0 && c.live() >= threshold {
			c.enterStable(newGraph(ix.graphParams(c), cap(c.ids.off)))
			if ix.opts.Quantize {
				c.quantizeErr = c.quantize(ix.opts.FloatDir)
			}
			ix.startIndexer(c)
		}
	case c.nDead > 0 && float64(c.nDead) > ix.opts.CompactFraction*float64(c.ids.len()):
		// Tombstones cost scan time and graph hops; drop them and rebuild.
		// Searches scan exactly until the new graph catches up. A failed
		// compaction (the float file) is retried by the next write.
		if c.compact(ix.opts.FloatDir) != nil {
			return
		}
		c.epoch++ // stops the old indexer
		c.indexing = false
		// Hysteresis: do not flap at the threshold. A quantised collection
		// that cannot read its floats back stays a graph collection.
		if c.live() < threshold/2 && (!c.quantized() || c.dequantize() == nil) {
			c.stable, c.dead, c.tagSlots = false, nil, nil
			return
		}
		c.graph, c.graphBase, c.caughtUp = newGraph(ix.graphParams(c), c.ids.len()), c.ids.len(), false
		ix.startIndexer(c)
	case c.graph.n < c.ids.len():
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
	go ix.runIndexer(c, c.epoch, c.graph)
}

func (ix *Index) indexerDone() {
	ix.bgMu.Lock()
	ix.bgN--
	if ix.bgN == 0 {
		close(ix.bgIdle)
	}
	ix.bgMu.Unlock()
}

// runIndexer grows a private copy of c's published graph until it covers
// every slot of c. The copy is made without a lock (published graphs are
// immutable), and only once the build has a slot to insert in: a build its
// writers hold off copies nothing meanwhile. A short-lived process (a
// command-line search that caught up a few memories and exits within
// writeQuiet) thus never copies the graph, which at 100k vectors is 10 MB
// allocated in the background while the search runs, enough to start a
// garbage collection that takes the search's spare core and makes it assist.
func (ix *Index) runIndexer(c *collection, epoch uint64, published *graph) {
	defer ix.indexerDone()
	g, copied := published, false
	p := new(planner)
	lastPublished := time.Now()
	for {
		if wait := ix.deferral(c); wait > 0 {
			select {
			case <-time.After(wait):
				continue
			case <-ix.finishing:
				continue
			case <-ix.stop:
				ix.publish(c, epoch, g, true)
				return
			}
		}
		select {
		case ix.buildSlots <- struct{}{}:
		case <-ix.stop:
			ix.publish(c, epoch, g, true)
			return
		}
		if !copied {
			g, copied = published.clone(), true
		}
		pending, current := ix.indexSome(c, epoch, g, p)
		<-ix.buildSlots
		if !current {
			return
		}
		if pending && time.Since(lastPublished) < publishInterval {
			continue
		}
		switch ix.publish(c, epoch, g, false) {
		case publishedDone:
			return
		case publishedMore:
			// g is now shared with searches: continue on a copy.
			g, lastPublished = g.clone(), time.Now()
		}
	}
}

// deferral is how long c's build should hold off for its writers.
func (ix *Index) deferral(c *collection) time.Duration {
	select {
	case <-ix.finishing:
		return 0
	default:
	}
	if ix.opts.BuildWhileWriting {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.buildDeferral(time.Now(), writeQuiet, ix.opts.maxTail(c.dim))
}

// indexSome inserts up to indexBatch pending slots into g without holding
// any lock. pending reports whether slots were left over when it looked;
// current is false once the indexer is superseded (drop, compaction, Close).
func (ix *Index) indexSome(c *collection, epoch uint64, g *graph, p *planner) (pending, current bool) {
	c.mu.RLock()
	if c.epoch != epoch {
		c.mu.RUnlock()
		return false, false
	}
	vv, start := c.view(), g.n
	end := min(c.ids.len(), start+indexBatch)
	p.dead = p.dead[:0]
	for s := start; s < end; s++ {
		p.dead = append(p.dead, c.isDead(uint32(s)))
	}
	pending = end < c.ids.len()
	c.mu.RUnlock()

	for s := start; s < end; s++ {
		select {
		case <-ix.stop:
			ix.publish(c, epoch, g, true)
			return false, false
		default:
		}
		g.insert(p, &vv, uint32(s), p.dead[s-start])
	}
	return pending, true
}

type publishResult int

const (
	publishedStale publishResult = iota // superseded: nothing published
	publishedMore                       // published; slots remain to index
	publishedDone                       // published; the graph covers every slot
)

// publish makes g the graph searches use. With last (Close) the indexer
// stops whatever remains.
func (ix *Index) publish(c *collection, epoch uint64, g *graph, last bool) publishResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return publishedStale
	}
	c.graph = g
	defer c.published.Broadcast()
	if g.n == c.ids.len() {
		c.caughtUp = true
	}
	if last || g.n == c.ids.len() {
		c.indexing = false
		return publishedDone
	}
	return publishedMore
}

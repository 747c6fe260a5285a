package vectorindex

// Mode changes of a collection: becoming stable (graph node ids = slots),
// and compaction, which drops tombstones and the graph built over them.

import "slices"

// enterStable switches to tombstone deletes so that slots can serve as graph
// node ids.
func (c *collection) enterStable(g *graph) {
	c.stable = true
	c.dead = make([]uint64, (c.ids.len()+63)/64)
	c.buildPostings()
	c.graph, c.graphBase, c.caughtUp = g, c.ids.len(), false
	c.epoch++
}

// compact drops tombstoned slots, renumbering the survivors in order. The
// graph, whose node ids were the old slots, must be rebuilt by the caller.
// The vectors move to a fresh array: an indexer still running on the old
// epoch may be reading the old one without a lock.
func (c *collection) compact() {
	vecs := make([]float32, 0, c.live()*c.dim)
	n := 0
	for s := range uint32(c.ids.len()) {
		if c.isDead(s) {
			continue
		}
		vecs = append(vecs, c.vec(s)...)
		d := uint32(n)
		if d != s {
			c.ids.off[d] = c.ids.off[s]
			c.created[d] = c.created[s]
			c.types[d] = c.types[s]
			c.tagOff[d] = c.tagOff[s]
			c.tagN[d] = c.tagN[s]
		}
		n++
	}
	c.vecs = vecs
	c.ids.off = slices.Clip(c.ids.off[:n])
	c.ids.compactIfSparse()
	c.created = slices.Clip(c.created[:n])
	c.types = slices.Clip(c.types[:n])
	c.tagOff = slices.Clip(c.tagOff[:n])
	c.tagN = slices.Clip(c.tagN[:n])
	c.slotOf.rebuild(&c.ids)
	c.nDead = 0
	c.dead = make([]uint64, (n+63)/64)
	c.graph = nil
	c.compactTags()
	c.buildPostings()
}

// compactTagsIfSparse rewrites the tag arena once most of it is garbage left
// by replaced or deleted items.
func (c *collection) compactTagsIfSparse() {
	if c.tagGarbage > 4096 && c.tagGarbage > len(c.tagArena)/2 {
		c.compactTags()
	}
}

func (c *collection) compactTags() {
	arena := make([]uint32, 0, len(c.tagArena)-c.tagGarbage)
	for s := range c.tagN {
		n := int(c.tagN[s])
		if n == 0 {
			continue
		}
		off := c.tagOff[s]
		c.tagOff[s] = uint32(len(arena))
		arena = append(arena, c.tagArena[off:int(off)+n]...)
	}
	c.tagArena, c.tagGarbage = arena, 0
}

package vectorindex

// Tag posting lists: for each tag code, the slots carrying it, ascending.
// They exist only in stable (graph) mode, where they pay off: a filter on a
// 1% tag then reads 1% of the rows instead of testing the tags of all of
// them (~6 ns a row). Stable slots never change once written (a replaced
// item gets a new slot), so the lists are append-only; tombstoned slots stay
// listed and are rejected by match until compaction rebuilds the lists.

// postingFor returns the shortest posting list among m's tags, if the
// collection keeps lists and m names a tag.
func (c *collection) postingFor(m *matcher) ([]uint32, bool) {
	if c.tagSlots == nil || len(m.tags) == 0 {
		return nil, false
	}
	var best []uint32
	for i, t := range m.tags {
		var l []uint32
		if int(t) < len(c.tagSlots) {
			l = c.tagSlots[t]
		}
		if i == 0 || len(l) < len(best) {
			best = l
		}
	}
	return best, true
}

// buildPostings indexes every slot's tags (entering stable mode, after
// compaction).
func (c *collection) buildPostings() {
	c.tagSlots = make([][]uint32, c.tagNames.len())
	for s := range uint32(c.ids.len()) {
		c.post(s)
	}
}

// post adds slot to the lists of its tags.
func (c *collection) post(slot uint32) {
	n := int(c.tagN[slot])
	for _, t := range c.tagArena[c.tagOff[slot] : int(c.tagOff[slot])+n] {
		for int(t) >= len(c.tagSlots) {
			c.tagSlots = append(c.tagSlots, nil)
		}
		c.tagSlots[t] = append(c.tagSlots[t], slot)
	}
}

func (c *collection) postingBytes() int64 {
	b := int64(cap(c.tagSlots)) * 24
	for _, l := range c.tagSlots {
		b += int64(cap(l)) * 4
	}
	return b
}

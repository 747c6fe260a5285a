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
// epoch may be reading the old one without a lock. A quantised collection
// copies its live full-precision vectors to a new float file (in dir)
// first; if that fails, nothing changes.
func (c *collection) compact(dir string) error {
	var vecs, scales []float32
	var codes []int8
	var floats *floatFile
	if c.quantized() {
		f, err := c.copyLiveFloats(dir)
		if err != nil {
			return err
		}
		floats = f
		codes, scales = make([]int8, 0, c.live()*c.dim), make([]float32, 0, c.live())
	} else {
		vecs = make([]float32, 0, c.live()*c.dim)
	}
	n := 0
	for s := range uint32(c.ids.len()) {
		if c.isDead(s) {
			continue
		}
		if floats != nil {
			codes = append(codes, c.codes.at(int(s)*c.dim, c.dim)...)
			scales = append(scales, c.scales.elem(int(s)))
		} else {
			vecs = append(vecs, c.vec(s)...)
		}
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
	if floats != nil {
		c.floats.close()
	}
	c.vecs, c.codes, c.scales, c.floats = heapSlots(vecs), heapSlots(codes), heapSlots(scales), floats
	c.vecsShared = false
	c.ids.off = slices.Clip(c.ids.off[:n])
	c.ids.compactIfSparse()
	c.created = slices.Clip(c.created[:n])
	c.types = slices.Clip(c.types[:n])
	c.tagOff = slices.Clip(c.tagOff[:n])
	c.tagN = slices.Clip(c.tagN[:n])
	c.dropIDOrder() // its slots are renumbered
	c.nDead = 0
	c.dead = make([]uint64, (n+63)/64)
	c.graph = nil
	c.compactTags()
	c.buildPostings()
	return nil
}

// quantize replaces a stable collection's float arena by int8 codes, with
// the full-precision vectors moved to a float file in dir. On error the
// collection keeps its floats.
func (c *collection) quantize(dir string) error {
	floats, err := newFloatFile(dir, c.dim)
	if err == nil {
		err = floats.write(0, c.vecs.owned())
	}
	if err != nil {
		if floats != nil {
			floats.close()
		}
		return err
	}
	n := c.ids.len()
	// The code arena keeps the float arena's headroom, in slots.
	codes, scales := make([]int8, n*c.dim, cap(c.vecs.tail)), make([]float32, n, cap(c.vecs.tail)/c.dim)
	for s := range n {
		scales[s] = quantizeInto(codes[s*c.dim:(s+1)*c.dim], c.vec(uint32(s)))
	}
	c.codes, c.scales = heapSlots(codes), heapSlots(scales)
	c.vecs, c.floats = slotArray[float32]{}, floats
	return nil
}

// dequantize reads a quantised collection's vectors back onto the heap
// (it is leaving graph mode). On error the collection stays quantised.
func (c *collection) dequantize() error {
	vecs := make([]float32, c.ids.len()*c.dim)
	if _, err := c.floats.read(0, vecs, nil); err != nil {
		return err
	}
	c.floats.close()
	c.vecs, c.codes, c.scales, c.floats = heapSlots(vecs), slotArray[int8]{}, slotArray[float32]{}, nil
	return nil
}

// copyLiveFloats writes the full-precision vectors of the live slots, in
// slot order, to a new float file in dir.
func (c *collection) copyLiveFloats(dir string) (*floatFile, error) {
	const chunk = 4096 // slots read at once
	out, err := newFloatFile(dir, c.dim)
	if err != nil {
		return nil, err
	}
	in, live := make([]float32, chunk*c.dim), make([]float32, 0, chunk*c.dim)
	var buf []byte
	written := 0
	for lo := 0; lo < c.ids.len(); lo += chunk {
		hi := min(c.ids.len(), lo+chunk)
		if buf, err = c.floats.read(lo, in[:(hi-lo)*c.dim], buf); err != nil {
			out.close()
			return nil, err
		}
		live = live[:0]
		for s := lo; s < hi; s++ {
			if !c.isDead(uint32(s)) {
				live = append(live, in[(s-lo)*c.dim:(s-lo+1)*c.dim]...)
			}
		}
		if err := out.write(written, live); err != nil {
			out.close()
			return nil, err
		}
		written += len(live) / c.dim
	}
	return out, nil
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

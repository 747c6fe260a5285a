package vectorindex

import (
	"context"
	"errors"
	"slices"
	"sync"
)

const (
	// scanBlock slots (or posting-list entries) are matched, then scored,
	// between context checks; it is also the unit of work shared among scan
	// workers.
	scanBlock = 2048
	// A scan is split across goroutines only when it reads at least this
	// many floats (~4 MiB): below that, goroutine start-up and the merge cost
	// more than the halved scan saves.
	parallelScanFloats = 1 << 20
)

// scan offers every live slot in [lo, hi) that matches m to top, by exact dot
// product. The caller holds the read lock.
//
// A filtered scan works block by block in two phases: tight loops over the
// compact metadata arrays collect the matching slots, then only those
// vectors are read. When the filter names a tag and the collection keeps
// posting lists, the shortest list replaces the walk over every row.
//
// Big scans are shared by up to workers goroutines, each with its own top-k,
// merged at the end. Workers take interleaved blocks rather than halves:
// slots are in insertion order, so a time-window filter's matches are
// contiguous and halves would leave one worker idle.
func (ix *Index) scan(ctx context.Context, c *collection, q []float32, lo, hi int, m *matcher, top *topK) error {
	workers := ix.opts.ScanWorkers
	list, useList := c.postingFor(m)
	if useList {
		a, _ := slices.BinarySearch(list, uint32(lo))
		b, _ := slices.BinarySearch(list, uint32(hi))
		list = list[a:b]
		lo, hi = 0, len(list)
	}
	part := func(lo, stride int, top *topK) error {
		s := ix.scratch.Get().(*scratch)
		defer ix.scratch.Put(s)
		return c.scanPart(ctx, q, lo, hi, stride, list, useList, m, top, s)
	}
	if workers < 2 || (hi-lo)*c.dim < parallelScanFloats {
		return part(lo, 1, top)
	}
	tops := make([]*topK, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		tops[w] = newTopK(top.k, c)
		wg.Go(func() { errs[w] = part(lo+w*scanBlock, workers, tops[w]) })
	}
	errs[0] = part(lo, workers, top)
	wg.Wait()
	for _, t := range tops[1:] {
		top.merge(t)
	}
	return errors.Join(errs...)
}

// scanPart scans the blocks that start at lo, lo+stride blocks, ... below
// hi. Positions are slots, or indexes into list when useList.
func (c *collection) scanPart(ctx context.Context, q []float32, lo, hi, stride int, list []uint32, useList bool, m *matcher, top *topK, s *scratch) error {
	unfiltered := !m.active && c.nDead == 0 && !useList
	cands := s.cands[:0]
	defer func() { s.cands = cands[:0] }() // keep a grown buffer for the next scan
	floor := top.floor()
	for start := lo; start < hi; start += stride * scanBlock {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+scanBlock, hi)
		if unfiltered {
			floor = c.scoreRange(q, start, end, top, floor)
			continue
		}
		if useList {
			cands = c.matchList(m, list[start:end], cands[:0])
		} else {
			cands = c.matchRange(m, start, end, cands[:0])
		}
		floor = c.scoreSlots(q, cands, top, floor)
	}
	return nil
}

func (c *collection) scoreRange(q []float32, lo, hi int, top *topK, floor float32) float32 {
	vv := c.view()
	for i := lo; i < hi; i++ {
		s := vv.sim(q, uint32(i))
		if s < floor {
			continue
		}
		top.offer(scored{s, uint32(i)})
		floor = top.floor()
	}
	return floor
}

func (c *collection) scoreSlots(q []float32, slots []uint32, top *topK, floor float32) float32 {
	vv := c.view()
	for _, slot := range slots {
		s := vv.sim(q, slot)
		if s < floor {
			continue
		}
		top.offer(scored{s, slot})
		floor = top.floor()
	}
	return floor
}

// matchRange appends the live slots of [lo, hi) that match m. Type and time
// are tested in one inlined loop (~1 ns a row, against ~3 ns through
// match); the rarer tag and tombstone tests then thin the survivors.
func (c *collection) matchRange(m *matcher, lo, hi int, out []uint32) []uint32 {
	types, created := c.types[lo:hi], c.created[lo:hi]
	tlo, thi := m.lo, m.hi
	if ok := m.typeOK; ok != nil {
		for i, t := range types {
			if ok[t] && created[i] >= tlo && created[i] <= thi {
				out = append(out, uint32(lo+i))
			}
		}
	} else {
		for i, t := range created {
			if t >= tlo && t <= thi {
				out = append(out, uint32(lo+i))
			}
		}
	}
	if len(m.tags) == 0 && c.nDead == 0 {
		return out
	}
	kept := out[:0]
	for _, s := range out {
		if (c.nDead == 0 || !c.isDead(s)) && (len(m.tags) == 0 || c.hasAllTags(s, m.tags)) {
			kept = append(kept, s)
		}
	}
	return kept
}

// matchList appends the slots of a posting list that match m.
func (c *collection) matchList(m *matcher, list []uint32, out []uint32) []uint32 {
	for _, s := range list {
		if c.match(m, s) {
			out = append(out, s)
		}
	}
	return out
}

package vectorindex

// slotArray is a per-slot array (a fixed number of elements per slot: the
// vectors, the codes, the scales; or the ID arena's bytes, whose IDs do
// not straddle the segments either) in two segments: base, the elements a
// collection restored from a snapshot reads in place from the snapshot's
// bytes (often a read-only mapping) and never writes, then tail, on the
// heap, where appends go. So the first write after a restore appends to an
// empty tail instead of copying the whole base to the heap (at 100k
// vectors of 100 dimensions, 40 MB and ~50 ms of CPU), and the base stays
// file-backed memory. A slot's elements never straddle the two: base holds
// whole slots.
type slotArray[T any] struct {
	base []T // read-only; nil unless restored from a snapshot
	tail []T
}

// heapSlots is an array of s alone, on the heap.
func heapSlots[T any](s []T) slotArray[T] { return slotArray[T]{tail: s} }

func (a *slotArray[T]) len() int { return len(a.base) + len(a.tail) }

// at is the n elements from element o on, which lie in one segment.
func (a *slotArray[T]) at(o, n int) []T {
	if o < len(a.base) {
		return a.base[o : o+n : o+n]
	}
	o -= len(a.base)
	return a.tail[o : o+n : o+n]
}

// elem is element i.
func (a *slotArray[T]) elem(i int) T {
	if i < len(a.base) {
		return a.base[i]
	}
	return a.tail[i-len(a.base)]
}

// reserve makes room for extra more elements in the tail.
func (a *slotArray[T]) reserve(extra int) { a.tail = grow(a.tail, extra) }

// extend appends n zero elements and returns them.
func (a *slotArray[T]) extend(n int) []T {
	a.tail = grow(a.tail, n)
	o := len(a.tail)
	a.tail = a.tail[:o+n]
	return a.tail[o : o+n : o+n]
}

// prefix is the first n elements, for a snapshot to read without the lock
// while appends go on past them.
func (a *slotArray[T]) prefix(n int) slotArray[T] {
	if n <= len(a.base) {
		return slotArray[T]{base: a.base[:n:n]}
	}
	k := n - len(a.base)
	return slotArray[T]{base: a.base, tail: a.tail[:k:k]}
}

// owned makes the array one heap segment (copying the base), for the
// writes that change elements in place (a flat collection's swap-remove)
// or read the array whole; it returns that segment.
func (a *slotArray[T]) owned() []T {
	if a.base != nil {
		all := make([]T, len(a.base), headroom(len(a.base), a.len()))
		copy(all, a.base)
		a.tail, a.base = append(all, a.tail...), nil
	}
	return a.tail
}

// heldElems is the elements held, spare capacity included.
func (a *slotArray[T]) heldElems() int { return len(a.base) + cap(a.tail) }

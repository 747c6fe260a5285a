package textindex

import (
	"maps"
	"slices"
	"unsafe"
)

// The arrays of a collection restored from an image are read in place
// from the image's bytes (a read-only mapping, snapshot.go), and never
// written: each array below is a base, the image's, then a tail on the
// heap where appends go. A write that changes an element of the base in
// place copies the base first (only the dead flags, a byte a document,
// which a delete changes); the document frequencies keep the image's
// counts a write changed apart (termCounts), and a term's postings
// written since are a second segment of its list (collection.segments).
// A collection built in process has empty bases.

// column is a per-slot or per-term array of fixed-size elements.
type column[T any] struct {
	base []T
	// baseOwned: base is a heap copy of the image's array, which writes
	// may change in place.
	baseOwned bool
	tail      []T
}

func (c *column[T]) len() int { return len(c.base) + len(c.tail) }

func (c *column[T]) at(i uint32) T {
	if int(i) < len(c.base) {
		return c.base[i]
	}
	return c.tail[int(i)-len(c.base)]
}

func (c *column[T]) push(v T) { c.tail = append(c.tail, v) }

// set changes element i, copying the image's base first.
func (c *column[T]) set(i uint32, v T) {
	if int(i) >= len(c.base) {
		c.tail[int(i)-len(c.base)] = v
		return
	}
	if !c.baseOwned {
		c.base, c.baseOwned = slices.Clone(c.base), true
	}
	c.base[i] = v
}

// lend copies what writes change in place (see collection.lent): a view
// taken by prefix keeps the old arrays.
func (c *column[T]) lend() {
	if c.baseOwned {
		c.base = slices.Clone(c.base)
	}
	c.tail = slices.Clone(c.tail)
}

// prefix is a read-only view of the first n elements, for an image
// encoded without the lock while writers append past them.
func (c *column[T]) prefix(n int) column[T] {
	if n <= len(c.base) {
		return column[T]{base: c.base[:n:n]}
	}
	k := n - len(c.base)
	return column[T]{base: c.base, tail: c.tail[:k:k]}
}

// heap makes the column one heap array (the base copied), for a
// compaction, which rewrites it in place; it returns that array.
func (c *column[T]) heap() []T {
	if len(c.base) > 0 {
		all := make([]T, 0, len(c.base)+len(c.tail))
		c.tail = append(append(all, c.base...), c.tail...)
	}
	c.base, c.baseOwned = nil, false
	return c.tail
}

// termCounts is a count per term id (the document frequencies): the
// image's array, read in place and never written, the image's terms'
// counts that writes changed since, and the counts of the terms added
// since. A write changes the counts of its own terms, so copying the
// image's array at the first write would cost the whole vocabulary.
type termCounts struct {
	base    []int32
	changed map[uint32]int32
	tail    []int32
}

func (c *termCounts) len() int { return len(c.base) + len(c.tail) }

func (c *termCounts) at(i uint32) int32 {
	if int(i) >= len(c.base) {
		return c.tail[int(i)-len(c.base)]
	}
	if v, ok := c.changed[i]; ok {
		return v
	}
	return c.base[i]
}

func (c *termCounts) push(v int32) { c.tail = append(c.tail, v) }

func (c *termCounts) set(i uint32, v int32) {
	if int(i) >= len(c.base) {
		c.tail[int(i)-len(c.base)] = v
		return
	}
	if c.changed == nil {
		c.changed = map[uint32]int32{}
	}
	c.changed[i] = v
}

// capture is a copy for an image encoded without the lock: the image's
// array shared, what writers change in place copied.
func (c *termCounts) capture() termCounts {
	return termCounts{base: c.base, changed: maps.Clone(c.changed), tail: slices.Clone(c.tail)}
}

// heap is every count in one heap array.
func (c *termCounts) heap() []int32 {
	all := make([]int32, c.len())
	for i := range all {
		all[i] = c.at(uint32(i))
	}
	return all
}

// strTable is strings laid out in an image: string i is
// bytes[off[i]:off[i+1]]. Its strings point into bytes, which the index
// keeps until it is dropped; a string handed out of the index (a hit's
// id) is cloned.
type strTable struct {
	off   []uint32
	bytes []byte
}

func (t *strTable) len() int { return max(len(t.off)-1, 0) }

func (t *strTable) at(i uint32) string {
	lo, hi := t.off[i], t.off[i+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&t.bytes[lo], hi-lo)
}

// strColumn is a per-slot string array: the image's table, then a tail.
type strColumn struct {
	base strTable
	tail []string
}

func (c *strColumn) len() int { return c.base.len() + len(c.tail) }

func (c *strColumn) at(i uint32) string {
	if n := c.base.len(); int(i) >= n {
		return c.tail[int(i)-n]
	}
	return c.base.at(i)
}

func (c *strColumn) prefix(n int) strColumn {
	if b := c.base.len(); b > 0 && n <= b {
		return strColumn{base: strTable{off: c.base.off[:n+1], bytes: c.base.bytes}}
	}
	k := n - c.base.len()
	return strColumn{base: c.base, tail: c.tail[:k:k]}
}

func (c *strColumn) heap() []string {
	if n := c.base.len(); n > 0 {
		all := make([]string, n, n+len(c.tail))
		for i := range all {
			all[i] = c.base.at(uint32(i))
		}
		c.tail = append(all, c.tail...)
	}
	c.base = strTable{}
	return c.tail
}

// listColumn is a per-slot list of values (a document's term ids, or its
// tags' ids in a table): in the image, slot i's are
// values[off[i]:off[i+1]]; then a tail of heap lists.
type listColumn[T any] struct {
	off    []uint32
	values []T
	tail   [][]T
}

func (c *listColumn[T]) baseLen() int { return max(len(c.off)-1, 0) }

func (c *listColumn[T]) len() int { return c.baseLen() + len(c.tail) }

func (c *listColumn[T]) at(i uint32) []T {
	if n := c.baseLen(); int(i) >= n {
		return c.tail[int(i)-n]
	}
	lo, hi := c.off[i], c.off[i+1]
	return c.values[lo:hi:hi]
}

// clear empties slot i's list if it is on the heap (a deleted document's:
// the image's stays, and nothing reads a dead slot's list).
func (c *listColumn[T]) clear(i uint32) {
	if n := c.baseLen(); int(i) >= n {
		c.tail[int(i)-n] = nil
	}
}

func (c *listColumn[T]) prefix(n int) listColumn[T] {
	if b := c.baseLen(); b > 0 && n <= b {
		return listColumn[T]{off: c.off[:n+1], values: c.values}
	}
	k := n - c.baseLen()
	return listColumn[T]{off: c.off, values: c.values, tail: c.tail[:k:k]}
}

// tagColumn is the per-slot tags: in the image, a list of ids in a table
// of the collection's tag names per slot; then a tail of heap lists.
type tagColumn struct {
	base  listColumn[uint32] // its tail stays empty
	names strTable
	tail  [][]string
}

func (c *tagColumn) len() int { return c.base.baseLen() + len(c.tail) }

// has reports whether slot i carries tag.
func (c *tagColumn) has(i uint32, tag string) bool {
	if n := c.base.baseLen(); int(i) >= n {
		return slices.Contains(c.tail[int(i)-n], tag)
	}
	for _, id := range c.base.at(i) {
		if c.names.at(id) == tag {
			return true
		}
	}
	return false
}

// at is slot i's tags (a new slice for an image's slot).
func (c *tagColumn) at(i uint32) []string {
	if n := c.base.baseLen(); int(i) >= n {
		return c.tail[int(i)-n]
	}
	ids := c.base.at(i)
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	for k, id := range ids {
		out[k] = c.names.at(id)
	}
	return out
}

func (c *tagColumn) clear(i uint32) {
	if n := c.base.baseLen(); int(i) >= n {
		c.tail[int(i)-n] = nil
	}
}

func (c *tagColumn) prefix(n int) tagColumn {
	if b := c.base.baseLen(); b > 0 && n <= b {
		return tagColumn{base: c.base.prefix(n), names: c.names}
	}
	k := n - c.base.baseLen()
	return tagColumn{base: c.base, names: c.names, tail: c.tail[:k:k]}
}

func (c *tagColumn) heap() [][]string {
	if n := c.base.baseLen(); n > 0 {
		all := make([][]string, n, n+len(c.tail))
		for i := range all {
			all[i] = c.at(uint32(i))
		}
		c.tail = append(all, c.tail...)
	}
	c.base, c.names = listColumn[uint32]{}, strTable{}
	return c.tail
}

// heap makes the lists one heap array of lists (the image's still in
// place), for a compaction.
func (c *listColumn[T]) heap() [][]T {
	if n := c.baseLen(); n > 0 {
		all := make([][]T, n, n+len(c.tail))
		for i := range all {
			all[i] = c.at(uint32(i))
		}
		c.tail = append(all, c.tail...)
	}
	c.off, c.values = nil, nil
	return c.tail
}

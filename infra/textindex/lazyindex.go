package textindex

import (
	"sync"
	"sync/atomic"
)

// lazyScanLimit is how many keys a lazyIndex finds by scanning before it
// builds its map.
const lazyScanLimit = 64

// lazyIndex maps strings (a collection's terms, its live documents' ids)
// to positions in the collection's arrays, with a map built only when it
// pays. A collection read from an image starts without it: a process that
// runs one search looks up a few terms, and one that catches up a few
// captures a few ids, and scanning the array for each (~0.3–0.5 ms at
// 100k) costs far less than building a 100k-entry map (~30–40 ms, most
// of an image's decode). After lazyScanLimit scans the map is built, so
// a long-running process pays at most about twice what the map alone
// would have cost. Lookups run under the collection's lock, read or
// write; changes (add, remove) under its write lock.
type lazyIndex struct {
	m       map[string]uint32 // valid once indexed is set
	indexed atomic.Bool
	scans   atomic.Int32
	once    sync.Once
}

// start gives the index its map, built (a new collection's, empty).
func (x *lazyIndex) start(m map[string]uint32) {
	x.m = m
	x.indexed.Store(true)
}

// lookup finds key by scan while fewer than lazyScanLimit lookups have
// scanned, else in the map, building it with build the first time (once:
// lookups run concurrently under a read lock).
func (x *lazyIndex) lookup(key string, scan func() (uint32, bool), build func() map[string]uint32) (uint32, bool) {
	if !x.indexed.Load() && x.scans.Add(1) <= lazyScanLimit {
		return scan()
	}
	x.once.Do(func() {
		if !x.indexed.Load() {
			x.start(build())
		}
	})
	v, ok := x.m[key]
	return v, ok
}

// add records key at v in the map, if built (else the scan finds it).
func (x *lazyIndex) add(key string, v uint32) {
	if x.indexed.Load() {
		x.m[key] = v
	}
}

// remove forgets key, if the map is built.
func (x *lazyIndex) remove(key string) {
	if x.indexed.Load() {
		delete(x.m, key)
	}
}

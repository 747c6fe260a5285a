package vectorindex

import "runtime"

// heapInUse is the live heap after two collections: what the memory budget
// test (quality_test.go) and the scale benchmark measure an index by.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC() // a second cycle also empties sync.Pools
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

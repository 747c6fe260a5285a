package vectorindex

// scratch is the per-search working memory: for a graph walk a visited set
// stamped with a generation number (so it never needs clearing between
// searches) and the two heaps; for a scan the buffer of matching slots.
// Searches take one from Index.scratch, a sync.Pool, so concurrent searches
// never share one and a busy index allocates almost nothing per search.
type scratch struct {
	visited []uint16
	gen     uint16
	cand    maxHeap
	res     minHeap
	cands   []uint32
}

// begin prepares for a walk over a graph of n nodes.
func (s *scratch) begin(n int) {
	if len(s.visited) < n {
		s.visited = make([]uint16, n+n/8)
		s.gen = 0
	}
	s.gen++
	if s.gen == 0 { // wrapped: old stamps could collide with the new one
		clear(s.visited)
		s.gen = 1
	}
	s.cand = s.cand[:0]
	s.res = s.res[:0]
}

// visit marks id and reports whether it was unvisited.
func (s *scratch) visit(id uint32) bool {
	if s.visited[id] == s.gen {
		return false
	}
	s.visited[id] = s.gen
	return true
}

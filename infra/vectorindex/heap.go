package vectorindex

// Graph traversal keeps two heaps of (similarity, node): candidates to expand,
// best first, and the bounded result set, worst first. They are hand-written
// rather than container/heap to avoid interface calls in the hot loop.

// maxHeap pops the most similar node first.
type maxHeap []scored

func (h *maxHeap) push(x scored) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim >= s[i].sim {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *maxHeap) pop() scored {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].sim > s[l].sim {
			m = r
		}
		if s[i].sim >= s[m].sim {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// minHeap pops the least similar node first; s[0] is the worst kept.
type minHeap []scored

func (h *minHeap) push(x scored) {
	*h = append(*h, x)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim <= s[i].sim {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *minHeap) pop() scored {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].sim < s[l].sim {
			m = r
		}
		if s[i].sim <= s[m].sim {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

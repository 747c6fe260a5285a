// Package textindex is Engram's in-process keyword index: one collection per
// agent, an inverted index over Porter-stemmed words and whole identifiers,
// ranked by Okapi BM25 with the collection's own statistics.
//
// It keeps no durable state: the keyword projection stores documents in
// SQLite and loads them at start, like the vector index. Searching is a
// walk over the query terms' postings with filters checked per document
// before the top k are chosen, so a filter never leaves a page short.
package textindex

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// BM25 parameters (the usual ones; the bench's baseline uses the same).
const (
	k1 = 1.2
	b  = 0.75
)

// Doc is one memory's indexed text and the metadata searches filter on.
type Doc struct {
	ID        string
	Text      string
	Type      string
	Tags      []string
	CreatedAt time.Time
}

// Index is a set of independent collections, safe for concurrent use: each
// collection has its own lock, so searches run in parallel and a write
// blocks only its own collection.
type Index struct {
	mu   sync.RWMutex
	cols map[string]*collection

	scratch sync.Pool // *scratch, so a search allocates nothing per document
}

// New returns an empty index.
func New() *Index {
	ix := &Index{cols: map[string]*collection{}}
	ix.scratch.New = func() any { return new(scratch) }
	return ix
}

// Upsert adds docs to collection, replacing documents with the same ID.
func (ix *Index) Upsert(collection string, docs ...Doc) {
	if len(docs) == 0 {
		return
	}
	c := ix.collectionFor(collection)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range docs {
		c.remove(d.ID)
		c.add(d)
	}
}

// Delete removes ids from collection; unknown ids are ignored.
func (ix *Index) Delete(collection string, ids ...string) {
	c := ix.lookup(collection)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.remove(id)
	}
	c.compactIfSparse()
}

// DropCollection removes a collection.
func (ix *Index) DropCollection(collection string) {
	ix.mu.Lock()
	delete(ix.cols, collection)
	ix.mu.Unlock()
}

// Collections lists the collections whose name starts with prefix, sorted.
func (ix *Index) Collections(prefix string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []string
	for name := range ix.cols {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Len is the number of documents in collection.
func (ix *Index) Len(collection string) int {
	c := ix.lookup(collection)
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.live
}

func (ix *Index) lookup(name string) *collection {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.cols[name]
}

func (ix *Index) collectionFor(name string) *collection {
	if c := ix.lookup(name); c != nil {
		return c
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	c := ix.cols[name]
	if c == nil {
		c = newCollection()
		ix.cols[name] = c
	}
	return c
}

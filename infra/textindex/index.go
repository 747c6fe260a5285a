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
	"math"
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

// Doc is one memory's indexed text, its searchable metadata, and the
// metadata searches filter on.
type Doc struct {
	ID   string
	Text string
	// Meta is short searchable metadata (tags, a note's speaker, ...): a
	// second field, weighted Options.MetaWeight against Text.
	Meta      string
	Type      string
	Tags      []string
	CreatedAt time.Time
}

// DefaultMetaWeight is the weight of the metadata field against the text
// field (1), tuned on the LoCoMo dev split (docs/search.md#quality): 1 → 4
// raised keyword nDCG@10 from 0.478 to 0.485, 8 only to 0.487.
const DefaultMetaWeight = 4

// Options configure an Index.
type Options struct {
	// MetaWeight weighs an occurrence of a term in Doc.Meta against one in
	// Doc.Text, in steps of 1/4 (BM25F: the term frequency is the
	// field-weighted sum). Metadata adds nothing to the document length:
	// it is a few words a document either carries or not, and counting it
	// would lower every tagged document's text scores. 0 takes
	// DefaultMetaWeight; a negative value leaves metadata out of the index.
	MetaWeight float64
}

// Index is a set of independent collections, safe for concurrent use: each
// collection has its own lock, so searches run in parallel and a write
// blocks only its own collection.
type Index struct {
	mu        sync.RWMutex
	cols      map[string]*collection
	metaUnits uint32

	scratch sync.Pool // *scratch, so a search allocates nothing per document
}

// New returns an empty index.
func New(opts Options) *Index {
	w := opts.MetaWeight
	switch {
	case w == 0:
		w = DefaultMetaWeight
	case w < 0 || math.IsNaN(w):
		w = 0
	}
	ix := &Index{cols: map[string]*collection{}, metaUnits: uint32(min(math.Round(w*fieldScale), 1<<12))}
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

// Total is the number of documents in every collection.
func (ix *Index) Total() int {
	ix.mu.RLock()
	cols := make([]*collection, 0, len(ix.cols))
	for _, c := range ix.cols {
		cols = append(cols, c)
	}
	ix.mu.RUnlock()
	total := 0
	for _, c := range cols {
		c.mu.RLock()
		total += c.live
		c.mu.RUnlock()
	}
	return total
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
		c = newCollection(ix.metaUnits)
		ix.cols[name] = c
	}
	return c
}

// contains reports whether collection holds a document with id.
func (ix *Index) contains(collection, id string) bool {
	c := ix.lookup(collection)
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.slotOfID(id)
	return ok
}

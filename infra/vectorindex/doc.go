// Package vectorindex is Engram's in-process vector index: one collection per
// (user, agent, model), unit vectors compared by dot product (= cosine).
//
// Small collections are searched by an exact scan over one contiguous
// []float32. A collection that reaches the ANN threshold (Options) gets
// an HNSW graph, built in the background while searches keep scanning; the
// part of the collection the graph does not cover yet is always scanned
// exactly, so results never depend on how far the build has got.
//
// Filters (types, tags, time bounds) are evaluated inside the search. When a
// filter is selective the search scans the matching items exactly instead of
// walking the graph, which keeps recall high under filters.
package vectorindex

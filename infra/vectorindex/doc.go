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

// Snapshots (Port.WriteSnapshot, ReadSnapshot) carry a port's whole state.
// The body is little-endian; "array" is its elements back to back,
// preceded by zero padding to an 8-byte boundary of the body, so that a
// body that starts 8-byte aligned (a mapped file) is used in place;
// "str" is a u32 length and its bytes; "strs" a u32 count of strs.
//
//	u32  version (SnapshotVersion = 2)
//	u32  scopes with forgotten memories, each: str user, str agent, strs memory ids
//	u32  collections, sorted by name, each:
//	     str  name ("user/agent/model@dimensions")
//	     u32  dim
//	     u32  flags: 1 graph collection (stable), 2 quantised, 4 graph caught up
//	     u64  slots, graph base, tombstones, ID garbage bytes, tag garbage,
//	          ID arena bytes, tag arena length
//	     strs type names, tag names (their codes are their positions)
//	     array u8  ID arena: per ID a uvarint length and the bytes
//	     array u32 ID offset per slot (0xFFFFFFFF: tombstone)
//	     array i64 created_at per slot, unix nanoseconds
//	     array u16 type code per slot
//	     array u32 tag offset per slot into the tag arena
//	     array u8  tag count per slot
//	     array u32 tag arena (each slot's tag codes, ascending)
//	     array u32 the live slots in ID order (from format 2; format 1 has none)
//	     graph collections: array u64 tombstone bitset, ⌈slots/64⌉ words;
//	          u32 tag posting lists, each: u64 length, array u32 slots
//	     quantised: array i8 codes (slots×dim), array f32 scales (slots),
//	          array f32 full-precision vectors (slots×dim)
//	     else: array f32 vectors (slots×dim, unit length)
//	     graph collections, the published HNSW graph:
//	          u32 M, layer-0 degree, ef construction, entry node, top level (-1: none)
//	          u64 nodes, upper-layer words
//	          u32 length + bytes: the level generator's state (PCG)
//	          array u8 level per node, array u32 upper offset per node,
//	          array u32 upper-layer links, array u32 layer-0 links (nodes×degree)
//
// The name → code maps are rebuilt on load. The slot table (ID → slot) is
// not: a loaded collection finds an ID by binary search in the live slots
// in ID order, read in place, until its first write builds the table.

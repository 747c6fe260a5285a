package cli

import (
	"flag"
	"os"

	"github.com/engram-memory/engram/internal/app"
)

// indexFlags registers the search index backend flags, which `serve` and
// `projections` share (a rebuild must reach the indexes the server uses).
func indexFlags(fs *flag.FlagSet, ix *app.Indexes) {
	fs.StringVar(&ix.Keyword, "keyword-index", app.Embedded, "keyword search index: embedded (in process, loaded from the data dir at start) or meilisearch")
	fs.StringVar(&ix.MeilisearchURL, "meilisearch-url", "", "Meilisearch URL for --keyword-index meilisearch, e.g. http://127.0.0.1:7700 (API key from ENGRAM_MEILISEARCH_API_KEY only)")
	fs.StringVar(&ix.Vector, "vector-index", app.Embedded, "vector search index: embedded (in process, loaded from the data dir at start) or qdrant")
	fs.StringVar(&ix.QdrantURL, "qdrant-url", "", "Qdrant gRPC URL for --vector-index qdrant, e.g. http://127.0.0.1:6334 (API key from ENGRAM_QDRANT_API_KEY only)")
	fs.BoolVar(&ix.VectorOptions.Quantize, "vector-quantize", false, "embedded vector index: hold the vectors of big agents (past the HNSW threshold) as int8 codes, rescoring the best candidates from full-precision copies in a file in the data dir (a quarter of the heap)")
}

// readIndexKeys takes the backends' API keys from the environment only,
// so they never show in a process listing or a shell history.
func readIndexKeys(ix *app.Indexes) {
	ix.MeilisearchAPIKey = os.Getenv("ENGRAM_MEILISEARCH_API_KEY")
	ix.QdrantAPIKey = os.Getenv("ENGRAM_QDRANT_API_KEY")
}

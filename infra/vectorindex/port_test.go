package vectorindex_test

import (
	"testing"

	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/vectorindex"
	"github.com/engram-memory/engram/infra/vectorindextest"
)

// The port passes the conformance suite as configured by default, and with
// every collection a quantised graph collection (threshold 2).
func TestPortConformance(t *testing.T) {
	for name, opts := range map[string]vectorindex.Options{
		"default":   {},
		"quantized": {ANNThreshold: 2, Quantize: true},
	} {
		t.Run(name, func(t *testing.T) {
			vectorindextest.Run(t, vectorindextest.Target{
				Open: func(t *testing.T) domain.VectorIndex {
					ix := vectorindex.New(opts)
					t.Cleanup(ix.Close)
					return vectorindex.NewPort(ix)
				},
			})
		})
	}
}

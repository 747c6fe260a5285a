package qdrant_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/engram-memory/engram/domain"
	engramqdrant "github.com/engram-memory/engram/infra/qdrant"
	"github.com/engram-memory/engram/infra/qdrant/qdranttest"
)

// The benchmarks measure the adapter's own cost and one gRPC round trip
// on loopback against the test server, whose brute-force scoring is part
// of the figure; they say nothing about a real Qdrant's search speed.

const benchDims = 256

var benchSpace = domain.VectorSpace{Model: "bench", Dimensions: benchDims}

func benchPoints(rng *rand.Rand, n, from int) []domain.VectorPoint {
	pts := make([]domain.VectorPoint, n)
	for i := range pts {
		v := make([]float32, benchDims)
		for j := range v {
			v[j] = rng.Float32()*2 - 1
		}
		pts[i] = domain.VectorPoint{
			MemoryID: fmt.Sprintf("m%06d", from+i), UserID: alice.UserID, AgentID: alice.AgentID, Space: benchSpace,
			TextHash: "h", Type: []string{"note", "episode", "belief"}[i%3], Tags: []string{"t"}, CreatedAt: t0, Vector: v,
		}
	}
	return pts
}

func BenchmarkUpsertVectors100(b *testing.B) {
	srv := qdranttest.Start(b, "")
	ix, err := engramqdrant.New(context.Background(), engramqdrant.Config{URL: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if err := ix.UpsertVectors(ctx, benchPoints(rng, 100, i*100)...); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkSearchVectors2000(b *testing.B) {
	srv := qdranttest.Start(b, "")
	ix, err := engramqdrant.New(context.Background(), engramqdrant.Config{URL: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	if err := ix.UpsertVectors(ctx, benchPoints(rng, 2000, 0)...); err != nil {
		b.Fatal(err)
	}
	q := domain.VectorQuery{Scope: alice, Space: benchSpace, Vector: benchPoints(rng, 1, 0)[0].Vector, Limit: 10,
		Filter: domain.IndexFilter{Types: []string{"note", "belief"}, Tags: []string{"t"}}}
	for b.Loop() {
		hits, err := ix.SearchVectors(ctx, q)
		if err != nil || len(hits) != 10 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}

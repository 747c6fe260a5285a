package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/engram-memory/engram/client"
	"github.com/engram-memory/engram/domain"
	"github.com/engram-memory/engram/infra/sqlite"
)

// recallK is the depth recall is measured at.
const recallK = 10

// tieTolerance is how close to the tenth best exact cosine a returned
// memory's exact cosine must be to count as a tie.
const tieTolerance = 1e-6

// recallReport is the vector side's recall@10 against exact search: the
// share of each query's true ten nearest stored vectors that
// POST /embeddings/similar (the vector index, graph walks included)
// returns, averaged over the sampled queries. A returned memory whose
// exact cosine ties the tenth best's (within tieTolerance) counts as one
// of the ten: synthetic notes repeat, and which of several identical
// vectors fills the last places is arbitrary.
type recallReport struct {
	Queries int     `json:"queries"`
	Recall  float64 `json:"recall_at_10"`
	Worst   float64 `json:"worst_query_recall_at_10"`
	Vectors int     `json:"vectors_scanned"`
	// ExactSeconds is the driver's time for the exact scan.
	ExactSeconds float64 `json:"exact_seconds"`
}

// measureRecall embeds queries through the server, asks its vector index
// for each one's top 10, and compares them with the exact top 10 by
// cosine over every vector the server stored for the agent, read in one
// sequential pass from the data directory (read-only, as the dashboard
// reads it while the server runs).
func measureRecall(ctx context.Context, c *client.Client, dataDir, agent, model string, queries []string) (*recallReport, error) {
	status, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	probes := make([]recallProbe, len(queries))
	for i, q := range queries {
		emb, err := c.GenerateEmbedding(ctx, q, model)
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		hits, err := c.Similar(ctx, client.SimilarRequest{AgentID: agent, Embedding: emb.Embedding, Limit: recallK})
		if err != nil {
			return nil, fmt.Errorf("similar: %w", err)
		}
		p := &probes[i]
		p.query, p.norm, p.indexed = emb.Embedding, norm(emb.Embedding), map[string]float64{}
		for _, h := range hits {
			p.indexed[h.ID] = math.Inf(-1) // until the scan finds its vector
		}
	}

	db, err := sqlite.Open(ctx, dataDir, sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	began := time.Now()
	rep := &recallReport{Queries: len(probes)}
	err = sqlite.NewVectorStore(db).LoadVectors(ctx, func(v domain.LoadedVector) error {
		m := v.Memory
		if m.UserID != status.UserID || m.AgentID != agent || m.Forgotten || v.Space.Model != model {
			return nil
		}
		rep.Vectors++
		vn := norm(v.Vector)
		if vn == 0 {
			return nil // a zero vector has no cosine; the index never returns one
		}
		for i := range probes {
			p := &probes[i]
			cos := dot(p.query, v.Vector) / (p.norm * vn)
			if _, ok := p.indexed[m.MemoryID]; ok {
				p.indexed[m.MemoryID] = cos
			}
			p.offer(m.MemoryID, cos)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.ExactSeconds = time.Since(began).Seconds()
	if rep.Vectors == 0 {
		return nil, errors.New("no stored vectors of the agent in the data directory")
	}
	rep.Worst = 1
	var sum float64
	for _, p := range probes {
		r := p.recall()
		sum += r
		rep.Worst = min(rep.Worst, r)
	}
	rep.Recall = sum / float64(len(probes))
	return rep, nil
}

// recallProbe is one query: its vector, what the index returned (with
// their exact cosines, once scanned), and the exact top k so far, best
// first.
type recallProbe struct {
	query   []float32
	norm    float64
	indexed map[string]float64
	exact   []scoredID
}

type scoredID struct {
	id    string
	score float64
}

func (p *recallProbe) offer(id string, score float64) {
	if len(p.exact) == recallK && score <= p.exact[recallK-1].score {
		return
	}
	at, _ := slices.BinarySearchFunc(p.exact, score, func(s scoredID, t float64) int {
		switch {
		case s.score > t:
			return -1
		case s.score < t:
			return 1
		}
		return 0
	})
	p.exact = slices.Insert(p.exact, at, scoredID{id, score})
	if len(p.exact) > recallK {
		p.exact = p.exact[:recallK]
	}
}

// recall is the share of the exact top k the index returned, ties with
// the last of them counting.
func (p *recallProbe) recall() float64 {
	least := p.exact[len(p.exact)-1].score - tieTolerance
	found := 0
	for _, cos := range p.indexed {
		if cos >= least {
			found++
		}
	}
	return float64(min(found, len(p.exact))) / float64(len(p.exact))
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func norm(v []float32) float64 { return math.Sqrt(dot(v, v)) }

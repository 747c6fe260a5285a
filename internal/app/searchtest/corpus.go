package searchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/engram-memory/engram/commands"
)

// Corpus generates deterministic synthetic memory texts and queries: words
// drawn from a Zipf distribution over a fixed vocabulary (the most frequent
// play stop words), 40% of a memory's words from one of 40 topics, and
// identifiers like "svc-1203-deploy" in a quarter of the memories. Queries
// are mostly topic words, sometimes an identifier, sometimes common words.
type Corpus struct {
	rng    *rand.Rand
	zipf   *rand.Zipf
	vocab  []string
	topics [][]string
	ids    [][]string
}

// NewCorpus returns a generator over a vocabulary of size words.
func NewCorpus(seed uint64, size int) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Corpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 1, uint64(size-1))}
	syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "da", "pe", "qu", "bri", "ton", "gar", "hel"}
	seen := map[string]bool{}
	for len(c.vocab) < size {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	verbs := []string{"deploy", "rollback", "restart", "migrate", "scale", "alert", "backup", "hotfix"}
	for t := range 40 {
		var words, ids []string
		for range 25 {
			words = append(words, c.vocab[200+rng.IntN(size-200)])
		}
		for i := range 12 {
			ids = append(ids, fmt.Sprintf("svc-%d-%s", t*100+i, verbs[rng.IntN(len(verbs))]))
		}
		c.topics, c.ids = append(c.topics, words), append(c.ids, ids)
	}
	return c
}

// Text is minWords..maxWords words.
func (c *Corpus) Text(minWords, maxWords int) string {
	t := c.rng.IntN(len(c.topics))
	n := minWords + c.rng.IntN(maxWords-minWords+1)
	words := make([]string, n)
	for i := range words {
		if c.rng.Float64() < 0.4 {
			words[i] = c.topics[t][c.rng.IntN(len(c.topics[t]))]
		} else {
			words[i] = c.vocab[c.zipf.Uint64()]
		}
	}
	if c.rng.Float64() < 0.25 {
		words[c.rng.IntN(n)] = c.ids[t][c.rng.IntN(len(c.ids[t]))]
	}
	return strings.Join(words, " ")
}

// Query is a search text: 60% two to five topic words, 25% an identifier
// with topic words, 15% common words only.
func (c *Corpus) Query() string {
	t := c.rng.IntN(len(c.topics))
	var words []string
	pick := func(n int, from func() string) {
		for range n {
			words = append(words, from())
		}
	}
	topic := func() string { return c.topics[t][c.rng.IntN(len(c.topics[t]))] }
	switch r := c.rng.Float64(); {
	case r < 0.6:
		pick(2+c.rng.IntN(4), topic)
	case r < 0.85:
		words = append(words, c.ids[t][c.rng.IntN(len(c.ids[t]))])
		pick(1+c.rng.IntN(2), topic)
	default:
		pick(2+c.rng.IntN(3), func() string { return c.vocab[c.zipf.Uint64()] })
	}
	return strings.Join(words, " ")
}

// Fill creates n notes in the agent through the memory commands (so each
// is embedded on write), in batches of up to 1000, with creation times one
// second apart from base.
func (s *Env) Fill(ctx context.Context, userID, agentID string, n int, c *Corpus, base time.Time) error {
	for done := 0; done < n; {
		batch := make([]commands.MemoryInput, min(1000, n-done))
		for i := range batch {
			content, _ := json.Marshal(map[string]string{"content": c.Text(8, 30)})
			batch[i] = commands.MemoryInput{Type: "notes", Content: content, Tags: []string{fmt.Sprintf("t%d", (done+i)%10)},
				CreatedAt: base.Add(time.Duration(done+i) * time.Second).UTC().Format(time.RFC3339)}
		}
		if _, err := s.Memories.CreateBatch(ctx, Meta(userID), agentID, batch); err != nil {
			return err
		}
		done += len(batch)
	}
	return nil
}

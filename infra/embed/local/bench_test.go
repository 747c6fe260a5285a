package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// benchWords is an everyday vocabulary for ~20-word benchmark texts.
var benchWords = strings.Fields(`
yesterday we deployed the new search service to production after fixing a
database migration that timed out during the nightly backup my sister adopted
two dogs from the shelter and they love running in the park every morning
Caroline started painting sunsets again and joined a photography workshop
downtown the meeting about quarterly revenue moved to Thursday because
Melanie was travelling to Berlin for a conference on renewable energy
remember to renew the TLS certificate before it expires next week and update
the dashboard configuration getUserName returns cached values deploy-v2.4.7-hotfix
`)

// benchTexts returns n deterministic texts of about 20 words.
func benchTexts(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, n)
	for i := range texts {
		words := make([]string, 18+r.IntN(5))
		for j := range words {
			words[j] = benchWords[r.IntN(len(benchWords))]
		}
		texts[i] = strings.Join(words, " ") + "."
	}
	return texts
}

// realisticModel is a generated static model the size of potion-base-8M:
// ~30k WordPiece tokens × 256 dimensions, containing the benchmark words,
// their prefixes (so unknown forms split into pieces) and filler tokens.
func realisticModel() tinyModel {
	const vocabSize, dims = 30000, 256
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "-", "?"}
	seen := map[string]bool{}
	add := func(tok string) {
		if !seen[tok] && len(vocab) < vocabSize {
			seen[tok] = true
			vocab = append(vocab, tok)
		}
	}
	for _, w := range benchWords {
		w = strings.ToLower(strings.Trim(w, ".-"))
		for k := 2; k <= len(w); k++ {
			add(w[:k])
			add("##" + w[k-1:])
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for len(vocab) < vocabSize {
		b := make([]byte, 3+r.IntN(6))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		if r.IntN(2) == 0 {
			add("##" + string(b))
		} else {
			add(string(b))
		}
	}
	rows := make([][]float32, vocabSize)
	for i := range rows {
		rows[i] = make([]float32, dims)
		for j := range rows[i] {
			rows[i][j] = float32(r.NormFloat64())
		}
	}
	return tinyModel{vocab: vocab, rows: rows}
}

func BenchmarkBuiltin(b *testing.B) {
	p, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkModel(b, p, BuiltinModelName)
}

func BenchmarkGloVeSIF(b *testing.B) {
	p, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkModel(b, p, DefaultModelName)
}

func BenchmarkStatic30kx256(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "potion-like")
	realisticModel().write(b, dir)
	p, err := New(Options{ModelDirs: []string{dir}})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkModel(b, p, "potion-like")
}

// benchmarkModel reports texts/s for single texts and batches of 256.
func benchmarkModel(b *testing.B, p *Provider, model string) {
	for _, batch := range []int{1, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			texts := benchTexts(batch * 16)
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				start := (i % 16) * batch
				i++
				if _, err := p.Embed(ctx, domain.EmbedRequest{Model: model, Texts: texts[start : start+batch]}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "texts/s")
		})
	}
}

func TestRealisticModelLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 30 MB model")
	}
	dir := filepath.Join(t.TempDir(), "potion-like")
	realisticModel().write(t, dir)
	p, err := New(Options{ModelDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "potion-like", Texts: benchTexts(3)})
	if err != nil || res.Dimensions != 256 || res.TokensUsed == 0 {
		t.Fatalf("res dims %d tokens %d err %v", res.Dimensions, res.TokensUsed, err)
	}
}

// BenchmarkBuiltinSIFOpen measures what a process pays for the built-in
// model before its first embedding: the open (no word index, no row
// decoded) and one two-word query, its words found by scanning the word
// list and the rows it uses decoded then
// (docs/snapshots.md#the-built-in-model). index adds the word index the
// open built before (and a server builds after scanIndexLookups words);
// decode-all adds the decode of every row, as the open did before that.
func BenchmarkBuiltinSIFOpen(b *testing.B) {
	for _, bc := range []struct {
		name        string
		index, rows bool
	}{{"open-and-query", false, false}, {"index", true, false}, {"decode-all", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := openSIFModel(builtinSIFManifest, builtinSIFWords, builtinSIFVectors)
				if err != nil {
					b.Fatal(err)
				}
				if bc.index {
					index, err := readWords(m.words, m.manifest.Words)
					if err != nil {
						b.Fatal(err)
					}
					m.index.Store(&index)
				}
				if bc.rows {
					if err := m.decodeAll(); err != nil {
						b.Fatal(err)
					}
				}
				if vec, _ := m.embed("heron quarry"); vec[0] == 1 {
					b.Fatal("no known word")
				}
			}
		})
	}
}

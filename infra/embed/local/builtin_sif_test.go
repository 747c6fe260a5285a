package local

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// builtinEmbeddingDigest is the SHA-256 of the built-in model's embeddings
// of every word of its vocabulary alone, then of identityTexts (float32
// bits, little-endian), as the model computed them when it decoded every
// row at load (before 2026-11-29). The model now decodes a row when a text
// first uses it (docs/embeddings.md#the-built-in-model-opens-for-free):
// every stored vector and index was built with the old decode, so a
// change of a single bit would be a silent change of every search.
const builtinEmbeddingDigest = "a215d961343aecaed5164947756effed34078d02fa84f3ab69d937d68725e4ae"

var identityTexts = []string{
	"my dog is sick", "the puppy was ill", "quarterly tax report", "she adopted a kitten",
	"Heron quarry deploy cache 76", "Ünïcödé façade naïve café", "", "zzqx unknownword", "the the the of and",
	"seeded thought number 9000 about herons quarry deploy cache 76",
}

// TestBuiltinModelEmbedsAsItAlwaysHas holds the built-in model's
// embeddings to builtinEmbeddingDigest, bit for bit.
func TestBuiltinModelEmbedsAsItAlwaysHas(t *testing.T) {
	words, err := os.ReadFile(filepath.Join("models", DefaultModelName, sifWordsFile))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for line := range strings.Lines(string(words)) {
		word, _, _ := strings.Cut(line, " ")
		texts = append(texts, word)
	}
	texts = append(texts, identityTexts...)
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: DefaultModelName, Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	var bits []byte
	for _, vec := range res.Vectors {
		for _, x := range vec {
			bits = binary.LittleEndian.AppendUint32(bits, math.Float32bits(x))
		}
	}
	sum := sha256.Sum256(bits)
	if got := hex.EncodeToString(sum[:]); got != builtinEmbeddingDigest {
		t.Fatalf("the built-in model's embeddings of its %d words and %d texts changed: digest %s, want %s", len(texts)-len(identityTexts), len(identityTexts), got, builtinEmbeddingDigest)
	}
}

package local

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/engram-memory/engram/domain"
)

// File names of a Model2Vec-style model directory.
const (
	staticWeightsFile   = "model.safetensors"
	staticTokenizerFile = "tokenizer.json"
	staticTensorName    = "embeddings"
)

// staticModel is a Model2Vec-style static embedding model: one vector per
// vocabulary token, and a text's embedding is the normalised mean of its
// tokens' vectors. Like Model2Vec, special tokens and the unknown token are
// left out of the mean, and no special tokens are added.
type staticModel struct {
	name    string
	tok     *wordPiece
	vectors matrix
	skip    []bool // by token id: carries no content
}

// loadStaticModel reads dir/model.safetensors (tensor "embeddings", shape
// [vocab, dims]) and dir/tokenizer.json. Errors are *domain.Error of kind
// invalid with field "model_dir", wrapping the cause.
func loadStaticModel(dir string) (*staticModel, error) {
	fail := func(err error) error {
		e := domain.Invalid("model_dir", "cannot load static model from %s", dir)
		e.Err = err
		return e
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fail(err)
	}
	if !info.IsDir() {
		return nil, fail(errors.New("not a directory"))
	}
	tok, err := loadTokenizerFile(filepath.Join(dir, staticTokenizerFile))
	if err != nil {
		return nil, fail(err)
	}
	vectors, err := readSafetensorsMatrix(filepath.Join(dir, staticWeightsFile), staticTensorName)
	if err != nil {
		return nil, fail(err)
	}
	if vectors.rows != tok.vocabSize || tok.maxID >= vectors.rows {
		return nil, fail(fmt.Errorf("shape mismatch: tensor %q has %d rows but the tokenizer vocab has %d tokens (largest id %d)",
			staticTensorName, vectors.rows, tok.vocabSize, tok.maxID))
	}
	for i, x := range vectors.data {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fail(fmt.Errorf("tensor %q has a non-finite value at row %d", staticTensorName, i/vectors.cols))
		}
	}
	skip := make([]bool, vectors.rows)
	for id := range tok.special {
		if int(id) < len(skip) {
			skip[id] = true
		}
	}
	return &staticModel{name: filepath.Base(filepath.Clean(dir)), tok: tok, vectors: vectors, skip: skip}, nil
}

func (m *staticModel) info() domain.EmbeddingModel {
	return domain.EmbeddingModel{
		Name:       m.name,
		Provider:   ProviderName,
		Dimensions: m.vectors.cols,
		Quality:    "Fair",
		Speed:      "Very fast",
		Cost:       "Free",
		// The directory is left out: descriptions reach API clients.
		Description: fmt.Sprintf("Model2Vec-style static model (local files): the normalised mean of "+
			"WordPiece token vectors (%d tokens × %d dimensions). Context-free, so word order is ignored.",
			m.vectors.rows, m.vectors.cols),
	}
}

// embed returns the unit vector of text and its token count (unknown tokens
// included). A text without any content tokens embeds as the unit vector e0.
func (m *staticModel) embed(text string) ([]float32, int) {
	ids := m.tok.tokenize(text, make([]int32, 0, len(text)/4+4))
	sum := make([]float64, m.vectors.cols)
	used := 0
	for _, id := range ids {
		if m.skip[id] {
			continue
		}
		for j, x := range m.vectors.row(int(id)) {
			sum[j] += float64(x)
		}
		used++
	}
	vec := make([]float32, m.vectors.cols)
	if used == 0 || !normaliseInto(vec, meanInPlace(sum, used)) {
		clear(vec)
		vec[0] = 1
	}
	return vec, len(ids)
}

// meanInPlace divides sum by n. The direction is what matters after
// normalisation, but the mean keeps intermediate values in the model's range.
func meanInPlace(sum []float64, n int) []float64 {
	inv := 1 / float64(n)
	for j := range sum {
		sum[j] *= inv
	}
	return sum
}

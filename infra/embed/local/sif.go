package local

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/engram-memory/engram/domain"
)

// File names of a SIF model directory (written by WriteSIFModel).
const (
	sifManifestFile = "sif.json"
	sifWordsFile    = "words.txt"
	sifVectorsFile  = "vectors.f16"
	sifFormat       = "engram-sif/1"
)

// SIFManifest describes a SIF model directory: word vectors plus what the
// smooth inverse frequency sentence embedding needs (Arora et al., "A
// Simple but Tough-to-Beat Baseline for Sentence Embeddings", 2017).
type SIFManifest struct {
	Format     string `json:"format"`
	Name       string `json:"name"`
	Dimensions int    `json:"dimensions"`
	Words      int    `json:"words"`
	// SourceVocabulary is the size of the vocabulary the frequency ranks
	// come from (ranks are 1-based in it), so word probabilities can be
	// estimated by Zipf's law even when only its top words are kept.
	SourceVocabulary int `json:"source_vocabulary"`
	// SIFA is a in the word weight a/(a + p(w)).
	SIFA float64 `json:"sif_a"`
	// PrincipalComponent is the unit direction removed from every sentence
	// embedding (the common discourse direction); all zeros removes
	// nothing.
	PrincipalComponent []float64 `json:"principal_component"`
	Description        string    `json:"description"`
	Source             string    `json:"source,omitempty"`
	License            string    `json:"license,omitempty"`
}

// isSIFModelDir reports whether dir holds a SIF model (rather than a
// Model2Vec-style one).
func isSIFModelDir(fsys fs.FS) bool {
	_, err := fs.Stat(fsys, sifManifestFile)
	return err == nil
}

// sifModel embeds a text as the SIF-weighted sum of its words' vectors with
// the principal component removed, normalised. Both steps are linear, so
// each word's row already holds a/(a+p(w)) · (v − (v·u)u): a text's
// embedding is the normalised sum of its known words' rows.
type sifModel struct {
	manifest SIFManifest
	index    map[string]int32
	rows     matrix
}

// loadSIFModel reads a SIF model directory. Errors are *domain.Error of
// kind invalid with field "model_dir", wrapping the cause.
func loadSIFModel(fsys fs.FS, where string) (*sifModel, error) {
	m, err := readSIFModel(fsys)
	if err != nil {
		e := domain.Invalid("model_dir", "cannot load SIF model from %s", where)
		e.Err = err
		return nil, e
	}
	return m, nil
}

func readSIFModel(fsys fs.FS) (*sifModel, error) {
	raw, err := fs.ReadFile(fsys, sifManifestFile)
	if err != nil {
		return nil, err
	}
	var man SIFManifest
	if err := json.Unmarshal(raw, &man); err != nil {
		return nil, fmt.Errorf("%s: %w", sifManifestFile, err)
	}
	if err := man.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", sifManifestFile, err)
	}
	words, ranks, err := readSIFWords(fsys, man.Words)
	if err != nil {
		return nil, err
	}
	raw, err = fs.ReadFile(fsys, sifVectorsFile)
	if err != nil {
		return nil, err
	}
	if want := man.Words * man.Dimensions * 2; len(raw) != want {
		return nil, fmt.Errorf("%s: %d bytes, want %d (%d words × %d dimensions × float16)", sifVectorsFile, len(raw), want, man.Words, man.Dimensions)
	}
	m := &sifModel{manifest: man, index: make(map[string]int32, len(words)),
		rows: matrix{rows: man.Words, cols: man.Dimensions, data: make([]float32, man.Words*man.Dimensions)}}
	harmonic := math.Log(float64(man.SourceVocabulary)) + 0.5772156649 // Σ 1/r up to the vocabulary size
	v := make([]float64, man.Dimensions)
	for i, w := range words {
		if _, dup := m.index[w]; dup {
			return nil, fmt.Errorf("%s: word %q appears twice", sifWordsFile, w)
		}
		m.index[w] = int32(i)
		var dot float64
		for j := range v {
			x := float64(float16ToFloat32(binary.LittleEndian.Uint16(raw[(i*man.Dimensions+j)*2:])))
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s: word %q has a non-finite value", sifVectorsFile, w)
			}
			v[j] = x
			dot += x * man.PrincipalComponent[j]
		}
		p := 1 / (float64(ranks[i]) * harmonic) // Zipf's law
		weight := man.SIFA / (man.SIFA + p)
		row := m.rows.row(i)
		for j := range v {
			row[j] = float32(weight * (v[j] - dot*man.PrincipalComponent[j]))
		}
	}
	return m, nil
}

func (man SIFManifest) validate() error {
	switch {
	case man.Format != sifFormat:
		return fmt.Errorf("format %q, want %q", man.Format, sifFormat)
	case man.Name == "" || strings.ContainsAny(man.Name, " /\\,"):
		return fmt.Errorf("name %q must be non-empty, without spaces, slashes or commas", man.Name)
	case man.Dimensions < 2 || man.Dimensions > 4096:
		return fmt.Errorf("dimensions %d out of range 2..4096", man.Dimensions)
	case man.Words < 1 || man.Words > 2_000_000:
		return fmt.Errorf("words %d out of range 1..2000000", man.Words)
	case man.SourceVocabulary < man.Words:
		return fmt.Errorf("source_vocabulary %d is smaller than words %d", man.SourceVocabulary, man.Words)
	case !(man.SIFA > 0 && man.SIFA < 1):
		return fmt.Errorf("sif_a %v out of range (0, 1)", man.SIFA)
	case len(man.PrincipalComponent) != man.Dimensions:
		return fmt.Errorf("principal_component has %d values, want %d", len(man.PrincipalComponent), man.Dimensions)
	}
	var norm float64
	for _, x := range man.PrincipalComponent {
		norm += x * x
	}
	if math.Abs(norm-1) > 1e-3 && norm != 0 {
		return fmt.Errorf("principal_component must be a unit vector (or zero), its norm² is %v", norm)
	}
	return nil
}

// readSIFWords reads words.txt: "word rank" per line, in matrix row order.
func readSIFWords(fsys fs.FS, n int) ([]string, []int, error) {
	raw, err := fs.ReadFile(fsys, sifWordsFile)
	if err != nil {
		return nil, nil, err
	}
	words, ranks := make([]string, 0, n), make([]int, 0, n)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		word, rankText, ok := strings.Cut(sc.Text(), " ")
		rank, err := strconv.Atoi(rankText)
		if !ok || word == "" || err != nil || rank < 1 {
			return nil, nil, fmt.Errorf("%s line %d: want \"word rank\", got %q", sifWordsFile, len(words)+1, sc.Text())
		}
		words, ranks = append(words, word), append(ranks, rank)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sifWordsFile, err)
	}
	if len(words) != n {
		return nil, nil, fmt.Errorf("%s: %d words, the manifest says %d", sifWordsFile, len(words), n)
	}
	return words, ranks, nil
}

func (m *sifModel) info() domain.EmbeddingModel {
	return domain.EmbeddingModel{
		Name:        m.manifest.Name,
		Provider:    ProviderName,
		Dimensions:  m.manifest.Dimensions,
		Quality:     "Fair",
		Speed:       "Very fast",
		Cost:        "Free",
		Description: m.manifest.Description,
	}
}

// embed returns the unit vector of text and its word count. Words are read
// like the built-in model reads them (lower-cased, accent-folded letter and
// digit runs, stop words included: SIF weighs them down itself). A text
// without any known word embeds as the unit vector e0.
func (m *sifModel) embed(text string) ([]float32, int) {
	words := splitWords(text).words
	sum := make([]float64, m.rows.cols)
	used := false
	for _, w := range words {
		i, ok := m.index[w]
		if !ok {
			continue
		}
		for j, x := range m.rows.row(int(i)) {
			sum[j] += float64(x)
		}
		used = true
	}
	vec := make([]float32, m.rows.cols)
	if !used || !normaliseInto(vec, sum) {
		clear(vec)
		vec[0] = 1
	}
	return vec, len(words)
}

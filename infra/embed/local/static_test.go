package local

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

// id returns the tiny vocabulary id of tok.
func id(t *testing.T, tok string) int {
	t.Helper()
	for i, v := range tinyVocab {
		if v == tok {
			return i
		}
	}
	t.Fatalf("%q not in tiny vocab", tok)
	return -1
}

func TestStaticModelMatchesHandComputedMeans(t *testing.T) {
	for _, dtype := range []string{"F32", "F16"} {
		t.Run(dtype, func(t *testing.T) {
			m := newTinyModel()
			m.dtype = dtype
			dir := filepath.Join(t.TempDir(), "potion-tiny")
			m.write(t, dir)
			p, err := New(Options{ModelDirs: []string{dir}})
			if err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				text       string
				wantTokens int
				rowIDs     []int // rows averaged: specials and [UNK] are skipped
			}{
				{"Hello world", 2, []int{id(t, "hello"), id(t, "world")}},
				{"playing!", 3, []int{id(t, "play"), id(t, "##ing"), id(t, "!")}},
				{"hello xylophone", 2, []int{id(t, "hello")}},
				{"the the hello", 3, []int{id(t, "the"), id(t, "the"), id(t, "hello")}},
			}
			texts := make([]string, len(tests))
			for i, tt := range tests {
				texts[i] = tt.text
			}
			res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "potion-tiny", Texts: texts})
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != "potion-tiny" || res.Dimensions != 4 {
				t.Fatalf("model %q dims %d", res.Model, res.Dimensions)
			}
			wantTotal := 0
			for i, tt := range tests {
				want := expectedMean(m.rows, tt.rowIDs...)
				assertClose(t, tt.text, res.Vectors[i], want)
				wantTotal += tt.wantTokens
			}
			if res.TokensUsed != wantTotal {
				t.Errorf("TokensUsed = %d, want %d", res.TokensUsed, wantTotal)
			}
		})
	}
}

func TestStaticModelTextWithoutContentIsE0(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	newTinyModel().write(t, dir)
	p, err := New(Options{ModelDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: "tiny", Texts: []string{"", "xylophone"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res.Vectors {
		assertClose(t, "blank/unknown", v, []float32{1, 0, 0, 0})
		_ = i
	}
}

func TestStaticModelInfo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "potion-base-8M")
	newTinyModel().write(t, dir)
	p, err := New(Options{ModelDirs: []string{dir + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	models := p.Models()
	if len(models) != 3 || models[0].Name != DefaultModelName || models[1].Name != BuiltinModelName {
		t.Fatalf("models = %+v", models)
	}
	got := models[2]
	if got.Name != "potion-base-8M" || got.Dimensions != 4 || got.Provider != "local" || got.FlexibleDimensions {
		t.Errorf("static model info = %+v", got)
	}
	if !strings.Contains(got.Description, "static") {
		t.Errorf("description %q does not say what the model is", got.Description)
	}
}

func TestStaticModelLoadErrors(t *testing.T) {
	good := newTinyModel()
	weights := func(t *testing.T, dir string, b []byte) {
		writeFile(t, filepath.Join(dir, staticWeightsFile), b)
	}
	entry := func(dtype string, shape []int, begin, end int) map[string]any {
		return map[string]any{"embeddings": map[string]any{"dtype": dtype, "shape": shape, "data_offsets": []int{begin, end}}}
	}
	n := len(tinyVocab)
	data := make([]byte, n*4*4)
	tests := []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		wantErr string
	}{
		{"missing tokenizer.json", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, staticTokenizerFile))
		}, "tokenizer.json"},
		{"missing model.safetensors", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, staticWeightsFile))
		}, "model.safetensors"},
		{"file shorter than header length", func(t *testing.T, dir string) {
			weights(t, dir, []byte{1, 2, 3})
		}, "shorter than the 8-byte header length"},
		{"header length past end of file", func(t *testing.T, dir string) {
			weights(t, dir, binary.LittleEndian.AppendUint64(nil, 1<<40))
		}, "bad safetensors header length"},
		{"header is not JSON", func(t *testing.T, dir string) {
			b := binary.LittleEndian.AppendUint64(nil, 5)
			weights(t, dir, append(b, "{oops"...))
		}, "bad safetensors header JSON"},
		{"wrong dtype", func(t *testing.T, dir string) {
			weights(t, dir, rawSafetensors(t, entry("I32", []int{n, 4}, 0, len(data)), data))
		}, "dtype I32 is not supported"},
		{"not 2-D", func(t *testing.T, dir string) {
			weights(t, dir, rawSafetensors(t, entry("F32", []int{n * 4}, 0, len(data)), data))
		}, "is not 2-D"},
		{"offsets disagree with shape", func(t *testing.T, dir string) {
			weights(t, dir, rawSafetensors(t, entry("F32", []int{n, 4}, 0, len(data)-4), data))
		}, "needs 336 bytes but data_offsets span 332"},
		{"offsets beyond data", func(t *testing.T, dir string) {
			weights(t, dir, rawSafetensors(t, entry("F32", []int{n, 4}, 4, len(data)+4), data))
		}, "outside the"},
		{"tensor name", func(t *testing.T, dir string) {
			weights(t, dir, safetensorsBytes(t, "weight", "F32", good.rows))
		}, `no tensor named "embeddings" (found weight)`},
		{"rows differ from vocab size", func(t *testing.T, dir string) {
			weights(t, dir, safetensorsBytes(t, staticTensorName, "F32", tinyRows(n-1)))
		}, "shape mismatch: tensor \"embeddings\" has 20 rows but the tokenizer vocab has 21 tokens"},
		{"non-finite weight", func(t *testing.T, dir string) {
			rows := tinyRows(n)
			rows[7][2] = float32(math.Inf(1))
			weights(t, dir, safetensorsBytes(t, staticTensorName, "F32", rows))
		}, "non-finite value at row 7"},
		{"tokenizer is not WordPiece", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, staticTokenizerFile), []byte(`{"model":{"type":"Unigram"}}`))
		}, `model type "Unigram" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "broken")
			good.write(t, dir)
			tt.breakIt(t, dir)
			_, err := New(Options{ModelDirs: []string{dir}})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			if domain.ErrorKind(err) != domain.KindInvalid {
				t.Errorf("kind = %s, want invalid", domain.ErrorKind(err))
			}
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		_, err := New(Options{ModelDirs: []string{filepath.Join(t.TempDir(), "nope")}})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist inside", err)
		}
	})
	t.Run("path is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		writeFile(t, f, nil)
		if _, err := New(Options{ModelDirs: []string{f}}); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("two models with one name", func(t *testing.T) {
		a, b := filepath.Join(t.TempDir(), "same"), filepath.Join(t.TempDir(), "same")
		good.write(t, a)
		good.write(t, b)
		if _, err := New(Options{ModelDirs: []string{a, b}}); err == nil || !strings.Contains(err.Error(), `two local models are named "same"`) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFloat16Conversion(t *testing.T) {
	tests := []struct {
		bits uint16
		want float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x3800, 0.5}, {0x0000, 0}, {0x7bff, 65504},
		{0x0001, float32(math.Ldexp(1, -24))}, // smallest subnormal
	}
	for _, tt := range tests {
		if got := float16ToFloat32(tt.bits); got != tt.want {
			t.Errorf("float16ToFloat32(%#04x) = %g, want %g", tt.bits, got, tt.want)
		}
	}
	if !math.IsInf(float64(float16ToFloat32(0x7c00)), 1) || !math.IsNaN(float64(float16ToFloat32(0x7e00))) {
		t.Error("infinity/NaN not preserved")
	}
}

func assertClose(t *testing.T, label string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", label, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s: got %v, want %v", label, got, want)
		}
	}
}

package local

import (
	"math"
	"testing"
)

// FuzzTokenizerJSON: any tokenizer.json either fails to parse with an
// error or gives a tokenizer whose ids, for any text, are ids of its vocab
// (0..maxID), the invariant the static model's row lookups rely on.
func FuzzTokenizerJSON(f *testing.F) {
	f.Add(tokenizerJSON(f, tinyVocab, 12), "Hello, unbelievable world! 世界 café")
	f.Add(tokenizerJSON(f, tinyVocab, 0), "playing played")
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":1},"max_input_chars_per_word":-1},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Whitespace"}]}}`), "a A aa")
	// Regression: an id above MaxInt32 was accepted and wrapped to a
	// negative int32 token id.
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{"[UNK]":2147483648}}}`), "x")
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		wp, err := parseTokenizerJSON(raw)
		if err != nil {
			return
		}
		if wp.maxID < 0 || wp.maxID > math.MaxInt32 {
			t.Fatalf("accepted a vocab with max id %d", wp.maxID)
		}
		for _, id := range wp.tokenize(text, nil) {
			if id < 0 || int(id) > wp.maxID {
				t.Fatalf("token id %d of %q outside the vocab's 0..%d", id, text, wp.maxID)
			}
		}
	})
}

// FuzzSafetensors: any file either fails with an error or yields a matrix
// of exactly rows×cols values, without reading past the data.
func FuzzSafetensors(f *testing.F) {
	f.Add(safetensorsBytes(f, staticTensorName, "F32", tinyRows(3)))
	f.Add(safetensorsBytes(f, staticTensorName, "F16", tinyRows(2)))
	f.Add(rawSafetensors(f, map[string]any{staticTensorName: map[string]any{"dtype": "BF16", "shape": []int{1, 2}, "data_offsets": []int{0, 4}}}, []byte{0, 0, 128, 63}))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, '{', '}'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		header, data, err := splitSafetensors(raw)
		if err != nil {
			return
		}
		for name, info := range header {
			m, err := decodeMatrix(info, data)
			if err != nil {
				continue
			}
			if m.rows <= 0 || m.cols <= 0 || len(m.data) != m.rows*m.cols {
				t.Fatalf("tensor %q: %d×%d matrix with %d values", name, m.rows, m.cols, len(m.data))
			}
			_ = m.row(m.rows - 1)
		}
	})
}

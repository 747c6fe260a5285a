package local

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// tinyModel describes a Model2Vec-style model to write with the real file
// formats: vocab[i] has id i and embedding row rows[i].
type tinyModel struct {
	vocab    []string
	rows     [][]float32
	dtype    string // "F32" (default) or "F16"
	maxChars int    // max_input_chars_per_word; 0 leaves it out (default 100)
}

// tinyVocab is a BERT-like vocabulary: specials first, word pieces, "##"
// continuations, punctuation and a CJK ideograph.
var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"hello", "world", "play", "##ing", "##ed", "##play", "cafe", "un", "##believ",
	"##able", "the", "!", ",", ".", "'", "世",
}

// tinyRows gives every token a distinct, exactly representable (also in F16)
// 4-dimensional vector.
func tinyRows(n int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = []float32{float32(i), float32(i%3) - 1, 0.5, float32(-i) / 4}
	}
	return rows
}

func newTinyModel() tinyModel {
	return tinyModel{vocab: tinyVocab, rows: tinyRows(len(tinyVocab)), maxChars: 12}
}

// write creates dir/model.safetensors and dir/tokenizer.json.
func (m tinyModel) write(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dtype := m.dtype
	if dtype == "" {
		dtype = "F32"
	}
	writeFile(t, filepath.Join(dir, staticWeightsFile), safetensorsBytes(t, staticTensorName, dtype, m.rows))
	writeFile(t, filepath.Join(dir, staticTokenizerFile), tokenizerJSON(t, m.vocab, m.maxChars))
}

// safetensorsBytes encodes one 2-D tensor in the safetensors format.
func safetensorsBytes(t testing.TB, name, dtype string, rows [][]float32) []byte {
	t.Helper()
	cols := len(rows[0])
	var data []byte
	for _, row := range rows {
		for _, x := range row {
			switch dtype {
			case "F32":
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, float32ToFloat16(x))
			default:
				t.Fatalf("test helper cannot write dtype %s", dtype)
			}
		}
	}
	header := map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		name:           map[string]any{"dtype": dtype, "shape": []int{len(rows), cols}, "data_offsets": []int{0, len(data)}},
	}
	return rawSafetensors(t, header, data)
}

// rawSafetensors frames a header and data section as safetensors does.
func rawSafetensors(t testing.TB, header any, data []byte) []byte {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, data...)
}

// tokenizerJSON writes a HuggingFace tokenizer.json like bert-base-uncased's.
func tokenizerJSON(t testing.TB, vocab []string, maxChars int) []byte {
	t.Helper()
	b, err := json.MarshalIndent(tokenizerDoc(vocab, maxChars), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tokenizerDoc is the tokenizer.json document before encoding.
func tokenizerDoc(vocab []string, maxChars int) map[string]any {
	ids := map[string]int{}
	var added []map[string]any
	for i, tok := range vocab {
		ids[tok] = i
		if len(tok) > 2 && tok[0] == '[' && tok[len(tok)-1] == ']' {
			added = append(added, map[string]any{"id": i, "content": tok, "single_word": false,
				"lstrip": false, "rstrip": false, "normalized": false, "special": true})
		}
	}
	model := map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": ids}
	if maxChars > 0 {
		model["max_input_chars_per_word"] = maxChars
	}
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true,
			"handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}}},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":   model,
	}
	return doc
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectedMean is the hand computation the static model must match: the
// L2-normalised mean of the given rows.
func expectedMean(rows [][]float32, ids ...int) []float32 {
	sum := make([]float64, len(rows[0]))
	for _, id := range ids {
		for j, x := range rows[id] {
			sum[j] += float64(x) / float64(len(ids))
		}
	}
	var norm float64
	for _, x := range sum {
		norm += x * x
	}
	out := make([]float32, len(sum))
	for j, x := range sum {
		out[j] = float32(x / math.Sqrt(norm))
	}
	return out
}

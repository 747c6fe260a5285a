package local

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// tokenizerFile is the subset of a HuggingFace tokenizer.json that a
// BERT-style WordPiece tokenizer needs. Other fields (truncation, padding,
// post_processor, decoder) do not change which tokens a text maps to once
// special tokens are skipped, so they are ignored.
type tokenizerFile struct {
	AddedTokens  []addedToken    `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type                    string         `json:"type"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    *int           `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

type addedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

// componentSpec is a normalizer or pre-tokenizer entry: a type and, for
// sequences, its children.
type componentSpec struct {
	Type          string          `json:"type"`
	CleanText     *bool           `json:"clean_text"`
	ChineseChars  *bool           `json:"handle_chinese_chars"`
	StripAccents  *bool           `json:"strip_accents"`
	Lowercase     *bool           `json:"lowercase"`
	Normalizers   []componentSpec `json:"normalizers"`
	PreTokenizers []componentSpec `json:"pretokenizers"`
}

// loadTokenizerFile parses tokenizer.json into a WordPiece tokenizer.
func loadTokenizerFile(path string) (*wordPiece, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	tok, err := parseTokenizerJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tok, nil
}

// parseTokenizerJSON parses the contents of a tokenizer.json.
func parseTokenizerJSON(raw []byte) (*wordPiece, error) {
	var tf tokenizerFile
	if err := json.Unmarshal(raw, &tf); err != nil {
		return nil, fmt.Errorf("not valid tokenizer JSON: %w", err)
	}
	return newWordPiece(tf)
}

func newWordPiece(tf tokenizerFile) (*wordPiece, error) {
	if tf.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("model type %q is not supported (want WordPiece)", tf.Model.Type)
	}
	if len(tf.Model.Vocab) == 0 {
		return nil, fmt.Errorf("WordPiece vocab is empty")
	}
	unk := tf.Model.UnkToken
	if unk == "" {
		unk = "[UNK]"
	}
	unkID, ok := tf.Model.Vocab[unk]
	if !ok {
		return nil, fmt.Errorf("unk_token %q is not in the vocab", unk)
	}
	prefix := "##"
	if tf.Model.ContinuingSubwordPrefix != nil {
		prefix = *tf.Model.ContinuingSubwordPrefix
	}
	maxChars := 100
	if tf.Model.MaxInputCharsPerWord != nil {
		maxChars = *tf.Model.MaxInputCharsPerWord
	}
	norm, err := parseNormalizer(tf.Normalizer)
	if err != nil {
		return nil, err
	}
	pre, err := parsePreTokenizer(tf.PreTokenizer)
	if err != nil {
		return nil, err
	}
	wp := &wordPiece{
		normalize:    norm,
		preTokenize:  pre,
		words:        make(map[string]int32, len(tf.Model.Vocab)),
		continuation: make(map[string]int32),
		unkID:        int32(unkID),
		maxChars:     maxChars,
		vocabSize:    len(tf.Model.Vocab),
		special:      map[int32]bool{int32(unkID): true},
	}
	for token, id := range tf.Model.Vocab {
		// Token ids are int32 from here on; a larger id would wrap.
		if id < 0 || id > math.MaxInt32 {
			return nil, fmt.Errorf("vocab token %q has id %d outside 0..%d", token, id, math.MaxInt32)
		}
		if id > wp.maxID {
			wp.maxID = id
		}
		if prefix != "" && len(token) > len(prefix) && token[:len(prefix)] == prefix {
			wp.continuation[token[len(prefix):]] = int32(id)
		} else {
			wp.words[token] = int32(id)
		}
	}
	for _, name := range []string{"[CLS]", "[SEP]", "[PAD]", "[MASK]"} {
		if id, ok := tf.Model.Vocab[name]; ok {
			wp.special[int32(id)] = true
		}
	}
	for _, at := range tf.AddedTokens {
		if at.Special {
			wp.special[int32(at.ID)] = true
		}
	}
	return wp, nil
}

// parseNormalizer supports BertNormalizer, Lowercase, StripAccents, the
// Unicode normal forms, and Sequences of them; null means no normalisation.
func parseNormalizer(raw json.RawMessage) (func(string) string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return func(s string) string { return s }, nil
	}
	var spec componentSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("bad normalizer: %w", err)
	}
	return buildNormalizer(spec)
}

func buildNormalizer(spec componentSpec) (func(string) string, error) {
	switch spec.Type {
	case "BertNormalizer":
		return bertNormalizer{
			cleanText:    boolOr(spec.CleanText, true),
			chineseChars: boolOr(spec.ChineseChars, true),
			lowercase:    boolOr(spec.Lowercase, true),
			// strip_accents null means "follow lowercase", as in BERT.
			stripAccents: boolOr(spec.StripAccents, boolOr(spec.Lowercase, true)),
		}.normalize, nil
	case "Lowercase":
		return lowerOnly, nil
	case "StripAccents":
		return stripAccents, nil
	case "NFC", "NFD", "NFKC", "NFKD":
		return unicodeForm(spec.Type), nil
	case "Sequence":
		steps := make([]func(string) string, 0, len(spec.Normalizers))
		for _, child := range spec.Normalizers {
			f, err := buildNormalizer(child)
			if err != nil {
				return nil, err
			}
			steps = append(steps, f)
		}
		return func(s string) string {
			for _, f := range steps {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported", spec.Type)
}

// parsePreTokenizer supports BertPreTokenizer, Whitespace, WhitespaceSplit
// and Sequences of them; null means split at white space.
func parsePreTokenizer(raw json.RawMessage) (func(string, []string) []string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return splitWhitespace, nil
	}
	var spec componentSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("bad pre_tokenizer: %w", err)
	}
	return buildPreTokenizer(spec)
}

func buildPreTokenizer(spec componentSpec) (func(string, []string) []string, error) {
	switch spec.Type {
	case "BertPreTokenizer":
		return splitBert, nil
	case "Whitespace":
		return splitWordsAndPunctuation, nil
	case "WhitespaceSplit":
		return splitWhitespace, nil
	case "Sequence":
		steps := make([]func(string, []string) []string, 0, len(spec.PreTokenizers))
		for _, child := range spec.PreTokenizers {
			f, err := buildPreTokenizer(child)
			if err != nil {
				return nil, err
			}
			steps = append(steps, f)
		}
		return func(s string, dst []string) []string {
			pieces := []string{s}
			for _, f := range steps {
				var next []string
				for _, p := range pieces {
					next = f(p, next)
				}
				pieces = next
			}
			return append(dst, pieces...)
		}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer type %q is not supported", spec.Type)
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

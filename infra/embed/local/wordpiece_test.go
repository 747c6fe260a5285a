package local

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWordPieceTokenize(t *testing.T) {
	dir := t.TempDir()
	newTinyModel().write(t, dir)
	wp, err := loadTokenizerFile(filepath.Join(dir, staticTokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"lower-cases and splits punctuation", "Hello, World!", []string{"hello", ",", "world", "!"}},
		{"strips accents", "Café", []string{"cafe"}},
		{"continuation pieces", "PLAYING played", []string{"play", "##ing", "play", "##ed"}},
		{"several continuations", "unbelievable", []string{"un", "##believ", "##able"}},
		{"unknown word", "xylophone", []string{"[UNK]"}},
		{"partly coverable word is wholly unknown", "playx", []string{"[UNK]"}},
		{"apostrophe is its own word", "world's", []string{"world", "'", "[UNK]"}},
		{"word at the length limit", "playplayplay", []string{"play", "##play", "##play"}},
		{"word over the length limit", "playplayplayplay", []string{"[UNK]"}},
		{"control characters dropped, tabs are spaces", "hello\tworld\x00\u200b!", []string{"hello", "world", "!"}},
		{"CJK ideographs become words", "hello世界", []string{"hello", "世", "[UNK]"}},
		{"special-looking text is not special", "[SEP] hello", []string{"[UNK]", "[UNK]", "[UNK]", "hello"}},
		{"blank", "  \n ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, id := range wp.tokenize(tt.text, nil) {
				got = append(got, tinyVocab[id])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("tokenize(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		name  string
		split func(string, []string) []string
		text  string
		want  []string
	}{
		{"bert", splitBert, "a-b  c$d é.", []string{"a", "-", "b", "c", "$", "d", "é", "."}},
		{"whitespace regex", splitWordsAndPunctuation, "don't stop_me now!!", []string{"don", "'", "t", "stop_me", "now", "!!"}},
		{"whitespace split", splitWhitespace, " a-b\tc ", []string{"a-b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.split(tt.text, nil); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTokenizerConfigErrors(t *testing.T) {
	set := func(section, key string, value any) func(map[string]any) {
		return func(doc map[string]any) { doc[section].(map[string]any)[key] = value }
	}
	tests := []struct {
		name    string
		edit    func(map[string]any)
		wantErr string
	}{
		{"BPE model", set("model", "type", "BPE"), `model type "BPE"`},
		{"unk missing from vocab", set("model", "unk_token", "<unk>"), `unk_token "<unk>"`},
		{"empty vocab", set("model", "vocab", map[string]int{}), "vocab is empty"},
		{"negative id", set("model", "vocab", map[string]int{"[UNK]": 0, "x": -1}), "outside 0..2147483647"},
		{"id wider than int32", set("model", "vocab", map[string]int{"[UNK]": 0, "x": 1 << 31}), "outside 0..2147483647"},
		{"unsupported normalizer", set("normalizer", "type", "Precompiled"), `normalizer type "Precompiled"`},
		{"unsupported pre-tokenizer", set("pre_tokenizer", "type", "Metaspace"), `pre_tokenizer type "Metaspace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tokenizerDoc(tinyVocab, 0)
			tt.edit(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), staticTokenizerFile)
			writeFile(t, path, b)
			if _, err := loadTokenizerFile(path); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), staticTokenizerFile)
		writeFile(t, path, []byte("{"))
		if _, err := loadTokenizerFile(path); err == nil || !strings.Contains(err.Error(), "not valid tokenizer JSON") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNormalizerSequence(t *testing.T) {
	f, err := parseNormalizer([]byte(`{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f("Ångström CAFÉ"); got != "angstrom cafe" {
		t.Errorf("got %q", got)
	}
	cased, err := parseNormalizer([]byte(`{"type":"BertNormalizer","lowercase":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cased("Café"); got != "Café" {
		t.Errorf("cased BertNormalizer changed %q", got)
	}
}

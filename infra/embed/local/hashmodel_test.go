package local

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/engram-memory/engram/domain"
)

func embedBuiltin(t *testing.T, texts ...string) domain.EmbedResult {
	t.Helper()
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Embed(context.Background(), domain.EmbedRequest{Model: BuiltinModelName, Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func cosine(a, b []float32) float64 { return dot(a, b) }

func TestBuiltinVectorsAreUnitLength(t *testing.T) {
	texts := []string{
		"", "   ", "!!!", "the of and", "Hey!", "🙂🙂", "deploy-v2.4.7-hotfix",
		"Der schnelle braune Fuchs springt über den faulen Hund", "東京でラーメンを食べた",
		strings.Repeat("a long text about databases and migrations ", 500),
	}
	res := embedBuiltin(t, texts...)
	if res.Dimensions != 384 || len(res.Vectors) != len(texts) {
		t.Fatalf("dims %d, %d vectors", res.Dimensions, len(res.Vectors))
	}
	for i, v := range res.Vectors {
		if len(v) != 384 {
			t.Fatalf("%q: len %d", texts[i], len(v))
		}
		if n := math.Sqrt(dot(v, v)); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm %v", texts[i], n)
		}
	}
}

func TestBuiltinBlankTextIsReservedE0(t *testing.T) {
	res := embedBuiltin(t, "", " \n\t", "— … !!", "database migration", "the of and")
	for _, i := range []int{0, 1, 2} {
		if res.Vectors[i][0] != 1 {
			t.Errorf("text %d: want e0, got v[0]=%v", i, res.Vectors[i][0])
		}
	}
	// Non-blank texts never touch dimension 0, so they are orthogonal to e0;
	// a text of only stop words still embeds (on its stop words).
	for _, i := range []int{3, 4} {
		if res.Vectors[i][0] != 0 {
			t.Errorf("text %d uses the reserved dimension: %v", i, res.Vectors[i][0])
		}
	}
}

func TestBuiltinIsDeterministic(t *testing.T) {
	text := "Deterministic: the same text gives the same vector, across providers and calls."
	a := embedBuiltin(t, text, text)
	b := embedBuiltin(t, text)
	for i := range a.Vectors[0] {
		if a.Vectors[0][i] != a.Vectors[1][i] || a.Vectors[0][i] != b.Vectors[0][i] {
			t.Fatalf("dimension %d differs", i)
		}
	}
}

func TestBuiltinRanking(t *testing.T) {
	tests := []struct {
		name, query, related, unrelated string
	}{
		{"paraphrase with shared words",
			"the database migration timed out during deployment",
			"Deploying failed: our database migrations time out",
			"I baked a chocolate cake for my sister's birthday"},
		{"inflections match through stemming",
			"she adopted two dogs",
			"Adopting a dog was the best decision",
			"The weather forecast says rain tomorrow"},
		{"identifier part matches the whole identifier",
			"which hotfix was deployed",
			"rolled out deploy-v2.4.7-hotfix to production",
			"rolled out the new logo to the website"},
		{"camelCase identifier matches its words",
			"user name lookup",
			"getUserName returns the cached value",
			"the cache is warmed at startup"},
		{"typo still matches through character n-grams",
			"photografy class",
			"I joined a photography workshop",
			"I joined a gym"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := embedBuiltin(t, tt.query, tt.related, tt.unrelated)
			rel, unrel := cosine(res.Vectors[0], res.Vectors[1]), cosine(res.Vectors[0], res.Vectors[2])
			if rel <= unrel {
				t.Errorf("related %.3f <= unrelated %.3f", rel, unrel)
			}
		})
	}
}

func TestBuiltinTokenCountIsWordCount(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"Hello, world!", 2},
		{"the deploy-v2.4.7-hotfix went out", 8}, // the + 5 identifier parts + went + out
		{"Caroline's", 2},
	}
	for _, tt := range tests {
		if got := embedBuiltin(t, tt.text).TokensUsed; got != tt.want {
			t.Errorf("tokens(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestBuiltinDescriptionIsHonest(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Models()[1]
	if m.Name != "engram-hash-384" || m.Dimensions != 384 || m.Provider != "local" {
		t.Fatalf("built-in model = %+v", m)
	}
	for _, phrase := range []string{"feature hashing", "not a neural network", "bigrams", "character 3/4-grams"} {
		if !strings.Contains(m.Description, phrase) {
			t.Errorf("description lacks %q: %s", phrase, m.Description)
		}
	}
}

func TestBuiltinIrregularFormsMeetTheirBase(t *testing.T) {
	// The question uses the base form, the memory the past tense: without
	// the irregular forms they share no content word at all.
	res := embedBuiltin(t, "where did she go with the children",
		"She went to the zoo with her child",
		"She stayed at the zoo with her dog")
	rel, unrel := cosine(res.Vectors[0], res.Vectors[1]), cosine(res.Vectors[0], res.Vectors[2])
	if rel <= unrel+0.1 {
		t.Errorf("went/child vs go/children %.3f, unrelated %.3f", rel, unrel)
	}
	for form, base := range map[string]string{"went": "go", "gone": "go", "bought": "buy", "children": "child", "people": "person"} {
		if irregularBase()[form] != base {
			t.Errorf("irregularBase()[%q] = %q, want %q", form, irregularBase()[form], base)
		}
	}
	for _, w := range []string{"bit", "born", "ground", "may", "read"} {
		if b, ok := irregularBase()[w]; ok {
			t.Errorf("ambiguous form %q is mapped to %q", w, b)
		}
	}
}

func TestBuiltinTimeWordsShareAFeature(t *testing.T) {
	// A when-question is closer to the memory that says when than to one
	// that says where.
	res := embedBuiltin(t, "when did Maria adopt the puppy",
		"Maria adopted a puppy from the shelter on Friday",
		"Maria adopted a puppy from the shelter in Dallas")
	if when, where := cosine(res.Vectors[0], res.Vectors[1]), cosine(res.Vectors[0], res.Vectors[2]); when <= where+0.05 {
		t.Errorf("with a time word %.3f, with a place %.3f", when, where)
	}
	for w, want := range map[string]bool{"when": true, "yesterday": true, "friday": true, "2023": true, "1999": true,
		"may": false, "2150": false, "20x3": false, "week": true, "weekly": false} {
		if got := isTimeWord(w); got != want {
			t.Errorf("isTimeWord(%q) = %v, want %v", w, got, want)
		}
	}
}

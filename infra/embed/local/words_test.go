package local

import (
	"slices"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		text      string
		words     []string
		compounds []string
	}{
		{"deploy-v2.4.7-hotfix", []string{"deploy", "v2", "4", "7", "hotfix"}, []string{"deploy-v2.4.7-hotfix"}},
		{"call getUserName() now", []string{"call", "get", "user", "name", "now"}, []string{"getusername"}},
		{"HTTPServer", []string{"http", "server"}, []string{"httpserver"}},
		{"see src/infra/embed.go.", []string{"see", "src", "infra", "embed", "go"}, []string{"src/infra/embed.go"}},
		{"mail bob@example.com", []string{"mail", "bob", "example", "com"}, []string{"bob@example.com"}},
		{"snake_case_name", []string{"snake", "case", "name"}, []string{"snake_case_name"}},
		{"Caroline's dog", []string{"caroline", "s", "dog"}, nil},
		{"yes,no", []string{"yes", "no"}, nil},
		{"Crème Brûlée!", []string{"creme", "brulee"}, nil},
		{"(hello)", []string{"hello"}, nil},
		{"— … !!", nil, nil},
	}
	for _, tt := range tests {
		got := splitWords(tt.text)
		if !slices.Equal(got.words, tt.words) || !slices.Equal(got.compounds, tt.compounds) {
			t.Errorf("splitWords(%q) = %q + %q, want %q + %q", tt.text, got.words, got.compounds, tt.words, tt.compounds)
		}
	}
}

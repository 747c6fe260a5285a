package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLocalConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"embeddings": {"provider": "openai", "model": "text-embedding-3-large"}, "cloud": {"base_url": "https://example.com/v1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		args          []string
		env           map[string]string
		provider, mdl string
	}{
		{"config fills unset flags", nil, nil, "openai", "text-embedding-3-large"},
		{"env wins over config", nil, map[string]string{"ENGRAM_EMBED_MODEL": "text-embedding-3-small"}, "openai", "text-embedding-3-small"},
		{"flag wins over config", []string{"--embed-provider", "local", "--embed-model", "engram-hash-384"}, nil, "local", "engram-hash-384"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := serveFlags(&cfg)
			if err := parseFlags(fs, c.args); err != nil {
				t.Fatal(err)
			}
			if err := applyLocalConfig(fs, path); err != nil {
				t.Fatal(err)
			}
			if cfg.EmbedProvider != c.provider || cfg.EmbedModel != c.mdl {
				t.Fatalf("provider %q model %q, want %q %q", cfg.EmbedProvider, cfg.EmbedModel, c.provider, c.mdl)
			}
		})
	}
}

func TestLocalConfigMissingAndMalformed(t *testing.T) {
	var cfg serveConfig
	fs := serveFlags(&cfg)
	if err := applyLocalConfig(fs, filepath.Join(t.TempDir(), "none.json")); err != nil || cfg.EmbedProvider != "local" {
		t.Fatalf("missing file: err %v, provider %q", err, cfg.EmbedProvider)
	}
	bad := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(bad, []byte(`{"embeddings": `), 0o600)
	if err := applyLocalConfig(fs, bad); err == nil {
		t.Fatal("malformed config.json accepted")
	}
}

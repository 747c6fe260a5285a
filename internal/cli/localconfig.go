package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
)

// localConfig is the part of ~/.engram/config.json the server reads
// (docs/decisions.md#local-configuration).
type localConfig struct {
	Embeddings struct {
		Provider string `json:"provider"`
		Model    string `json:"model"`
	} `json:"embeddings"`
}

// applyLocalConfig fills the embedding flags that neither the command line
// nor the environment set from the config file at path, so the precedence
// is flag > ENGRAM_* variable > config.json > built-in default. A missing
// file is fine; a malformed one is an error naming it.
func applyLocalConfig(flags *flag.FlagSet, path string) error {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var cfg localConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, value := range map[string]string{"embed-provider": cfg.Embeddings.Provider, "embed-model": cfg.Embeddings.Model} {
		if value == "" || set[name] {
			continue
		}
		if err := flags.Set(name, value); err != nil {
			return fmt.Errorf("%s: embeddings: %w", path, err)
		}
	}
	return nil
}

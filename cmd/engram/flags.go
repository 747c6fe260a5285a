package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// parseFlags parses args, then fills every flag not given on the command
// line from its environment twin ENGRAM_<FLAG> (dashes become underscores):
// flags win over the environment, the environment over defaults.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env, v, e)
			}
		}
	})
	return err
}

func envName(flagName string) string {
	return "ENGRAM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// engramHome is ~/.engram, or ENGRAM_HOME.
func engramHome() string {
	if h := os.Getenv("ENGRAM_HOME"); h != "" {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".engram"
	}
	return filepath.Join(home, ".engram")
}

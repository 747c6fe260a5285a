package maketest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// make test trims Go's build cache to the GOCACHE_MAX_MB megabytes used
// most recently (an entry's modification time is its last use): over a
// cache of five 300 kB outputs, each with its action entry, used one hour
// apart, a 1 MB bound keeps the three newest.
func TestTrimGoCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	cases := []struct {
		maxMB string
		kept  []string
	}{
		{"1", []string{"00/e1-a", "00/e1-d", "00/e2-a", "00/e2-d", "00/e3-a", "00/e3-d", "README"}},
		{"0", []string{"00/e1-a", "00/e1-d", "00/e2-a", "00/e2-d", "00/e3-a", "00/e3-d", "00/e4-a", "00/e4-d", "00/e5-a", "00/e5-d", "README"}},
	}
	for _, c := range cases {
		t.Run("GOCACHE_MAX_MB="+c.maxMB, func(t *testing.T) {
			cache := t.TempDir()
			if err := os.Mkdir(filepath.Join(cache, "00"), 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(rel string, size int, used time.Time) {
				path := filepath.Join(cache, rel)
				if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(path, used, used); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now()
			write("README", 100, now.Add(-100*time.Hour)) // not an entry: go's own
			for i, e := range []string{"e1", "e2", "e3", "e4", "e5"} {
				used := now.Add(-time.Duration(i) * time.Hour)
				write("00/"+e+"-a", 100, used)
				write("00/"+e+"-d", 300_000, used)
			}
			cmd := exec.CommandContext(t.Context(), "make", "-s", "-C", filepath.Join("..", ".."), "trim-go-cache", "GOCACHE_MAX_MB="+c.maxMB)
			cmd.Env = append(os.Environ(), "GOCACHE="+cache)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make trim-go-cache: %v\n%s", err, out)
			}
			var kept []string
			err := filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(cache, path)
					kept = append(kept, filepath.ToSlash(rel))
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(kept)
			if !slices.Equal(kept, c.kept) {
				t.Errorf("kept %q, want %q", kept, c.kept)
			}
		})
	}
}

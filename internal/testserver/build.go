package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// MainPackage is the import path of the engram binary.
const MainPackage = "github.com/engram-memory/engram/cmd/engram"

// Build compiles the engram binary into dir and returns its path. race
// builds it with the race detector, which tests want and benchmarks do not.
// It must run inside the module (any directory of the repository).
func Build(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "engram")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, MainPackage)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", MainPackage, err)
	}
	return bin, nil
}

//go:build !unix

package vectorindex

import (
	"os"
	"time"
)

// mapFile reads path where there is no mmap.
func mapFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }

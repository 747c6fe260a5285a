//go:build !unix

package vectorindex

import "os"

// mapFile reads path where there is no mmap.
func mapFile(path string) ([]byte, func(), error) {
	data, err := os.ReadFile(path)
	return data, func() {}, err
}

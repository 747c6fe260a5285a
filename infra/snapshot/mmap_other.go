//go:build !unix

package snapshot

import "os"

// mapFile reads path whole where mapping is not supported.
func mapFile(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

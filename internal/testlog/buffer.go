// Package testlog holds what tests use to read the log output of code
// that writes it from several goroutines (a server's handlers, a router's
// subscribers, a child process's stderr copier).
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that concurrent writers and a reading test may
// share.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe to read while a process writes to it
// (an exec.Cmd's Stdout or Stderr is written by a goroutine of its own).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

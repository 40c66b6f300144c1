package testkit

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

// LogLines copies r, a process's output, to t's log line by line and sends
// each line on lines (dropping lines nobody reads in time); done is closed
// after the last. Wait for done before t ends: t.Log after a test has
// completed panics.
func LogLines(t testing.TB, r io.Reader) (lines <-chan string, done <-chan struct{}) {
	sent, finished := make(chan string, 1000), make(chan struct{})
	go func() {
		defer close(finished)
		defer close(sent)
		s := bufio.NewScanner(r)
		for s.Scan() {
			t.Log(s.Text())
			select {
			case sent <- s.Text():
			default:
			}
		}
	}()
	return sent, finished
}

// WaitForLine reports whether a line containing text comes on lines within
// timeout (false once lines is closed without it).
func WaitForLine(lines <-chan string, text string, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return false
			}
			if strings.Contains(line, text) {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers and a reader at once (run with -race): every write lands whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if s := b.String(); len(s) != 8*100*2 || strings.Count(s, "ab") != 800 {
		t.Fatalf("%d bytes, %d pairs; want 1600 bytes, 800 pairs", len(s), strings.Count(s, "ab"))
	}
}

package archive

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/joulebench/joulebench/archive/record"
)

// Reading requests.jsonl holds each record once (issue 46: at a million
// requests the records are 300 MB): the batches' records are joined into
// one list sized once from the file's size, each batch freed as it is
// joined, not copied, all of them, into a list of the sum at the end. So
// what the read allocates, less what the decoding of the lines takes
// (the same lines read again, one at a time), is about one list of the
// records: at most 1.15 (it was 2.3).
func TestReadRequestsHoldsRecordsOnce(t *testing.T) {
	if raceOn {
		t.Skip("the race detector allocates beside the reader")
	}
	const n = 100000
	var file bytes.Buffer
	for i := range n {
		fmt.Fprintf(&file, `{"id":"r%06d","phase":"formal","sent_at":%d.5,"first_token_at":%d.75,"done_at":%d.9,"output_tokens":3,"ok":true}`+"\n", i, 1717405200+i, 1717405200+i, 1717405200+i)
	}
	data := file.Bytes()
	allocated := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	var rows []record.Request
	all := allocated(func() {
		d := decodeRequests(bytes.NewReader(data), RequestsFile)
		if d.err != nil {
			t.Fatal(d.err)
		}
		rows = d.rows
	})
	if len(rows) != n || rows[n-1].ID != fmt.Sprintf("r%06d", n-1) || rows[0].ID != "r000000" {
		t.Fatalf("%d rows read", len(rows))
	}
	// The decoding alone: each line into the same record.
	lines := bytes.Split(data[:len(data)-1], []byte("\n"))
	decoding := allocated(func() {
		var j jsonLine
		var r record.Request
		for _, l := range lines {
			r = record.Request{}
			if err := j.decodeRequest(l, &r); err != nil {
				t.Fatal(err)
			}
		}
	})
	list := float64(n) * float64(unsafe.Sizeof(record.Request{}))
	if got := (float64(all) - float64(decoding)) / list; got > 1.15 {
		t.Errorf("reading %d requests allocated %.2f lists of them beside the decoding (%d bytes, %d decoding), want at most 1.15", n, got, all, decoding)
	}
}

package archive

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// LoadDataPacked reads the same requests as LoadData, their token times
// packed and bit for bit the same (issue 46): on the sample run, and on
// the run with a line the token_times fast path leaves to the library
// (a time in exponent form).
func TestLoadDataPackedSameRequests(t *testing.T) {
	dir := sampleCopy(t)
	path := filepath.Join(dir, RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// 1717405210.27 = 1.71740521027e9: the same float64.
	b = []byte(strings.Replace(string(b), `"token_times":[1717405210.27,`, `"token_times":[1.71740521027e9,`, 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{sampleRun, dir} {
		want, err := LoadData(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := LoadDataPacked(d)
		if err != nil {
			t.Fatal(err)
		}
		packed := 0
		for i := range got.Requests {
			g, w := &got.Requests[i], &want.Requests[i]
			if g.TokenTimesPacked() {
				packed++
			}
			ts := g.Times(nil)
			if len(ts) != len(w.TokenTimes) {
				t.Fatalf("%s: request %s: %d times packed, %d read", d, w.ID, len(ts), len(w.TokenTimes))
			}
			for k := range ts {
				if math.Float64bits(ts[k]) != math.Float64bits(w.TokenTimes[k]) {
					t.Errorf("%s: request %s: time %d is %v packed, %v read", d, w.ID, k, ts[k], w.TokenTimes[k])
				}
			}
		}
		if packed == 0 {
			t.Errorf("%s: no request's times packed", d)
		}
		got.UnpackTokenTimes()
		if err := got.TimesErr(); err != nil {
			t.Fatal(err)
		}
		if err := got.CloseTimes(); err != nil { // the store: all LoadData's run lacks
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: unpacked, the run differs from LoadData's", d)
		}
	}
}

// A packed run is held to the same rules, with the same messages: a
// token time out of order.
func TestLoadDataPackedSameErrors(t *testing.T) {
	dir := sampleCopy(t)
	path := filepath.Join(dir, RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// f2's times 1717405210.25, 1717405211.25, 1717405212.25: the second
	// before the first.
	b = []byte(strings.Replace(string(b), `[1717405210.25,1717405211.25,`, `[1717405210.25,1717405210.24,`, 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, werr := LoadData(dir)
	_, gerr := LoadDataPacked(dir)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("LoadData: %v\nLoadDataPacked: %v\nwant the same error", werr, gerr)
	}
	if !strings.Contains(gerr.Error(), "token_times[1]") {
		t.Errorf("error %q does not name token_times[1]", gerr)
	}
}

// A request whose token times are packed is written as it was read.
func TestRequestLinePacked(t *testing.T) {
	run, err := LoadDataPacked(sampleRun)
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadData(sampleRun)
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Requests {
		got, err := appendRequestLine(nil, &run.Requests[i])
		if err != nil {
			t.Fatal(err)
		}
		w, err := appendRequestLine(nil, &want.Requests[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(w) {
			t.Errorf("request %d packed writes\n%s\nwant\n%s", i, got, w)
		}
	}
}

// LoadDataPacked holds no token time in memory (issue 46): they are
// written to a temporary file and read back when asked for. The live
// heap of a run of 10,000 requests with 200 times each less that of the
// same run with 2 times each is what the 1,980,000 more times take: at
// most 0.25 byte a time beyond the file's blocks the store keeps (packed
// in memory they took 3, as float64 8).
func TestLoadDataPackedHoldsNoTimes(t *testing.T) {
	if raceOn {
		t.Skip("the race detector allocates beside the reader")
	}
	live := func(times int) (uint64, int) {
		dir := filepath.Join(t.TempDir(), "run")
		writeBenchRun(t, dir, 20, 10000, times)
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		run, err := LoadDataPacked(dir)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		n := 0
		for i := range run.Requests {
			n += len(run.Requests[i].Times(nil))
		}
		if err := run.TimesErr(); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(run)
		return ms.HeapAlloc - min(before, ms.HeapAlloc), n
	}
	few, nFew := live(2)
	many, nMany := live(200)
	if nFew != 2*10000 || nMany != 200*10000 {
		t.Fatalf("%d and %d times read back, want 20,000 and 2,000,000", nFew, nMany)
	}
	// Beside them: the blocks of the file the store keeps for the next
	// read (record.TimesStore: 8 of 256 KiB at most), whatever the run.
	const blocks = 8 << 18
	if per := (float64(many) - float64(few) - blocks) / float64(nMany-nFew); per > 0.25 {
		t.Errorf("the run holds %.2f bytes a token time beside the store's blocks (%d bytes live with 200 a request, %d with 2), want at most 0.25", per, many, few)
	}
}

package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

const sampleRun = "testdata/sample-run"

func TestLoadSampleRun(t *testing.T) {
	run, err := Load(sampleRun)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.FormatVersion != 1 || !m.Simulated || m.Status != record.StatusComplete || m.Labels["scenario"] != "sample" {
		t.Errorf("meta: %+v", m)
	}
	if len(m.Hardware.Devices) != 2 || m.Hardware.Devices[0].ID != "gpu0" || m.Hardware.Devices[1].Method != "counter" {
		t.Errorf("devices: %+v", m.Hardware.Devices)
	}
	const t0 = 1717405200
	for _, s := range []record.Stage{{Name: "baseline", Start: 0, End: 4}, {Name: "startup", Start: 4, End: 10}, {Name: "warmup", Start: 8, End: 10}, {Name: "formal", Start: 10, End: 20}, {Name: "release", Start: 20, End: 30}} {
		got, ok := m.StageByName(s.Name)
		if !ok || got.Start != t0+s.Start || got.End != t0+s.End {
			t.Errorf("stage %s = %+v, %v", s.Name, got, ok)
		}
	}
	for _, e := range []record.Event{{Name: "engine_started", T: 4}, {Name: "engine_ready", T: 7.6}, {Name: "engine_exited", T: 21.3}, {Name: "memory_released", T: 22}, {Name: "release_complete", T: 25}} {
		if got, ok := m.EventByName(e.Name); !ok || math.Abs(got-(t0+e.T)) > 1e-6 {
			t.Errorf("event %s = %v, %v", e.Name, got, ok)
		}
	}
	if len(run.Power) != 62 || len(run.Requests) != 9 || len(run.EngineMetrics) != 15 || run.Results != nil {
		t.Fatalf("sample run: %d power rows, %d requests, %d engine metrics, results %v",
			len(run.Power), len(run.Requests), len(run.EngineMetrics), run.Results)
	}

	// The fixture's own promises (testdata/README.md): each counter equals
	// the trapezoid of power, and the stage energies are as tabled.
	last := map[string]record.PowerSample{}
	counter := map[string]map[float64]float64{"gpu0": {}, "gpu1": {}}
	for i, s := range run.Power {
		if !s.HasEnergy || s.MemUsedBytes <= 0 {
			t.Errorf("row %d lacks energy or memory: %+v", i, s)
		}
		if p, ok := last[s.Device]; ok {
			trapz := (p.PowerW + s.PowerW) / 2 * (s.T - p.T)
			if math.Abs(s.EnergyJ-p.EnergyJ-trapz) > 1e-6 {
				t.Errorf("row %d: counter step %v, trapezoid %v", i, s.EnergyJ-p.EnergyJ, trapz)
			}
		}
		last[s.Device] = s
		counter[s.Device][s.T-t0] = s.EnergyJ
	}
	for _, c := range []struct {
		a, b       float64
		gpu0, gpu1 float64
	}{{0, 4, 240, 200}, {4, 10, 1015, 955}, {8, 10, 535, 515}, {10, 20, 3135, 3035}, {20, 30, 743, 640}, {20, 25, 443, 390}} {
		if g0, g1 := counter["gpu0"][c.b]-counter["gpu0"][c.a], counter["gpu1"][c.b]-counter["gpu1"][c.a]; g0 != c.gpu0 || g1 != c.gpu1 {
			t.Errorf("energy %v..%v: %v, %v; want %v, %v", c.a, c.b, g0, g1, c.gpu0, c.gpu1)
		}
	}
	tokens, failed := 0, 0
	for _, r := range run.Requests {
		if !r.OK {
			failed++
			if r.OutputTokens != 0 || r.Error == "" {
				t.Errorf("failed request %s: %+v", r.ID, r)
			}
			continue
		}
		sum := 0
		for _, c := range r.TokenCounts {
			sum += c
		}
		if sum != r.OutputTokens || r.TokenTimes[0] != r.FirstTokenAt || r.TokenTimes[len(r.TokenTimes)-1] != r.DoneAt || r.TokensSource != "usage" {
			t.Errorf("request %s inconsistent: %+v", r.ID, r)
		}
		if r.Phase == "formal" {
			tokens += r.OutputTokens
		}
	}
	if tokens != 1786 || failed != 1 {
		t.Errorf("formal tokens %d, failed %d; want 1786, 1", tokens, failed)
	}
}

func TestLoadOptionalFiles(t *testing.T) {
	// A run that did not complete may lack its data files (one killed
	// at the start: status running).
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(sampleRun, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"status": "complete"`), []byte(`"status": "running"`), 1)
	if err := os.WriteFile(filepath.Join(dir, RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Power == nil || len(run.Power) != 0 || run.Requests == nil || len(run.Requests) != 0 ||
		run.EngineMetrics == nil || len(run.EngineMetrics) != 0 || run.Results != nil {
		t.Errorf("run with only run.json: %+v", run)
	}

	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "run.json") {
		t.Errorf("Load without run.json: %v", err)
	}
	// A bad data file fails Load with its path and line.
	os.WriteFile(filepath.Join(dir, RequestsFile), []byte("{\"id\":\"a\"}\n{\"id\":1}\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, RequestsFile)+":2:7: field id: expected string, got number 1") {
		t.Errorf("Load with a bad requests.jsonl: %v", err)
	}
}

func TestFormatVersion(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(sampleRun, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, runJSON, want string
	}{
		{"v2", strings.Replace(string(good), `"format_version": 1`, `"format_version": 2`, 1),
			"format_version 2 is not supported; this joulebench reads archive format_version 1 only"},
		// A v2 file whose fields changed type still reports the version.
		{"v2 incompatible", `{"format_version": 2, "stages": {"formal": [1, 2]}}`, "format_version 2 is not supported"},
		{"v0", `{"format_version": 0}`, "format_version 0 is not supported"},
		{"string", `{"format_version": "1"}`, `format_version "1" is not supported`},
		{"missing", `{"run_id": "x"}`, "no format_version; this joulebench reads archive format_version 1"},
		{"not an object", `[1]`, "expected a JSON object, got array"},
		{"empty", ``, "incomplete JSON"},
		{"syntax", "{\n  \"format_version\": 1,\n  \"run_id\": \"x\"\n  \"status\": \"complete\"\n}", "run.json:4:3: invalid JSON"},
		{"type", "{\n  \"format_version\": 1,\n  \"stages\": [{\"name\": \"a\", \"start\": \"0\"}]\n}", "run.json:3:"},
		{"trailing", "{\"format_version\": 1}\n{}", "run.json:2:1: unexpected data after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, RunFile), []byte(tc.runJSON), 0o644)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v\nwant an error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), RunFile) {
				t.Errorf("error does not name run.json: %v", err)
			}
		})
	}
	t.Run("type error names field", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), RunFile)
		os.WriteFile(path, []byte("{\n  \"format_version\": 1,\n  \"stages\": [{\"name\": \"a\", \"start\": \"0\"}]\n}"), 0o644)
		_, err := ReadMeta(path)
		if err == nil || !strings.Contains(err.Error(), "field stages.start: expected number, got string") {
			t.Errorf("ReadMeta: %v", err)
		}
	})
	t.Run("results v2", func(t *testing.T) {
		dir := t.TempDir()
		copyFile(t, filepath.Join(sampleRun, RunFile), filepath.Join(dir, RunFile))
		os.WriteFile(filepath.Join(dir, ResultsFile), []byte(`{"format_version": 2, "run_id": "x"}`), 0o644)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "results.json: format_version 2 is not supported") {
			t.Errorf("Load with results v2: %v", err)
		}
	})
}

// lineErr checks that err is a *LineError at line with msg in its text.
func lineErr(t *testing.T, err error, line int, msg string) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not a *LineError", err, err)
	}
	if le.Line != line || !strings.Contains(err.Error(), msg) {
		t.Errorf("error %q: want line %d and text %q", err, line, msg)
	}
}

const hdr = "t,device,power_w,energy_j,mem_used_bytes\n"

func TestReadPowerCSVErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"bad number", hdr + "1,gpu0,100,5,1\n2,gpu0,100,x,1\n", 3, `power.csv:3: column energy_j: invalid number "x"`},
		{"bad t", hdr + "1.2.3,gpu0,100,,\n", 2, `power.csv:2: column t: invalid number "1.2.3"`},
		{"NaN", hdr + "1,gpu0,NaN,,\n", 2, `column power_w: invalid number "NaN" (must be finite)`},
		{"Inf", hdr + "1,gpu0,100,+Inf,\n", 2, `column energy_j: invalid number "+Inf" (must be finite)`},
		{"overflow", hdr + "1e999,gpu0,100,,\n", 2, `column t: invalid number "1e999"`},
		{"empty power", hdr + "1,gpu0,,,\n", 2, "column power_w: empty (a number is required)"},
		{"empty t", hdr + ",gpu0,1,,\n", 2, "column t: empty"},
		{"empty device", hdr + "1,,1,,\n", 2, "column device: empty"},
		{"bad mem", hdr + "1,gpu0,1,,1.5\n", 2, `column mem_used_bytes: invalid byte count "1.5"`},
		{"negative mem", hdr + "1,gpu0,1,,-1\n", 2, `column mem_used_bytes: invalid byte count "-1"`},
		{"too few columns", hdr + "1,gpu0,1,1,1\n2,gpu0,1,1\n", 3, "power.csv:3: expected 5 columns (as in the header), got 4"},
		{"too many columns", hdr + "1,gpu0,1,1,1,7\n", 2, "expected 5 columns (as in the header), got 6"},
		{"wrong header", "time,device,power_w,energy_j,mem_used_bytes\n1,gpu0,1,,\n", 1, `power.csv:1: header is "time,device,power_w,energy_j,mem_used_bytes", want "t,device,power_w,energy_j,mem_used_bytes"`},
		{"short header", "t,device,power_w\n", 1, "header is"},
		{"reordered header", "t,device,energy_j,power_w,mem_used_bytes\n", 1, "header is"},
		{"no header", "1,gpu0,1,1,1\n", 1, "header is"},
		{"truncated last line", hdr + "1,gpu0,100,5,1\n2,gpu0,100,5", 3, "power.csv:3: last line is incomplete"},
		// Even a cut-off row that would parse is not taken as complete.
		{"truncated parsable", hdr + "1,gpu0,100,5,1\n2,gpu0,100,5,1234", 3, "last line is incomplete"},
		{"truncated header", "t,device,pow", 1, "last line is incomplete"},
		{"open quote", hdr + "1,\"gpu0,1,,\n", 2, "quoted field has no closing quote"},
		{"stray quote", hdr + "1,gp\"u0,1,,\n", 2, "stray quote"},
		// Rows the analysis cannot use are refused here, with their line
		// (the analysis named them by sample index before).
		{"negative power", hdr + "1,gpu0,100,,\n2,gpu0,-1,,\n", 3, `power.csv:3: column power_w: -1 W is negative`},
		{"negative energy", hdr + "1,gpu0,100,-5,\n", 2, `power.csv:2: column energy_j: -5 J is negative`},
		{"same time twice", hdr + "1,gpu0,100,,\n1,gpu1,5,,\n1,gpu0,101,,\n", 4, "power.csv:4: device gpu0 has a second sample at t=1 (line 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadPowerCSV(strings.NewReader(tc.in), "")
			if err == nil {
				t.Fatalf("no error; read %+v", got)
			}
			lineErr(t, err, tc.line, tc.msg)
		})
	}
}

func TestReadPowerCSVAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []record.PowerSample
	}{
		{"empty file", "", nil},
		{"header only", hdr, nil},
		{"empty cells", hdr + "1.5,gpu0,250.25,,\n", []record.PowerSample{{T: 1.5, Device: "gpu0", PowerW: 250.25, MemUsedBytes: -1}}},
		{"full row", hdr + "2,gpu1,0,1000.125,0\n", []record.PowerSample{{T: 2, Device: "gpu1", PowerW: 0, EnergyJ: 1000.125, HasEnergy: true, MemUsedBytes: 0}}},
		{"extra columns ignored", "t,device,power_w,energy_j,mem_used_bytes,temp_c,clock_mhz\n1,gpu0,1,2,3,65,1980\n",
			[]record.PowerSample{{T: 1, Device: "gpu0", PowerW: 1, EnergyJ: 2, HasEnergy: true, MemUsedBytes: 3}}},
		{"CRLF and BOM", "\ufeff" + strings.ReplaceAll(hdr, "\n", "\r\n") + "1,gpu0,1,,\r\n", []record.PowerSample{{T: 1, Device: "gpu0", PowerW: 1, MemUsedBytes: -1}}},
		{"quoted", "\"t\",device,power_w,energy_j,mem_used_bytes\n1,\"a,\"\"b\"\"\",1,,\n", []record.PowerSample{{T: 1, Device: `a,"b"`, PowerW: 1, MemUsedBytes: -1}}},
		{"blank lines", hdr + "\n1,gpu0,1,,\n\n", []record.PowerSample{{T: 1, Device: "gpu0", PowerW: 1, MemUsedBytes: -1}}},
		{"exponent", hdr + "1.7e9,gpu0,2.5E2,,\n", []record.PowerSample{{T: 1.7e9, Device: "gpu0", PowerW: 250, MemUsedBytes: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadPowerCSV(strings.NewReader(tc.in), "p.csv")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || fmt.Sprint(got) != fmt.Sprint(append([]record.PowerSample{}, tc.want...)) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

const okReq = `{"id":"a","phase":"formal","sent_at":1,"first_token_at":2,"done_at":3,"output_tokens":2,"ok":true}`

func TestReadRequestsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"wrong type", okReq + "\n" + `{"id":"b","sent_at":"1"}` + "\n", 2, `requests.jsonl:2:21: field sent_at: expected number, got string`},
		{"float for int", `{"id":"b","output_tokens":1.5}` + "\n", 1, "field output_tokens: expected integer, got number 1.5"},
		{"bool as string", `{"id":"b","ok":"true"}` + "\n", 1, "field ok: expected boolean (true or false), got string"},
		{"array element", `{"id":"b","token_times":[1,"x"]}` + "\n", 1, "field token_times: expected number, got string"},
		{"timings", `{"id":"b","engine_timings":{"eval_count":"9"}}` + "\n", 1, "field engine_timings"},
		{"not an object", okReq + "\n[1,2]\n", 2, "requests.jsonl:2:1: expected a JSON object"},
		{"null line", "null\n", 1, "expected a JSON object"},
		{"syntax", okReq + "\n" + `{"id":"b" "phase":"formal"}` + "\n" + okReq + "\n", 2, "requests.jsonl:2:11: invalid JSON"},
		{"trailing garbage", okReq + " x\n", 1, "invalid JSON"},
		{"truncated last line", okReq + "\n" + okReq + "\n" + `{"id":"c","phase":"formal","sent_at":17174`, 3, "requests.jsonl:3:43: last line is incomplete (no newline at the end; the file was probably cut off mid-write by a crash): invalid JSON: unexpected end of JSON input"},
		{"ok without first token", `{"id":"x","ok":true,"sent_at":1,"done_at":3}` + "\n", 1, `request "x" has ok=true but no first_token_at`},
		{"ok without done", `{"id":"x","ok":true,"sent_at":1,"first_token_at":2}` + "\n", 1, `request "x" has ok=true but no done_at`},
		{"ok without sent", `{"id":"x","ok":true,"first_token_at":2,"done_at":3}` + "\n", 1, `request "x" has ok=true but no sent_at`},
		{"ok with null time", `{"id":"x","ok":true,"sent_at":1,"first_token_at":null,"done_at":3}` + "\n", 1, "no first_token_at"},
		{"token counts mismatch", `{"id":"x","token_times":[1,2],"token_counts":[1]}` + "\n", 1, "token_counts has 1 entries but token_times has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadRequests(strings.NewReader(tc.in), "")
			if err == nil {
				t.Fatalf("no error; read %+v", got)
			}
			lineErr(t, err, tc.line, tc.msg)
		})
	}
}

func TestReadRequestsAccepts(t *testing.T) {
	in := "\n" + // blank lines are skipped but counted
		`{"id":"a","phase":"formal","sent_at":1,"first_token_at":2,"done_at":3,"output_tokens":2,"ok":true,"future_field":{"x":[1]},"token_times":[2,3]}` + "\r\n" +
		"   \n" +
		`{"id":"b","phase":"formal","sent_at":1.5,"ok":false,"error":"timeout","output_tokens":0}` // complete JSON without a final newline
	got, err := ReadRequests(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[0].TokenTimes[1] != 3 || got[1].Error != "timeout" {
		t.Errorf("got %+v", got)
	}
	got, err = ReadRequests(strings.NewReader(""), "")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty file: %v, %v", got, err)
	}
}

// TestReadRequestsFirstErrorInLargeFile checks that parallel decoding reports
// the first bad line of the file, not whichever a worker found first.
func TestReadRequestsFirstErrorInLargeFile(t *testing.T) {
	var sb strings.Builder
	for i := 1; i <= 20000; i++ {
		switch i {
		case 7777:
			sb.WriteString(`{"id":7777}` + "\n")
		case 3, 15000, 19999:
			sb.WriteString(`{"id":"late",` + "\n")
		default:
			fmt.Fprintf(&sb, `{"id":"r%d","phase":"formal","sent_at":%d,"output_tokens":0,"ok":false}`+"\n", i, i)
		}
	}
	in := sb.String()
	_, err := ReadRequests(strings.NewReader(in), "big.jsonl")
	lineErr(t, err, 3, "big.jsonl:3:")
	in = strings.Replace(in, `{"id":"late",`+"\n", okReq+"\n", 1) // fix line 3
	_, err = ReadRequests(strings.NewReader(in), "big.jsonl")
	lineErr(t, err, 7777, "big.jsonl:7777:7: field id: expected string, got number 7777")
	in = strings.Replace(in, `{"id":7777}`, okReq, 1)
	_, err = ReadRequests(strings.NewReader(in), "big.jsonl")
	lineErr(t, err, 15000, "big.jsonl:15000:")
}

func TestReadEngineMetrics(t *testing.T) {
	got, err := ReadEngineMetrics(strings.NewReader(`{"t":1.5,"name":"a","labels":{"le":"+Inf"},"value":3,"new":1}`+"\n"), "")
	if err != nil || len(got) != 1 || got[0].Labels["le"] != "+Inf" || got[0].Value != 3 {
		t.Errorf("got %+v, %v", got, err)
	}
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"no name", `{"t":1,"value":2}` + "\n", 1, "engine_metrics.jsonl:1: engine metric has no name"},
		{"value string", `{"t":1,"name":"a","value":2}` + "\n" + `{"t":1,"name":"a","value":"NaN"}` + "\n", 2, "field value: expected number, got string"},
		{"labels type", `{"t":1,"name":"a","labels":{"x":1},"value":2}` + "\n", 1, "field labels"},
		{"truncated", `{"t":1,"name":"a","value":2}` + "\n" + `{"t":1,"na`, 2, "last line is incomplete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadEngineMetrics(strings.NewReader(tc.in), "")
			lineErr(t, err, tc.line, tc.msg)
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadRequestsLongLine reads a line far longer than the read buffer, as
// token_times of a long generation make.
func TestReadRequestsLongLine(t *testing.T) {
	const n = 100000
	var sb strings.Builder
	sb.WriteString(okReq + "\n")
	sb.WriteString(`{"id":"long","phase":"formal","sent_at":1717405199,"first_token_at":1717405200.123456789,"done_at":1717505200,"output_tokens":100000,"ok":true,"token_times":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%d.123456789", 1717405200+i)
	}
	sb.WriteString("]}\n" + strings.Replace(okReq, `"id":"a"`, `"id":"b"`, 1) + "\n")
	got, err := ReadRequests(strings.NewReader(sb.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[1].TokenTimes) != n || got[1].TokenTimes[n-1] != 1717405200+n-1+0.123456789 || got[2].ID != "b" {
		t.Errorf("long line: %d requests, %d token times", len(got), len(got[1].TokenTimes))
	}
	// The same line cut off in the middle is reported, with its number.
	cut := sb.String()[:len(okReq)+1+sb.Len()/2]
	_, err = ReadRequests(strings.NewReader(cut), "")
	lineErr(t, err, 2, "last line is incomplete")
}

// TestReadJSONLFirstErrorFinishesLast makes the first bad line's batch
// finish after a later bad line's, so that the error reported must be chosen
// by position, not by which worker finished first.
func TestReadJSONLFirstErrorFinishesLast(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two workers")
	}
	var sb strings.Builder
	for i := 1; i <= 3*batchLines; i++ {
		switch i {
		case 10:
			sb.WriteString(`{"id":"slow-bad"}` + "\n")
		case 2*batchLines + 10:
			sb.WriteString(`{"id":"fast-bad"}` + "\n")
		default:
			sb.WriteString(okReq + "\n")
		}
	}
	laterFailed := make(chan struct{})
	decode := func(d *jsonLine, b []byte, r *record.Request) *LineError {
		if err := d.decodeRequest(b, r); err != nil {
			return err
		}
		switch r.ID {
		case "slow-bad":
			select {
			case <-laterFailed:
			case <-time.After(5 * time.Second):
			}
			return &LineError{Msg: "slow"}
		case "fast-bad":
			close(laterFailed)
			return &LineError{Msg: "fast"}
		}
		return nil
	}
	d := readJSONL(strings.NewReader(sb.String()), "x.jsonl", decode)
	lineErr(t, d.err, 10, "x.jsonl:10: slow")
	if len(d.rows) != 9 || d.line(8) != 9 {
		t.Errorf("kept %d records, want the 9 before the error", len(d.rows))
	}
}

// TestReadRequestsOrderAcrossBatches: lines decoded in parallel batches
// come back in file order, blank lines skipped, each equal to what
// encoding/json decodes from its line (token_times through parseNumber).
func TestReadRequestsOrderAcrossBatches(t *testing.T) {
	var sb strings.Builder
	var want []record.Request
	for i := range 3*batchLines + 77 {
		if i%1000 == 500 {
			sb.WriteString("  \n")
		}
		line := fmt.Sprintf(`{"id":"r%d","phase":"formal","sent_at":1717405260.%07d,"first_token_at":1717405261,"done_at":1717405262,"output_tokens":3,"ok":true,"token_times":[1717405261,1717405261.%07d,171740526.19%07de1]}`, i, i, i*7, i)
		var r record.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
		sb.WriteString(line + "\n")
	}
	got, err := ReadRequests(strings.NewReader(sb.String()), "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests; want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("request %d: got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

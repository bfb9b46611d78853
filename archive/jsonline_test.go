package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/joulebench/joulebench/archive/record"
	"reflect"
	"strings"
	"testing"
)

var requestSeeds = []string{
	okReq,
	`{"id":"f0","phase":"formal","prompt_id":"p0","sent_at":1717405210.000000123,"first_token_at":1717405210.2,"done_at":1717405211.1,"prompt_tokens":12,"output_tokens":3,"reasoning_tokens":1,"tokens_source":"usage","output_chars":11,"ok":true,"token_times":[1717405210.2,1717405210.7,0.3333333333333333],"token_counts":[1,1,1],"engine_timings":{"eval_count":3,"eval_duration":912345678},"max_tokens":512,"engine":"ollama"}`,
	`{"id":"e","ok":false,"error":"HTTP 500: <html> \"q\" \u00e9 \ud83d\ude00 \ud800 \\ \/ \b\f\n\r\t","sent_at":-0,"done_at":1E+2}`,
	`{"id":"x","future":{"a":[1,{"b":null},true,false,"s",-1.5e-3]},"token_times":[],"engine_timings":{}}`,
	`  {"token_times":null,"engine_timings":null,"id":null,"ok":null}  `,
	`{"engine_timings":{"a":1},"engine_timings":{"b":2},"token_times":[1],"token_times":[2,3]}`,
	`{"id":"a","sent_at":"1"}`, `{"output_tokens":1.5}`, `{"output_tokens":1e2}`, `{"sent_at":1e999}`,
	`{"ok":"true"}`, `{"token_times":[1,"x"]}`, `{"id":"a" "b":1}`, `{"id":"a",}`, `{"id":"a"`, `[1]`, `null`, `"s"`, `{}`,
	`{"id":"\u00"}`, "{\"id\":\"a\x01\"}", `{"sent_at":01}`, `{"sent_at":-}`, `{"sent_at":1.}`, `{"sent_at":.5}`, `{"ok":tru}`,
	`{"x":nul}`, "{\"id\":\"\xff\xfe\"}", `{"sent_at":1,"sent_at":null}`, `{"output_tokens":99999999999999999999}`,
	`{"ID":"upper"}`, `{"a":[1,2}`, `{"a":{"b":1]}`, `{"id":"a"} x`, `{"token_counts":[1,2.5]}`, `{"engine_timings":{"a":"b"}}`,
	`{"id":"a","sent_at":"x","ok":tru}`, `{"token_times":[1,]}`, `{"\u0069d":"escaped key"}`,
	`{"id":{"a":[1]}}`, `{"token_times":{"a":1}}`, `{"engine_timings":[1]}`, `{"id":"a\\\"b","sent_at":"x\\"}`, `{"ok":[true]}`,
	`{"Phase":"formal","OK":true}`, `{"token_times":[1,2],"token_times":null}`, `{"engine_timings":{"a":1,"a":"x"}}`,
}

// differential checks the line decoder against encoding/json on one line:
// the same value, or an error from both; an error's column is on the line,
// and a type error's column is where a value of the kind encoding/json names
// starts.
func differential[T any](t *testing.T, line []byte, decode func(*jsonLine, []byte, *T) *LineError) {
	var d jsonLine
	var got T
	err := decode(&d, line, &got)
	if trimmed := bytes.TrimLeft(line, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		if err == nil {
			t.Fatalf("line %q is not an object but was accepted", line)
		}
		return
	}
	var want T
	werr := json.Unmarshal(line, &want)
	if (err == nil) != (werr == nil) {
		t.Fatalf("line %q:\n decoder error: %v\nencoding/json: %v", line, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("line %q:\n decoder: %#v\nencoding/json: %#v", line, got, want)
	}
	if err == nil {
		return
	}
	if err.Column < 1 || err.Column > len(line)+1 {
		t.Fatalf("line %q: column %d out of range: %v", line, err.Column, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(werr, &te) {
		if !strings.HasPrefix(err.Msg, "field ") {
			t.Fatalf("line %q: encoding/json: %v; decoder: %v", line, werr, err)
		}
		kind, _, _ := strings.Cut(te.Value, " ")
		starts := map[string]string{"string": `"`, "number": "-0123456789", "bool": "tf", "array": "[", "object": "{"}[kind]
		if at := line[err.Column-1]; starts == "" || strings.IndexByte(starts, at) < 0 {
			t.Fatalf("line %q: type error %q at column %d (%q), not at the start of a %s", line, err.Msg, err.Column, at, kind)
		}
	}
}

func TestDecodeRequestMatchesEncodingJSON(t *testing.T) {
	for _, s := range requestSeeds {
		differential(t, []byte(s), (*jsonLine).decodeRequest)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		differential(t, line, (*jsonLine).decodeRequest)
	})
}

var metricSeeds = []string{
	`{"t":1.5,"name":"vllm:num_requests_running","labels":{"model_name":"m","le":"+Inf"},"value":3}`,
	`{"t":1,"name":"a","labels":null,"value":-0.5e-7,"extra":[1]}`,
	`{"t":1,"name":"a","labels":{"x":1},"value":2}`, `{"t":"1"}`, `{"labels":{"a":"b","a":"c"},"labels":{"d":"e"}}`,
	`{"value":NaN}`, `{"name":"\u00e9\ud83d\ude00"}`,
}

func TestDecodeEngineMetricMatchesEncodingJSON(t *testing.T) {
	for _, s := range metricSeeds {
		differential(t, []byte(s), (*jsonLine).decodeEngineMetric)
	}
}

func FuzzDecodeEngineMetric(f *testing.F) {
	for _, s := range metricSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		differential(t, line, (*jsonLine).decodeEngineMetric)
	})
}

// Token times parsed into a shared slab: every record keeps its own
// values across a slab's end, and appending to one cannot write into the
// next (each list is capped at its length).
func TestTokenTimesSlab(t *testing.T) {
	var d jsonLine
	const lines, per = 10, 20_000 // 200,000 times: past one slab
	reqs := make([]record.Request, lines)
	for k := range lines {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"r%d","phase":"formal","sent_at":1,"output_tokens":1,"ok":true,"token_times":[`, k)
		for i := range per {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d.5", k*per+i)
		}
		b.WriteString("]}")
		if err := d.decodeRequest([]byte(b.String()), &reqs[k]); err != nil {
			t.Fatal(err)
		}
	}
	for k, r := range reqs {
		if len(r.TokenTimes) != per || cap(r.TokenTimes) != per {
			t.Fatalf("record %d: %d times, capacity %d; want %d and %d", k, len(r.TokenTimes), cap(r.TokenTimes), per, per)
		}
		_ = append(r.TokenTimes, -1)
		for i, v := range r.TokenTimes {
			if want := float64(k*per+i) + 0.5; v != want {
				t.Fatalf("record %d time %d = %v, want %v", k, i, v, want)
			}
		}
	}
}

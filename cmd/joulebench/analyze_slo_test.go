package main

import (
	"encoding/json"
	"math"
	"testing"
)

// `analyze DIR --set slo_…` re-evaluates an archived run under an SLO,
// with the run's own archived profile (today's benchmark-1.5) and with
// --profile. testdata/run-small: formal stage [10, 20] at 100 W (1000 J);
// per request TTFT, TPOT = (done - first) / (tokens - 1):
//
//	f0 sent 10, first 11, done 15,  50 tok: TTFT 1000 ms, TPOT 4/49 s = 81.6 ms
//	f1 sent 10, first 12, done 16,  50 tok: TTFT 2000 ms, TPOT 81.6 ms
//	f2 sent 12, first 13, done 18, 100 tok: TTFT 1000 ms, TPOT 5/99 s = 50.5 ms
//	f3 sent 14, first 15, done 20, 100 tok: TTFT 1000 ms, TPOT 50.5 ms
func TestAnalyzeSetSLO(t *testing.T) {
	src := builtin(t, "benchmark-1.5")
	own := archiveWith(t, func(m map[string]any) {
		m["profile"] = map[string]any{"name": "benchmark-1.5", "sha256": sha(src)}
	}, src)
	cases := []struct {
		set  string
		want map[string]float64 // absent from want: not applicable
	}{
		// f2, f3: 2 of 4; 2 / 10 s; 200 tokens / 10 s; 1000 J / 200.
		{"slo_tpot_ms=60", map[string]float64{"slo_attainment": 0.5, "goodput_rps": 0.2, "goodput_tok_s": 20, "j_per_good_token": 5}},
		// 50.5 > 50: nobody; J per good token has no tokens.
		{"slo_tpot_ms=50", map[string]float64{"slo_attainment": 0, "goodput_rps": 0, "goodput_tok_s": 0}},
		// f0, f2, f3: 3 of 4; 250 tokens; 1000 / 250.
		{"slo_ttft_ms=1500", map[string]float64{"slo_attainment": 0.75, "goodput_rps": 0.3, "goodput_tok_s": 25, "j_per_good_token": 4}},
	}
	for _, dir := range []struct{ name, dir string }{{"own profile", own}, {"--profile", smallRun}} {
		for _, c := range cases {
			args := []string{"analyze", dir.dir, "--set", c.set, "--set", "release_hold=5s", "--format", "json"}
			if dir.name == "--profile" {
				args = append(args, "--profile", "benchmark-1.5")
			}
			out, errOut, code := runCLI(t, args...)
			if code != exitOK && code != exitChecks {
				t.Fatalf("%s %s: exit %d\n%s", dir.name, c.set, code, errOut)
			}
			var res map[string]struct {
				Value any    `json:"value"`
				Note  string `json:"note"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%s %s: %v\n%s", dir.name, c.set, err, out)
			}
			for _, m := range []string{"slo_attainment", "goodput_rps", "goodput_tok_s", "j_per_good_token"} {
				w, ok := c.want[m]
				got, isNum := res[m].Value.(float64)
				switch {
				case !ok && res[m].Value != nil:
					t.Errorf("%s %s: %s = %v, want not applicable", dir.name, c.set, m, res[m].Value)
				case ok && (!isNum || math.Abs(got-w) > 1e-9):
					t.Errorf("%s %s: %s = %v (%s), want %v", dir.name, c.set, m, res[m].Value, res[m].Note, w)
				}
			}
		}
	}
}

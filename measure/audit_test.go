package measure

import (
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
)

// series returns samples of dev at the given times, all at w watts.
func series(dev string, w float64, ts ...float64) []record.PowerSample {
	out := make([]record.PowerSample, len(ts))
	for i, t := range ts {
		out[i] = ps(dev, t, w)
	}
	return out
}

func seq(from, to, step float64) []float64 {
	var out []float64
	for t := from; t <= to+1e-9; t += step {
		out = append(out, t)
	}
	return out
}

func TestPowerAudit(t *testing.T) {
	formal := []AuditStage{{Name: "formal", Start: 10, End: 20}}
	bound := map[string]float64{"g0": 840, "g1": 840}
	why := map[string]string{"g0": "1.2 × power limit 700 W"}
	cases := []struct {
		name    string
		samples []record.PowerSample
		devices []string
		// want: which finding list holds one entry, and substrings of it;
		// "" for a clean audit.
		want      string
		substr    []string
		wantMaxGS float64
	}{
		{
			name:      "clean, 1 s samples",
			samples:   append(series("g0", 300, seq(0, 30, 1)...), series("g1", 300, seq(0, 30, 1)...)...),
			devices:   []string{"g0", "g1"},
			wantMaxGS: 1,
		},
		{
			// 1 s samples with 12 … 17 missing: a 6 s gap from t=11 to
			// t=17, 1 s after the stage starts at 10.
			name:      "gap",
			samples:   series("g0", 300, append(seq(0, 11, 1), seq(17, 30, 1)...)...),
			devices:   []string{"g0"},
			want:      "gaps",
			substr:    []string{"device g0", "6 s without samples", "stage formal", "t=11 to t=17", "stage +1 s", "max_sample_gap 3 s"},
			wantMaxGS: 6,
		},
		{
			// A gap straddling the stage start (t=8 → t=13) counts: the
			// boundary power is interpolated across it.
			name:      "gap across the start",
			samples:   series("g0", 300, append(seq(0, 8, 1), seq(13, 30, 1)...)...),
			devices:   []string{"g0"},
			want:      "gaps",
			substr:    []string{"5 s without samples", "t=8 to t=13"},
			wantMaxGS: 5,
		},
		{
			name:      "device listed in run.json, never sampled",
			samples:   series("g0", 300, seq(0, 30, 1)...),
			devices:   []string{"g0", "g1"},
			want:      "missing",
			substr:    []string{"device g1 has no power samples at all", "stage formal"},
			wantMaxGS: 10, // the whole stage
		},
		{
			// The recording ends at t=15, inside the stage.
			name:      "recording ends mid-stage",
			samples:   append(series("g0", 300, seq(0, 30, 1)...), series("g1", 300, seq(0, 15, 1)...)...),
			devices:   []string{"g0", "g1"},
			want:      "missing",
			substr:    []string{"device g1: samples end at t=15", "5 s before stage formal ends", "recording stopped"},
			wantMaxGS: 5, // t=15 to the end, 20
		},
		{
			// Samples only inside the stage, [12, 15]: both ends missing,
			// one finding each; MaxGapS the larger uncovered end, 5 s.
			name:    "device starts late and stops early",
			samples: append(series("g0", 300, seq(0, 30, 1)...), series("g1", 300, seq(12, 15, 1)...)...),
			devices: []string{"g0", "g1"},
			want:    "missing2",
			substr: []string{"device g1: samples start at t=12, 2 s after stage formal starts",
				"device g1: samples end at t=15, 5 s before stage formal ends"},
			wantMaxGS: 5,
		},
		{
			// An exporter that died: one sample, before the stage. The
			// stage has no sample: MaxGapS is its length, 10 s.
			name:      "one sample before the stage",
			samples:   series("g0", 300, 1),
			devices:   []string{"g0"},
			want:      "missing",
			substr:    []string{"device g0 has no samples in stage formal [10, 20] (its samples cover [1, 1])"},
			wantMaxGS: 10,
		},
		{
			name:      "device starts late",
			samples:   append(series("g0", 300, seq(0, 30, 1)...), series("g1", 300, seq(12, 30, 1)...)...),
			devices:   []string{"g0", "g1"},
			want:      "missing",
			substr:    []string{"device g1: samples start at t=12, 2 s after stage formal starts"},
			wantMaxGS: 2, // the start, 10, to t=12
		},
		{
			name: "one sample above the bound",
			samples: func() []record.PowerSample {
				s := series("g0", 300, seq(0, 30, 1)...)
				s[14].PowerW = 1e7
				return s
			}(),
			devices:   []string{"g0"},
			want:      "bounds",
			substr:    []string{"device g0: 10000000 W at t=14 in stage formal", "above the plausible 840 W (1.2 × power limit 700 W)"},
			wantMaxGS: 1,
		},
		{
			// Outside the stage a high sample is not this audit's concern.
			name: "above the bound outside the stage",
			samples: func() []record.PowerSample {
				s := series("g0", 300, seq(0, 30, 1)...)
				s[25].PowerW = 1e7
				return s
			}(),
			devices:   []string{"g0"},
			wantMaxGS: 1,
		},
		{
			name:      "all zero",
			samples:   series("g0", 0, seq(0, 30, 1)...),
			devices:   []string{"g0"},
			want:      "zeros",
			substr:    []string{"device g0: 0 W on every sample of stage formal (11 samples)"},
			wantMaxGS: 1,
		},
		{
			// File order … 13, 16, 15, 14, 17 …: sample 15 (t=15) is the
			// first to go back (1 s after t=16); t=15 and t=14 both come
			// after t=16: 2 samples.
			name: "time goes back",
			samples: func() []record.PowerSample {
				s := series("g0", 300, seq(0, 30, 1)...)
				s[14], s[16] = s[16], s[14]
				return s
			}(),
			devices:   []string{"g0"},
			want:      "order",
			substr:    []string{"device g0: time goes back", "sample 15 at t=15 comes after t=16 (1 s back)", "2 samples earlier"},
			wantMaxGS: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pd := mustPower(t, c.samples)
			a := pd.Audit(formal, AuditOptions{MaxGapS: 3, Devices: c.devices, BoundW: bound, BoundWhy: why})
			lists := map[string][]string{"gaps": a.Gaps, "missing": a.Missing, "bounds": a.Bounds, "zeros": a.Zeros, "order": a.Order}
			want, wantN := c.want, 1
			if want == "missing2" {
				want, wantN = "missing", 2
			}
			for k, l := range lists {
				n := 0
				if k == want {
					n = wantN
				}
				if len(l) != n {
					t.Fatalf("%s = %q, want %d finding(s)", k, l, n)
				}
			}
			if c.want == "" {
				if len(a.Reasons()) != 0 {
					t.Fatalf("reasons = %q, want none", a.Reasons())
				}
			} else {
				got := strings.Join(lists[want], "; ")
				for _, s := range c.substr {
					if !strings.Contains(got, s) {
						t.Errorf("findings %q do not contain %q", got, s)
					}
				}
				if r := a.Reasons(); strings.Join(r, "; ") != got {
					t.Errorf("reasons = %q, want %q", r, got)
				}
			}
			if !near(a.MaxGapS, c.wantMaxGS) {
				t.Errorf("MaxGapS = %v, want %v", a.MaxGapS, c.wantMaxGS)
			}
		})
	}
}

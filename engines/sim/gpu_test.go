package sim

import "testing"

type fixedGPU struct{ decode, prefill float64 }

func (g fixedGPU) Slowdown(int, int, int) (float64, float64) { return g.decode, g.prefill }

// A step under the GPU's settings: the decode part times the decode
// factor, the prefill part times the prefill factor. DefaultConfig: one
// decoding sequence and 800 prompt tokens take 0.02 + 0.0005 = 0.0205 s of
// decode and 800/20000 = 0.04 s of prefill; at factors 2 and 3:
// 0.0205·2 + 0.04·3 = 0.041 + 0.12 = 0.161 s. Factors of 1 give
// stepSeconds' 0.0605 s.
func TestSlowedStepSeconds(t *testing.T) {
	c := DefaultConfig()
	if got := c.slowedStepSeconds(fixedGPU{2, 3}, 1, 1, 800, 0); !near(got, 0.161) {
		t.Errorf("slowed step %v, want 0.161", got)
	}
	if got := c.slowedStepSeconds(fixedGPU{1, 1}, 1, 1, 800, 0); !near(got, c.stepSeconds(1, 800, 0)) || !near(got, 0.0605) {
		t.Errorf("unslowed step %v, want 0.0605", got)
	}
}

package record

import (
	"encoding/json"
	"testing"
)

// TestLoadShapeParams: Counts and Rates name every numeric member of the
// load object as run.json writes it, with its value, and nothing else.
func TestLoadShapeParams(t *testing.T) {
	r0, r1 := 5.0, 6.0
	l := &LoadShape{Mode: "m", Concurrency: 1, MaxConcurrency: 2, Rate: 3, Burstiness: 4, RampStartRate: &r0, RampEndRate: &r1}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "mode")
	seen := map[string]float64{}
	for _, c := range l.Counts() {
		seen[c.Key] = float64(c.V)
	}
	for _, r := range l.Rates() {
		seen[r.Key] = *r.V
	}
	if len(seen) != len(doc) {
		t.Errorf("params %v, load object %s", seen, b)
	}
	for k, v := range doc {
		if seen[k] != v.(float64) {
			t.Errorf("%s: param %v, load object %v", k, seen[k], v)
		}
	}
	// A ramp rate not written is nil.
	if rs := (&LoadShape{Mode: "m"}).Rates(); rs[2].V != nil || rs[3].V != nil {
		t.Errorf("ramp rates of a load without them: %v %v", rs[2].V, rs[3].V)
	}
}

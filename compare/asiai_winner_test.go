package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/golden"
)

func winnerRun(kind string, tokS, ttft, power float64, excluded bool, failed ...string) Run {
	res := &record.Results{Values: map[string]record.Result{
		"tok_per_sec": {Value: tokS}, "ttft_ms": {Value: ttft}, "power_watts": {Value: power},
		"gpu_mem_used_gb": {Value: 5.5}, "stability": {Value: "stable"},
	}, Excluded: excluded}
	for _, name := range failed {
		f := false
		res.Order = append(res.Order, name)
		res.Values[name] = record.Result{Kind: "check", Passed: &f, Severity: "exclude"}
	}
	return Run{Meta: record.Meta{RunID: kind + "-run", Engine: record.EngineInfo{Kind: kind, Model: "m"}}, Results: res}
}

func TestAsiaiWinner(t *testing.T) {
	// llamacpp 80 tok/s beats ollama 60; vllm 120 is faster but failed an
	// exclude gate: shown, not ranked.
	got := AsiaiWinner([]Run{
		winnerRun("ollama", 60, 50, 100, false),
		winnerRun("llamacpp", 80, 40, 120, false),
		winnerRun("vllm", 120, 30, 150, true, "output_not_empty"),
	})
	if len(got) != 3 {
		t.Fatalf("%d rows", len(got))
	}
	ol, ll, vl := got[0], got[1], got[2]
	if !ll.Winner || ol.Winner || vl.Winner || vl.Ranked || !ol.Ranked {
		t.Fatalf("winner/ranked wrong: %+v", got)
	}
	near := func(name string, v *float64, want float64) {
		t.Helper()
		if v == nil || math.Abs(*v-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	near("ollama ratio", ol.Ratio, 0.75)      // 60 / 80
	near("ollama delta", ol.DeltaPct, -25)    // (0.75 − 1) × 100
	near("ollama Δ TTFT", ol.TTFTDeltaMs, 10) // 50 − 40
	near("ollama Δ W", ol.PowerDeltaW, -20)   // 100 − 120
	near("vllm ratio", vl.Ratio, 1.5)         // 120 / 80, shown though not ranked
	near("winner ratio", ll.Ratio, 1)
	if len(vl.Gates) != 1 || vl.Gates[0] != "output_not_empty (exclude)" {
		t.Errorf("vllm gates %v", vl.Gates)
	}

	for _, f := range doc.Names(false) {
		var b bytes.Buffer
		if err := RenderAsiaiWinner(&b, got, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "asiai_winner."+f+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := RenderAsiaiWinner(&b, got, doc.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"#### Winner by median tok/s: llamacpp", "0.75× (-25.0 %)", "+10.0", "-20.0", "not ranked", "output_not_empty (exclude)", "5.50"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestAsiaiWinnerNoneRanked(t *testing.T) {
	got := AsiaiWinner([]Run{winnerRun("ollama", 60, 50, 100, true, "output_not_empty")})
	if got[0].Winner || got[0].Ranked || got[0].Ratio != nil {
		t.Errorf("%+v", got[0])
	}
	var b bytes.Buffer
	if err := RenderAsiaiWinner(&b, got, doc.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Winner: none") {
		t.Errorf("%s", b.String())
	}
}

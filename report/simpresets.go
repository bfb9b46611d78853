package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/joulebench/joulebench/internal/doc"
	"github.com/joulebench/joulebench/internal/simhw"
)

// SimPresets is `joulebench devices --sim`: the simulator's GPU and model
// presets with their constants, what each figure of a steady load gives
// on the model (64 requests, 1,000-token prompts, 500-token outputs), and
// every source cited. JSON: {"gpus": [...], "models": [...], "toy": ...}.
func SimPresets() *doc.Document {
	d := &doc.Document{FitTables: true, Fit: true}
	d.Add(&doc.Title{Text: "Simulated hardware (--sim-gpu, --sim-model)"},
		&doc.Note{Text: "SIMULATED: a model of the hardware, not a measurement. Without --sim-gpu and --sim-model the simulator runs its toy model (sim_hardware \"toy\" in run.json): fixed step times and a power that follows the batch, derived from no hardware."})
	gpus := &doc.Table{Columns: doc.Cols("gpu", "board", "bandwidth_tb_s", "bf16_tflops", "memory_gb", "tdp_w", "min_limit_w", "idle_w", "clock_mhz", "e_flop_pj", "e_mem_pj_per_byte", "p_sm_w")}
	for _, g := range simhw.GPUs() {
		gpus.Add([]string{g.Name, g.Product, fmt.Sprintf("%.2f", g.MemBandwidth/1e12), fmt.Sprintf("%.0f", g.PeakFLOPS/1e12),
			fmt.Sprintf("%.0f", float64(g.MemoryBytes)/1e9), fmt.Sprintf("%.0f", g.TDPW), fmt.Sprintf("%.0f", g.MinLimitW), fmt.Sprintf("%.0f", g.IdleW),
			fmt.Sprintf("%.0f-%.0f", g.MinClockMHz, g.MaxClockMHz), fmt.Sprintf("%.2f", g.FLOPEnergyJ*1e12),
			fmt.Sprintf("%.1f", g.MemEnergyJPerByte*1e12), fmt.Sprintf("%.0f", g.SMActiveW)})
	}
	models := &doc.Table{Columns: doc.Cols("model", "served_as", "params_b", "active_params_b", "layers", "kv_heads", "head_dim", "tensor_parallel")}
	for _, m := range simhw.Models() {
		models.Add([]string{m.Name, m.ServedName, fmt.Sprintf("%.2f", m.Params/1e9), fmt.Sprintf("%.2f", m.ActiveParams/1e9),
			fmt.Sprint(m.Layers), fmt.Sprint(m.KVHeads), fmt.Sprint(m.HeadDim), fmt.Sprint(m.TensorParallel)})
	}
	steady := &doc.Table{Columns: doc.Cols("gpu", "model", "j_per_token", "tpot_ms", "tok_per_s", "decode_w", "prefill_w")}
	for _, g := range simhw.GPUs() {
		for _, m := range simhw.Models() {
			s, err := simhw.NewSetup(g, m)
			if err != nil {
				continue
			}
			sum := s.Steady(simhw.Serving{Concurrency: 64, PromptTokens: 1000, OutputTokens: 500})
			steady.Add([]string{g.Name, m.Name, fmt.Sprintf("%.4f", sum.JPerToken), fmt.Sprintf("%.2f", sum.TPOTS*1e3),
				fmt.Sprintf("%.0f", sum.TokPerS), fmt.Sprintf("%.0f", sum.DecodePowerW), fmt.Sprintf("%.0f", sum.PrefillPowerW)})
		}
	}
	eff := simhw.DefaultEfficiencies()
	d.AddSection("GPUs", gpus)
	d.AddSection("Models", models)
	d.AddSection("On the model: 64 requests in flight, 1,000-token prompts, 500-token outputs, no setting changed", steady,
		&doc.Text{Text: fmt.Sprintf("Calibration parameters of every preset: %.0f %% of peak bandwidth, %.0f %% of peak FLOPS in decode and %.0f %% in prefill, %.1f ms of host time a step.",
			100*eff.Bandwidth, 100*eff.DecodeFLOPs, 100*eff.PrefillFLOPs, 1e3*eff.HostS)})
	var sources []string
	seen := map[string]bool{}
	for _, g := range simhw.GPUs() {
		sources = appendNew(sources, seen, g.Sources)
	}
	for _, m := range simhw.Models() {
		sources = appendNew(sources, seen, m.Sources)
	}
	src := &doc.Table{Columns: doc.Cols("source")}
	for _, s := range sources {
		src.Add([]string{s})
	}
	d.AddSection("Sources", src, &doc.Text{Text: "The model's equations and departures from real GPUs: docs/methodology.md, \"The simulator's hardware model\"."})
	d.JSON = map[string]any{"gpus": simhw.GPUs(), "models": simhw.Models(), "efficiencies": eff, "toy": "fixed step times and a batch-following power, derived from no hardware",
		"note": strings.TrimSpace(doc.SimulatedNote)}
	return d
}

// appendNew appends the strings of add not seen yet.
func appendNew(out []string, seen map[string]bool, add []string) []string {
	for _, s := range add {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RenderSimPresets writes SimPresets in format.
func RenderSimPresets(w io.Writer, format string) error {
	return doc.Render(w, SimPresets(), format)
}

package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/joulebench/joulebench/internal/simhw"
	simtel "github.com/joulebench/joulebench/telemetry/sim"
)

func hwConfig(t *testing.T, gpu, model string) (Config, simtel.Config) {
	t.Helper()
	c, g, err := WithHW(DefaultConfig(), simtel.DefaultConfig(), gpu, model)
	if err != nil {
		t.Fatal(err)
	}
	return c, g
}

// A hardware preset sets the engine and its GPUs from the preset: the
// served model, the tensor-parallel size as devices, the board's power
// figures, and a KV cache in what the weights leave of 90 % of memory.
// Llama 3.1 70B on four H100s, by hand: 4·0.9·80e9 - 70.6e9·2 =
// 146.8e9 B free; KV per token 2·80·8·128·2 = 327,680 B; 447,998 tokens.
func TestWithHWSetsEngineAndGPUs(t *testing.T) {
	c, g := hwConfig(t, "h100-sxm", "llama-3.1-70b")
	if c.Model != "sim-llama-3.1-70b" || c.TensorParallel != 4 || g.Devices != 4 {
		t.Errorf("model %q, tp %d, devices %d; want sim-llama-3.1-70b on 4", c.Model, c.TensorParallel, g.Devices)
	}
	if g.IdleW != 70 || g.MaxW != 700 || g.DeviceName != "Simulated H100 SXM5 80GB" || g.ClockMaxMHz != 1980 || g.LimitMinW != 200 {
		t.Errorf("GPU config = %+v", g)
	}
	if want := 447998; c.KVCacheTokens != want { // 146.8e9 / 327,680 = 447,998.05
		t.Errorf("KV cache = %d tokens, want %d", c.KVCacheTokens, want)
	}
	if c.Speed != 1 || c.HW == nil {
		t.Errorf("speed %v, HW %v: the hardware model runs at real time", c.Speed, c.HW)
	}
	for _, bad := range [][2]string{{"h300", ""}, {"", "gpt-5"}} {
		if _, _, err := WithHW(DefaultConfig(), simtel.DefaultConfig(), bad[0], bad[1]); err == nil {
			t.Errorf("WithHW(%q, %q) accepted", bad[0], bad[1])
		}
	}
	// 70B does not fit on one A100 at TP 1: the preset's TP 4 fits.
	if _, _, err := WithHW(DefaultConfig(), simtel.DefaultConfig(), "a100-sxm4", "llama-3.1-70b"); err != nil {
		t.Errorf("70B on 4 A100s: %v", err)
	}
}

// fixedLimits is a GPU under fixed settings for the hardware model.
type fixedLimits struct{ lockMHz, limitW float64 }

func (f fixedLimits) HWLimits() (float64, float64) { return f.lockMHz, f.limitW }
func (fixedLimits) Slowdown(int, int, int) (float64, float64) {
	panic("the hardware model asks HWLimits, never Slowdown")
}

// A step's time is the model's at the settings' clock and limit: a
// sequence decoding at context 1,000 and one prefilling 100 tokens of a
// 300-token prompt (200 done: attending to 200 + 50 on average).
func TestStepOfUsesTheModelUnderSettings(t *testing.T) {
	c, _ := hwConfig(t, "h100-sxm", "llama-3.1-8b")
	running := []*seq{{prompt: 900, generated: 100}, {prompt: 300, prefillLeft: 100, take: 100}}
	w := simhw.Work{Decoding: 1, ContextTokens: 1000, PrefillTokens: 100, PrefillContext: 100 * 250}
	if got := workOf(running); got != w {
		t.Fatalf("workOf = %+v, want %+v", got, w)
	}
	c.GPU = fixedLimits{lockMHz: 990, limitW: 300}
	got, p := c.stepOf(running, 1, 1, 100, 0)
	want := c.HW.Operate(w, 0.5, 300)
	if got != want.StepS || p == nil || *p != want {
		t.Errorf("stepOf = %v, %+v; want %v, %+v", got, p, want.StepS, want)
	}
	c.GPU = nil
	if got, _ := c.stepOf(running, 1, 1, 100, 0); got != c.HW.At(w, 1).StepS {
		t.Errorf("no settings: %v, want the full-clock step %v", got, c.HW.At(w, 1).StepS)
	}
}

// The engine serves a batch as the model's steady state says: 64 clients
// send at once a request of 1,000 prompt tokens and 500 output tokens
// (ignore_eos) to an H100 with Llama 3.1 8B, run 4× faster than real
// time. The engine's own account of the GPU energy (in model time: wall
// energy × speed, idle included) per output token lies within 10 % of
// simhw's Steady figure: the round is 64 prefills (in 2,048-token chunks
// here) then 500 decode steps at contexts from 1,000 to 1,500, Steady's
// cycle with the prefills alone and the contexts at their mean. (At 20×
// the requests' arrival over a few milliseconds spreads over several steps
// and the round takes 10-15 % longer.)
func TestEngineClosedLoopMatchesSteadyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("a closed loop of 128 requests")
	}
	c, _ := hwConfig(t, "h100-sxm", "llama-3.1-8b")
	c.Speed, c.StartupS, c.StoppingS = 4, 0, 0
	e := start(t, c)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprint(i % 50000)
	}
	prompt := "[" + strings.Join(ids, ",") + "]"
	const clients, rounds = 64, 1
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range rounds {
				body := fmt.Sprintf(`{"model":%q,"prompt":%s,"max_tokens":500,"ignore_eos":true}`, c.Model, prompt)
				resp := postRaw(t, e.BaseURL()+"/v1/completions", body)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	st := e.sched.snapshot()
	if st.genTotal != clients*rounds*500 {
		t.Fatalf("generated %d tokens, want %d", st.genTotal, clients*rounds*500)
	}
	modelJ := (st.hw.energyJ + c.HW.GPU.IdleW*st.hw.busyS) * c.Speed
	got := modelJ / float64(st.genTotal)
	want := c.HW.Steady(simhw.Serving{Concurrency: clients, PromptTokens: 1000, OutputTokens: 500}).JPerToken
	t.Logf("engine: %.4f J/token, model's steady state %.4f", got, want)
	if math.Abs(got/want-1) > 0.10 {
		t.Errorf("engine: %.4f J/token, model's steady state %.4f: more than 10 %% apart", got, want)
	}
}

func postRaw(t *testing.T, url, body string) *httpResponse {
	t.Helper()
	resp, err := httpPost(context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

type httpResponse = http.Response

func httpPost(ctx context.Context, url, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// An agent's simulated GPUs are the preset's boards, following the
// engine at the URL; an unknown preset is refused naming the flag.
func TestAgentGPUs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open, err := AgentGPUs(ctx, "h200-sxm", "", "")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := open(nil).Devices(ctx)
	if err != nil || len(devs) != 1 || devs[0].Name != "Simulated H200 SXM 141GB" {
		t.Errorf("devices %+v, %v; want one simulated H200", devs, err)
	}
	if _, err := AgentGPUs(ctx, "v100", "", ""); err == nil || !strings.Contains(err.Error(), "--sim-gpu") {
		t.Errorf("an unknown GPU: %v", err)
	}
}

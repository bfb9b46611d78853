package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/engines"
	"github.com/joulebench/joulebench/engines/all"

	"github.com/joulebench/joulebench/runner"
)

// engineFlags registers the flags that choose and configure the engine.
func (a *app) engineFlags(f *pflag.FlagSet) {
	f.StringSlice("engine", []string{all.Default}, "engine: "+a.engineHelp()+". Repeat it (--engine ollama --engine llamacpp) to run the profile against each engine in turn and compare them")
	f.StringArray("model", nil, "model id: vLLM/SGLang model path or Hugging Face id (also the served name); llama.cpp alias (default: the GGUF file name); Ollama model name; with --engine-url the model to request (default: the first listed). With several engines, KIND=ID gives one engine its own (--model ollama=tiny --model llamacpp=tiny); a plain ID serves every engine without its own")
	f.Int64("seed", 1, "seed of the engine (sampling) and of the simulator")
	f.String("api-key", "", "API key sent as a Bearer token to the engine (or JOULEBENCH_API_KEY); never logged nor archived")
	f.String("engine-url", "", "benchmark an already running server at this URL instead of starting one (no startup or release stage)")
	f.String("deployment", "", "YAML file of a deployment of several engine parts (prefill, decode, router, replica), each started here (kind, args) or already running (url); requests go to its entry part (docs/engines.md)")
	f.String("engine-api", "", "API of --engine-url: openai or ollama (default: from --engine)")
	f.StringArray("engine-bin", nil, "engine executable (default: vllm, python for SGLang, llama-server, ollama), checked to exist and be executable before any engine starts. With several engines, KIND=PATH gives one engine its own (--engine-bin ollama=/opt/ollama --engine-bin llamacpp=./llama-server); a plain PATH serves every engine without its own")
	f.String("image-digest", "", "the engine's container image digest (sha256:…), recorded in run.json as the weights' and engine's provenance")
	f.StringArray("engine-arg", nil, "extra engine command-line argument (repeatable, one argument each)")
	f.StringArray("engine-env", nil, "engine environment override KEY=VALUE (repeatable)")
	f.String("model-file", "", "GGUF model file (llama.cpp; Ollama creates --model from it when missing)")
	f.Int("port", 0, "engine port on 127.0.0.1 (0: a free one)")
	f.Int("tp", 1, "tensor-parallel size (vLLM, SGLang)")
	f.Int("max-model-len", 0, "longest request in tokens (vLLM --max-model-len, SGLang --context-length, llama.cpp context per slot, Ollama context); 0: the engine's default")
	f.Int("slots", 0, "requests served at once: llama.cpp -np (default 4), Ollama OLLAMA_NUM_PARALLEL")
	f.String("revision", "", "model revision to serve and expect (checked where the engine reports it: SGLang; Ollama digest)")
	f.String("engine-version", "", "engine version the identity check expects (empty: not checked)")
	f.String("precision", "", "weights' precision the identity check expects: a dtype (bf16, fp16, fp32) or a quantization (fp8, awq, gptq, q4_k_m, ...); empty: what the engine's --dtype/--quantization (--engine-arg) or GGUF file asks for. The served precision (vLLM/SGLang options over the model's config.json, the GGUF file type, Ollama's quantization_level) is recorded as run.json engine.precision")
	f.String("thinking", "", "reasoning models: on or off (Ollama think, else chat_template_kwargs.enable_thinking); empty: the model's default")
	f.Duration("scrape-interval", all.DefaultScrapeInterval, "interval of the engine /metrics side path")
	f.StringArray("metrics-family", nil, "engine metric family to keep in engine_metrics.jsonl (repeatable; default per engine)")
	a.engineSettingFlags(f)
}

// engineSettingFlags registers the engine-specific options the engines'
// descriptors declare (engines.Setting), with the help they give.
func (a *app) engineSettingFlags(f *pflag.FlagSet) {
	for _, st := range a.engines.Declared() {
		if st.Values == nil {
			f.Bool(st.Flag, false, st.Help())
			continue
		}
		f.String(st.Flag, st.Default, st.Help())
	}
}

// engineHelp lists the registered engine kinds for the --engine help:
// the ones joulebench starts (the simulated first), then the ones only
// given with --engine-url.
func (a *app) engineHelp() string {
	var local, remote []string
	for _, k := range a.engines.Kinds() {
		d, _ := a.engines.Lookup(k)
		switch {
		case d.Simulated:
			local = append([]string{k + " (" + d.Doc + ")"}, local...)
		case d.Start != nil:
			local = append(local, k)
		case d.Attach != nil:
			remote = append(remote, k+" ("+d.Doc+")")
		}
	}
	help := strings.Join(local, ", ")
	if len(remote) > 0 {
		help += "; with --engine-url also " + strings.Join(remote, ", ")
	}
	return help
}

// engineOptions reads the engine flags.
func (a *app) engineOptions() runner.EngineOptions {
	v := a.v
	return runner.EngineOptions{
		URL: v.GetString("engine-url"),
		API: v.GetString("engine-api"),
		Common: engines.Common{
			Args:        v.GetStringSlice("engine-arg"),
			ModelFile:   v.GetString("model-file"),
			Revision:    v.GetString("revision"),
			Port:        v.GetInt("port"),
			TP:          v.GetInt("tp"),
			MaxModelLen: v.GetInt("max-model-len"),
			Slots:       v.GetInt("slots"),
			Seed:        v.GetInt64("seed"),
		},
		Bins:              v.GetStringSlice("engine-bin"),
		EnvVars:           v.GetStringSlice("engine-env"),
		Models:            v.GetStringSlice("model"),
		EngineVersion:     v.GetString("engine-version"),
		Precision:         v.GetString("precision"),
		Thinking:          v.GetString("thinking"),
		Settings:          a.engines.Settings(v.GetString),
		APIKey:            v.GetString("api-key"),
		ScrapeInterval:    v.GetDuration("scrape-interval"),
		ScrapeIntervalSet: v.IsSet("scrape-interval"),
		MetricFamilies:    v.GetStringSlice("metrics-family"),
		MetricFamiliesSet: v.IsSet("metrics-family"),
	}
}

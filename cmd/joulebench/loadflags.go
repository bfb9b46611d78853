package main

import (
	"github.com/spf13/pflag"

	"github.com/joulebench/joulebench/runner"
)

// loadFlags registers the load flags of vLLM's `bench serve`, each mapped
// onto a profile parameter (runner.LoadOptions).
func loadFlags(f *pflag.FlagSet) {
	f.Float64("request-rate", 0, "as vLLM bench serve: formal requests per second (--set rate=R, and mode poisson, or gamma with --burstiness, unless --set mode is given); inf: all at once (mode unlimited)")
	f.Float64("burstiness", 1, "as vLLM bench serve, with --request-rate: shape of the gamma-distributed gaps (--set burstiness=B; 1 = poisson, below 1 burstier)")
	f.Int("max-concurrency", 0, "as vLLM bench serve: most formal requests in flight (--set max_concurrency=N; without a rate, N in flight: mode concurrency)")
	f.Int("num-prompts", 0, "as vLLM bench serve: formal requests (--set request_count=N)")
}

// loadFlagsGiven reads the vLLM load flags that were given.
func (a *app) loadFlagsGiven(changed func(string) bool) runner.LoadOptions {
	return runner.LoadOptions{
		Rate: a.v.GetFloat64("request-rate"), Burstiness: a.v.GetFloat64("burstiness"),
		MaxConcurrency: a.v.GetInt("max-concurrency"), NumPrompts: a.v.GetInt("num-prompts"),
		RateSet: changed("request-rate"), BurstinessSet: changed("burstiness"), MaxConcurrencySet: changed("max-concurrency"), NumPromptsSet: changed("num-prompts"),
	}
}

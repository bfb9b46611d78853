package loadresults

import (
	"encoding/json"
	"fmt"
)

// The GuideLLM format as read from vllm-project/guidellm (commit
// ee7a77457ba668b4b5ccb40f110518829893b36a, v0.7.3-12):
// src/guidellm/benchmark/schemas/report.py (GenerativeBenchmarksReport:
// metadata {version: 2, guidellm_version}, config, benchmarks),
// benchmark/schemas/benchmark.py (GenerativeBenchmark: config.strategy,
// scheduler_metrics, metrics, requests {successful, errored,
// incomplete}), benchmark/schemas/metrics.py (GenerativeMetrics:
// request_totals, StatusDistributionSummary per metric) and
// schemas/request_stats.py (GenerativeRequestStats, whose computed fields
// the JSON holds: request_start_time in Unix seconds, request_latency in
// seconds, prompt_tokens, output_tokens, time_to_first_token_ms,
// inter_token_latency_ms = (last − first token) / (output − 1)).
// config.sample_size keeps only a sample of each status's requests.

type guideFile struct {
	Metadata *struct {
		Version         *float64 `json:"version"`
		GuidellmVersion string   `json:"guidellm_version"`
	} `json:"metadata"`
	Benchmarks []guideBenchmark `json:"benchmarks"`
}

type guideBenchmark struct {
	Config struct {
		Strategy struct {
			Type string `json:"type_"`
		} `json:"strategy"`
	} `json:"config"`
	Duration *float64 `json:"duration"`
	Metrics  struct {
		RequestTotals struct {
			Successful, Errored, Incomplete *float64
		} `json:"request_totals"`
		PromptTokenCount   guideSummary `json:"prompt_token_count"`
		OutputTokenCount   guideSummary `json:"output_token_count"`
		TimeToFirstTokenMs guideSummary `json:"time_to_first_token_ms"`
		InterTokenLatMs    guideSummary `json:"inter_token_latency_ms"`
		RequestLatency     guideSummary `json:"request_latency"`
	} `json:"metrics"`
	Requests struct {
		Successful []guideRequest `json:"successful"`
		Errored    []guideRequest `json:"errored"`
		Incomplete []guideRequest `json:"incomplete"`
	} `json:"requests"`
}

type guideSummary struct {
	Successful *struct {
		Mean     *float64 `json:"mean"`
		TotalSum *float64 `json:"total_sum"`
	} `json:"successful"`
}

type guideRequest struct {
	RequestStart *float64 `json:"request_start_time"`
	Latency      *float64 `json:"request_latency"`
	PromptTokens *float64 `json:"prompt_tokens"`
	OutputTokens *float64 `json:"output_tokens"`
	TTFTMs       *float64 `json:"time_to_first_token_ms"`
	InterTokenMs *float64 `json:"inter_token_latency_ms"`
	Info         struct {
		Error *string `json:"error"`
	} `json:"info"`
}

func parseGuideLLM(name string, data []byte) (*Results, error) {
	var f guideFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: GuideLLM report: %w", name, err)
	}
	if f.Metadata == nil || f.Metadata.Version == nil {
		return nil, fieldError(name, "metadata.version", "missing: this reader knows the GuideLLM report schema version 2 (guidellm 0.4 and later)")
	}
	if *f.Metadata.Version != 2 {
		return nil, fieldError(name, "metadata.version", "%v: this reader knows the GuideLLM report schema version 2", *f.Metadata.Version)
	}
	if len(f.Benchmarks) == 0 {
		return nil, fieldError(name, "benchmarks", "empty: the report holds no benchmark")
	}
	r := &Results{Path: name, Format: GuideLLM, Tool: "guidellm", Version: f.Metadata.GuidellmVersion, Clock: ClockUnix}
	for i := range f.Benchmarks {
		if err := r.addGuideBenchmark(name, i, &f.Benchmarks[i], len(f.Benchmarks) == 1); err != nil {
			return nil, err
		}
	}
	if len(f.Benchmarks) > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d benchmarks (strategies) in one report: their requests are read together, each with its strategy as Group", len(f.Benchmarks)))
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
		r.NoRequests = "the report keeps no per-request data (config.sample_size 0)"
	}
	return r, nil
}

func (r *Results) addGuideBenchmark(name string, i int, b *guideBenchmark, only bool) error {
	path := fmt.Sprintf("benchmarks[%d]", i)
	group := fmt.Sprintf("%d:%s", i, b.Config.Strategy.Type)
	if only {
		group = ""
	}
	if err := r.addGuideAggregates(name, path, b, only); err != nil {
		return err
	}
	lists := []struct {
		status string
		reqs   []guideRequest
		total  *float64
	}{
		{"successful", b.Requests.Successful, b.Metrics.RequestTotals.Successful},
		{"errored", b.Requests.Errored, b.Metrics.RequestTotals.Errored},
		{"incomplete", b.Requests.Incomplete, b.Metrics.RequestTotals.Incomplete},
	}
	for _, l := range lists {
		if l.total != nil && float64(len(l.reqs)) < *l.total {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of %v %s requests kept (a sample, config.sample_size): per-request figures are over the sample", path, len(l.reqs), *l.total, l.status))
		}
		for j := range l.reqs {
			q, err := l.reqs[j].request(name, fmt.Sprintf("%s.requests.%s[%d]", path, l.status, j), l.status)
			if err != nil {
				return err
			}
			q.Group = group
			r.Requests = append(r.Requests, q)
		}
	}
	return nil
}

func (r *Results) addGuideAggregates(name, path string, b *guideBenchmark, only bool) error {
	a := &r.Aggregates
	t := b.Metrics.RequestTotals
	for _, c := range []struct {
		field string
		v     *float64
		to    *int
	}{
		{"successful", t.Successful, &a.Completed},
		{"errored", t.Errored, &a.Failed},
		{"incomplete", t.Incomplete, &a.Failed},
	} {
		if c.v == nil {
			return fieldError(name, path+".metrics.request_totals."+c.field, "missing")
		}
		n, err := checkCount(name, path+".metrics.request_totals."+c.field, *c.v)
		if err != nil {
			return err
		}
		*c.to += n
	}
	if b.Duration != nil {
		if err := checkSeconds(name, path+".duration", *b.Duration); err != nil {
			return err
		}
		a.Duration += *b.Duration
	}
	for _, s := range []struct {
		field string
		sum   guideSummary
		to    *int64
	}{
		{"prompt_token_count", b.Metrics.PromptTokenCount, &a.InputTokens},
		{"output_token_count", b.Metrics.OutputTokenCount, &a.OutputTokens},
	} {
		if s.sum.Successful == nil || s.sum.Successful.TotalSum == nil {
			continue
		}
		n, err := checkCount(name, path+".metrics."+s.field+".successful.total_sum", *s.sum.Successful.TotalSum)
		if err != nil {
			return err
		}
		*s.to += int64(n)
	}
	if !stated(a, "completed") {
		a.Stated = append(a.Stated, "completed", "duration", "output_tokens")
	}
	if !only {
		return nil
	}
	for _, m := range []struct {
		field string
		sum   guideSummary
		scale float64
		to    *float64
	}{
		{"time_to_first_token_ms", b.Metrics.TimeToFirstTokenMs, 1000, &a.MeanTTFT},
		{"inter_token_latency_ms", b.Metrics.InterTokenLatMs, 1000, &a.MeanTPOT},
		{"request_latency", b.Metrics.RequestLatency, 1, &a.MeanLatency},
	} {
		if m.sum.Successful == nil || m.sum.Successful.Mean == nil {
			continue
		}
		v := *m.sum.Successful.Mean / m.scale
		if err := checkSeconds(name, path+".metrics."+m.field+".successful.mean", v); err != nil {
			return err
		}
		*m.to = v
		a.Stated = append(a.Stated, m.field)
	}
	return nil
}

func (g *guideRequest) request(name, path, status string) (Request, error) {
	q := Request{OK: status == "successful"}
	if g.Info.Error != nil {
		q.Error = *g.Info.Error
	}
	if !q.OK && q.Error == "" {
		q.Error = status
	}
	if g.RequestStart != nil {
		if s := *g.RequestStart; s < 1e8 || s > 1e11 {
			return q, fieldError(name, path+".request_start_time", "%v is not a Unix time in seconds", s)
		}
		q.Start = *g.RequestStart
	} else if q.OK {
		return q, fieldError(name, path+".request_start_time", "missing for a successful request")
	}
	for _, d := range []struct {
		field string
		v     *float64
		scale float64
		to    *float64
	}{
		{"request_latency", g.Latency, 1, &q.Latency},
		{"time_to_first_token_ms", g.TTFTMs, 1000, &q.TTFT},
		{"inter_token_latency_ms", g.InterTokenMs, 1000, &q.TPOT},
	} {
		if d.v == nil {
			continue
		}
		if err := checkSeconds(name, path+"."+d.field, *d.v/d.scale); err != nil {
			return q, err
		}
		*d.to = *d.v / d.scale
	}
	var err error
	if g.PromptTokens != nil {
		if q.InputTokens, err = checkTokens(name, path+".prompt_tokens", *g.PromptTokens); err != nil {
			return q, err
		}
	}
	if g.OutputTokens != nil {
		if q.OutputTokens, err = checkTokens(name, path+".output_tokens", *g.OutputTokens); err != nil {
			return q, err
		}
	} else if q.OK {
		return q, fieldError(name, path+".output_tokens", "missing for a successful request")
	}
	return q, nil
}

package loadresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// The AIPerf format as read from ai-dynamo/aiperf (commit
// db4f6397d11ee2d4cfbb41f70b2327315163dcf0, version 0.1.1):
// docs/tutorials/working-with-profile-exports.md (profile_export.jsonl,
// one MetricRecordInfo per line: metadata {request_start_ns,
// request_end_ns, benchmark_phase, was_cancelled, ...}, metrics {name:
// {value, unit}}, error null or {code, type, message}),
// aiperf/metrics/types/*.py (time_to_first_token, request_latency,
// inter_token_latency = (latency − TTFT) / (OSL − 1), inter_chunk_latency,
// input_sequence_length, output_sequence_length = output + reasoning
// tokens) and aiperf/common/enums/metric_enums.py (time units ns, us,
// ms, sec). The file records no AIPerf version.

type aiperfLine struct {
	Metadata *struct {
		RequestStartNs *json.Number `json:"request_start_ns"`
		RequestEndNs   *json.Number `json:"request_end_ns"`
		Phase          string       `json:"benchmark_phase"`
		WasCancelled   bool         `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"metrics"`
	Error *struct {
		Code    any    `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// aiperfSeconds converts AIPerf's time units to seconds.
var aiperfSeconds = map[string]float64{"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1, "s": 1}

func parseAIPerf(name string, data []byte) (*Results, error) {
	r := &Results{Path: name, Format: AIPerf, Tool: "aiperf", Clock: ClockUnix}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBytes)
	skipped := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		at := fmt.Sprintf("%s:%d", name, line)
		var l aiperfLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s: not an AIPerf record: %w", at, err)
		}
		if l.Metadata == nil {
			return nil, fieldError(at, "metadata", "missing")
		}
		if ph := l.Metadata.Phase; ph != "" && ph != "profiling" {
			skipped[ph]++
			continue
		}
		q, err := l.request(at)
		if err != nil {
			return nil, err
		}
		r.Requests = append(r.Requests, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for ph, n := range skipped {
		r.Notes = append(r.Notes, fmt.Sprintf("%d records of benchmark_phase %q left out (only profiling is measured)", n, ph))
	}
	if len(r.Requests) == 0 {
		return nil, fmt.Errorf("%s: no profiling record", name)
	}
	r.summarize()
	return r, nil
}

func (l *aiperfLine) request(at string) (Request, error) {
	var q Request
	start, err := nsTime(at, "metadata.request_start_ns", l.Metadata.RequestStartNs)
	if err != nil {
		return q, err
	}
	q.Start = start
	q.OK = l.Error == nil && !l.Metadata.WasCancelled
	if l.Error != nil {
		q.Error = fmt.Sprintf("%s: %s (code %v)", l.Error.Type, l.Error.Message, l.Error.Code)
	} else if l.Metadata.WasCancelled {
		q.Error = "cancelled"
	}
	for _, d := range []struct {
		metric string
		to     *float64
	}{
		{"time_to_first_token", &q.TTFT},
		{"request_latency", &q.Latency},
		{"inter_token_latency", &q.TPOT},
	} {
		if *d.to, err = l.seconds(at, d.metric); err != nil {
			return q, err
		}
	}
	if q.ITL, err = l.secondsList(at, "inter_chunk_latency"); err != nil {
		return q, err
	}
	if q.InputTokens, err = l.tokens(at, "input_sequence_length"); err != nil {
		return q, err
	}
	if q.OutputTokens, err = l.tokens(at, "output_sequence_length"); err != nil {
		return q, err
	}
	if q.OK && q.Latency == 0 {
		return q, fieldError(at, "metrics.request_latency", "missing for a successful request")
	}
	return q, nil
}

// nsTime reads an epoch time in nanoseconds as Unix seconds.
func nsTime(at, field string, v *json.Number) (float64, error) {
	if v == nil {
		return 0, fieldError(at, field, "missing")
	}
	n, err := v.Int64()
	if err != nil || n < 1e17 {
		return 0, fieldError(at, field, "%s is not an epoch time in nanoseconds", v.String())
	}
	return float64(n/1e9) + float64(n%1e9)/1e9, nil
}

// seconds reads a time metric (0 when the record has none).
func (l *aiperfLine) seconds(at, metric string) (float64, error) {
	m, ok := l.Metrics[metric]
	if !ok {
		return 0, nil
	}
	field := "metrics." + metric
	scale, ok := aiperfSeconds[m.Unit]
	if !ok {
		return 0, fieldError(at, field+".unit", "%q is not a time unit (ns, us, ms, sec)", m.Unit)
	}
	var v float64
	if err := json.Unmarshal(m.Value, &v); err != nil {
		return 0, fieldError(at, field+".value", "not a number: %v", err)
	}
	if err := checkSeconds(at, field+".value", v*scale); err != nil {
		return 0, err
	}
	return v * scale, nil
}

// secondsList reads a list-valued time metric (nil when none).
func (l *aiperfLine) secondsList(at, metric string) ([]float64, error) {
	m, ok := l.Metrics[metric]
	if !ok {
		return nil, nil
	}
	field := "metrics." + metric
	scale, ok := aiperfSeconds[m.Unit]
	if !ok {
		return nil, fieldError(at, field+".unit", "%q is not a time unit (ns, us, ms, sec)", m.Unit)
	}
	var vs []float64
	if err := json.Unmarshal(m.Value, &vs); err != nil {
		return nil, fieldError(at, field+".value", "not a list of numbers: %v", err)
	}
	for i := range vs {
		vs[i] *= scale
		if err := checkSeconds(at, fmt.Sprintf("%s.value[%d]", field, i), vs[i]); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// tokens reads a token-count metric (0 when the record has none).
func (l *aiperfLine) tokens(at, metric string) (int, error) {
	m, ok := l.Metrics[metric]
	if !ok {
		return 0, nil
	}
	field := "metrics." + metric
	if m.Unit != "tokens" {
		return 0, fieldError(at, field+".unit", "%q, want tokens", m.Unit)
	}
	var v float64
	if err := json.Unmarshal(m.Value, &v); err != nil {
		return 0, fieldError(at, field+".value", "not a number: %v", err)
	}
	return checkTokens(at, field+".value", v)
}

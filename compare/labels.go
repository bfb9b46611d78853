package compare

import (
	"math"
	"path"
	"strconv"
	"strings"
)

// ShortLoad names a load briefly: c16 for a concurrency, 2.5 req/s for a
// rate, "cmd hey" or "live traffic over 30s" for a run of joulebench
// measure, else its mode (or LoadText).
func ShortLoad(load map[string]any) string {
	if c, ok := load["command"].(string); ok && c != "" {
		// A run of joulebench measure: its load is the command's (its
		// program's name, path left out).
		prog, _, _ := strings.Cut(c, " ")
		return "cmd " + path.Base(prog)
	}
	if l, ok := load["load"].(string); ok && l != "" {
		return l
	}
	if c, ok := load["concurrency"].(float64); ok && c > 0 {
		return "c" + strconv.FormatFloat(c, 'g', -1, 64)
	}
	for _, k := range []string{"rate", "request_rate"} {
		if r, ok := load[k].(float64); ok && r > 0 {
			return strconv.FormatFloat(r, 'g', 4, 64) + " req/s"
		}
	}
	if m, ok := load["mode"].(string); ok && m != "" {
		return m
	}
	return LoadText(load)
}

// PointLabel is the label of a run or load point in every view: its
// short load and its GPU setting, "c32 · 250 W", "c32 · default"; the
// setting alone when the run has no load fields.
func PointLabel(load map[string]any, s GPUSetting) string {
	if l := ShortLoad(load); l != "-" {
		return l + " · " + s.Text
	}
	return s.Text
}

// PercentileName is the latency percentile an attainment target implies:
// "p90" for 0.9, "p99" for 0.99, "p99.5" for 0.995.
func PercentileName(attainment float64) string {
	return "p" + strconv.FormatFloat(math.Round(attainment*1000)/10, 'f', -1, 64)
}

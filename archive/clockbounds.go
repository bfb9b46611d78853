package archive

import (
	"fmt"
	"math"

	"github.com/joulebench/joulebench/archive/record"
)

// MaxClockOffsetS bounds a recorded clock offset (docs/archive-v1.md,
// "Bounds"): a node whose clock is more than a day from the run's is
// misconfigured, and its samples cannot be placed.
const MaxClockOffsetS = 86400

// clockSyncWithinBounds: each telemetry.clock_sync entry names its
// source; its offsets are finite and within ± MaxClockOffsetS, its round
// trips finite and ≥ 0; the end offset and the end round trip come
// together; a complete run's entries have their end (a run that completed
// measured every clock again at its end).
func clockSyncWithinBounds(d *metaDoc) error {
	for i, c := range d.m.Telemetry.ClockSync {
		at := func(msg, key string) error {
			path := []any{"telemetry", "clock_sync", i}
			if key != "" {
				path = append(path, key)
			}
			return d.at(fmt.Sprintf("telemetry.clock_sync[%d].%s", i, msg), path...)
		}
		if c.Source == "" {
			return at("source is empty: an entry names its source", "")
		}
		if msg := offsetBound("start_offset_s", c.StartOffsetS); msg != "" {
			return at(msg, "start_offset_s")
		}
		if msg := rttBound("start_rtt_s", c.StartRTTS); msg != "" {
			return at(msg, "start_rtt_s")
		}
		if (c.EndOffsetS == nil) != (c.EndRTTS == nil) {
			return at("end_offset_s and end_rtt_s: one without the other (an end measurement records both)", "end_offset_s")
		}
		if c.EndOffsetS != nil {
			if msg := offsetBound("end_offset_s", *c.EndOffsetS); msg != "" {
				return at(msg, "end_offset_s")
			}
			if msg := rttBound("end_rtt_s", *c.EndRTTS); msg != "" {
				return at(msg, "end_rtt_s")
			}
		} else if d.m.Status == record.StatusComplete {
			return at(fmt.Sprintf("end_offset_s is absent but status is complete: a run that completed measured %s's clock again at its end", c.Source), "")
		}
		if c.Probes < 0 {
			return at(fmt.Sprintf("probes %d is negative", c.Probes), "probes")
		}
	}
	return nil
}

func offsetBound(key string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > MaxClockOffsetS {
		return fmt.Sprintf("%s %v is outside ± %d s (a day)", key, v, MaxClockOffsetS)
	}
	return ""
}

func rttBound(key string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > MaxClockOffsetS {
		return fmt.Sprintf("%s %v is negative or not a round trip", key, v)
	}
	return ""
}

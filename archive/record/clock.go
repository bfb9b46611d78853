package record

// ClockSync is one power source's clock offset to the run clock
// (run.json telemetry.clock_sync[]), measured by round trips at the start
// of the run and at its end (package internal/clocksync). A source on
// another node (a joulebench agent, a simulated node) stamps its samples
// with its own clock; power.csv holds them mapped onto the run clock with
// these offsets, interpolated in time.
type ClockSync struct {
	// Source names the source (its --telemetry kind and address), Host
	// the node whose clock it is; the devices of that host are the ones
	// the offsets apply to.
	Source string `json:"source"`
	Host   string `json:"host,omitempty"`
	// StartOffsetS is that clock minus the run clock at the start, in
	// seconds, known within ± StartRTTS/2; EndOffsetS and EndRTTS the
	// same at the end (absent while the run has not ended).
	StartOffsetS float64  `json:"start_offset_s"`
	StartRTTS    float64  `json:"start_rtt_s"`
	EndOffsetS   *float64 `json:"end_offset_s,omitempty"`
	EndRTTS      *float64 `json:"end_rtt_s,omitempty"`
	// Probes is the number of round trips of each measurement.
	Probes int `json:"probes,omitempty"`
}

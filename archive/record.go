package archive

// The record types are package record's (the types without I/O that
// profiles' expressions and the measurement see), named only there;
// this package holds their codecs, reader and writer.

// File names inside a run directory.
const (
	RunFile           = "run.json"
	PowerFile         = "power.csv"
	RequestsFile      = "requests.jsonl"
	EngineMetricsFile = "engine_metrics.jsonl"
	ResultsFile       = "results.json"
	EngineLogFile     = "engine.log"
	LogFile           = "joulebench.log"
)

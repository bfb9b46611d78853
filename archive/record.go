package archive

import "github.com/joulebench/joulebench/archive/record"

// The record types are package record's (the types without I/O that
// profiles' expressions and the measurement see); this package, their
// codecs, names them too so that a reader of archives needs one import.

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

// Record types.
type (
	Meta          = record.Meta
	ImportInfo    = record.ImportInfo
	ImportFile    = record.ImportFile
	ProfileRef    = record.ProfileRef
	EngineInfo    = record.EngineInfo
	RequestSet    = record.RequestSet
	TraceWindow   = record.TraceWindow
	LoadShape     = record.LoadShape
	DatasetOrigin = record.DatasetOrigin
	Hardware      = record.Hardware
	Device        = record.Device
	HostInfo      = record.HostInfo
	TelemetryInfo = record.TelemetryInfo
	Stage         = record.Stage
	Event         = record.Event
	PowerSample   = record.PowerSample
	Request       = record.Request
	EngineMetric  = record.EngineMetric
	Result        = record.Result
	Results       = record.Results
	Run           = record.Run
)

// Values of record fields.
const (
	FormatVersion     = record.FormatVersion
	StatusRunning     = record.StatusRunning
	StatusComplete    = record.StatusComplete
	StatusFailed      = record.StatusFailed
	StatusInterrupted = record.StatusInterrupted
	DomainGPU         = record.DomainGPU
	DomainCPU         = record.DomainCPU
	DomainDRAM        = record.DomainDRAM
	DomainNode        = record.DomainNode
)

// Domains lists the valid power domains in the order reports show them.
var Domains = record.Domains

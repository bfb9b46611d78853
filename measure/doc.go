// Package measure is the measurement maths of joulebench, apart from any
// expression engine: a run's power samples indexed for integration
// (PowerData: energy over an interval by trapezoid or cumulative counter,
// mean power, memory), per-request energy attribution by generation
// interval, the steady-state search, release-complete detection, and
// statistics on lists of numbers (mean, percentile, median, std, CV, pooled
// std, ranks, Spearman). Each method follows docs/methodology.md and is documented
// with hand-derived values in its tests. It does no I/O.
//
// metricdefs exposes these functions to profile formulas; report, plot,
// compare and steps call them directly.
package measure

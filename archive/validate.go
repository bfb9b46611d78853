package archive

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
)

// The validation phase: the rules of docs/archive-v1.md ("Bounds") held
// against a decoded run. Each rule is a small function named after what it
// enforces; the lists below give them in the order they are checked, which
// decides which error is reported when a line breaks two.

// metaRules are the rules on run.json.
func metaRules() []func(*metaDoc) error {
	return []func(*metaDoc) error{
		stageNamesUnique,
		countsNotNegative,
		intervalNotNegative,
		loadNotNegative,
		statusIsARunStatus,
		completeRunEndedEveryStage,
		devicesInTheirDomain,
		runSpanInOrder,
		stagesAndEventsInRun,
	}
}

// powerRules are the rules on the samples of power.csv, d, under the facts
// f of their run.json.
func powerRules(f *facts, d *decoded[PowerSample]) []rule {
	return []rule{
		each(d.rows, f.powerTimeInRun),
		each(d.rows, powerNotNegative),
		each(d.rows, energyNotNegative),
		each(d.rows, f.deviceListed),
		each(d.rows, f.powerWithinPhysicalBound),
		each(d.rows, energyWithinCounterBound),
		samplesInTimeOrder(d),
	}
}

// requestRules are the rules on the records of requests.jsonl, d, under
// the facts f of their run.json. None looks at another record (the ids'
// uniqueness is requestIDsUnique, held once these pass), so that they are
// applied in parallel.
func requestRules(f *facts, d *decoded[Request]) []rule {
	return []rule{
		each(d.rows, okRequestHasItsTimes),
		each(d.rows, tokenCountsMatchTokenTimes),
		each(d.rows, requestCountsInBounds),
		each(d.rows, failedRequestHasNoTokens),
		each(d.rows, tokensWithinEvidence),
		each(d.rows, firstTokenBoundNotNegative),
		each(d.rows, engineTimingsNotNegative),
		each(d.rows, requestTimesInRunInOrder(f.w)),
		each(d.rows, firstTokenBoundWithinTTFT),
		each(d.rows, f.requestInsideItsStage),
	}
}

// requestIDsUnique: two requests never share a non-empty id (a line
// written twice, or two files joined).
func requestIDsUnique() *uniqueKey[Request] {
	return &uniqueKey[Request]{
		key: func(q *Request) (string, bool) { return q.ID, q.ID != "" }, // requests without an id are not checked
		msg: func(q *Request) string { return fmt.Sprintf("duplicate request id %q", q.ID) },
	}
}

// engineMetricRules are the rules on the samples of engine_metrics.jsonl,
// d, in the run's window w.
func engineMetricRules(w window, d *decoded[EngineMetric]) []rule {
	return []rule{
		each(d.rows, metricHasName),
		each(d.rows, func(m *EngineMetric) string { return w.check("t", m.T) }), // metric time in the run
	}
}

// metricHasName: every engine metric sample has a name.
func metricHasName(m *EngineMetric) string {
	if m.Name == "" {
		return "engine metric has no name"
	}
	return ""
}

// engineMetricSamplesUnique: one series (name and labels) has one sample
// per time.
func engineMetricSamplesUnique() *uniqueKey[EngineMetric] {
	return &uniqueKey[EngineMetric]{key: engineMetricKey, msg: func(m *EngineMetric) string {
		return fmt.Sprintf("duplicate sample of %s at t=%v (same name and labels)", m.Name, m.T)
	}}
}

// runRules are the rules across the files of a run, held once each file
// keeps to its own.
func runRules() []func(*decodedRun) error {
	return []func(*decodedRun) error{
		completeRunHasEveryFormalRequest,
		completeRunHasPowerOfEveryDevice,
	}
}

// validate is the validation phase of Load: run.json's rules, then each
// data file's (the three at once), then the rules across files. It
// reports, as ever, run.json's first broken rule alone, else each data
// file's first error (joined, in the order power.csv, requests.jsonl,
// engine_metrics.jsonl, results.json), else the first broken rule across
// files. A file's first error is the first in the file: the error that
// ended its decoding, unless a rule is broken on a line before it.
func (d *decodedRun) validate() error {
	if err := d.meta.validate(); err != nil {
		return err
	}
	f := runFacts(d.meta.m)
	var errs [4]error
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = d.power.validate(powerRules(f, d.power), false, nil) })
	wg.Go(func() { errs[1] = d.requests.validate(requestRules(f, d.requests), true, requestIDsUnique()) })
	wg.Go(func() {
		errs[2] = d.metrics.validate(engineMetricRules(f.w, d.metrics), true, engineMetricSamplesUnique())
	})
	errs[3] = d.resultsErr
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	for _, r := range runRules() {
		if err := r(d); err != nil {
			return err
		}
	}
	return nil
}

// validate holds run.json to metaRules; the error is the first rule's
// that is broken.
func (d *metaDoc) validate() error {
	for _, r := range metaRules() {
		if err := r(d); err != nil {
			return err
		}
	}
	return nil
}

// A rule is one rule of docs/archive-v1.md ("Bounds") on the records of one
// decoded data file: it says why record i breaks it ("" when i keeps to
// it). It is called on the records in file order, each once, so that it
// may remember the ones before (a device's time order); a rule that does
// not (each) may be called from several goroutines.
type rule func(i int) string

// each is the rule check makes on each record of rows alone.
func each[T any](rows []T, check func(*T) string) rule {
	return func(i int) string { return check(&rows[i]) }
}

// validate says what is wrong with the data file d: the first record, in
// file order, that breaks one of rules (on a line before the error that
// ended its decoding: d.rows stop there), else that error, else the first
// record whose key is an earlier one's (unique, when not nil). With
// parallel, the records are checked in as many parts as there are
// processors; each of rules must then look at its record alone.
func (d *decoded[T]) validate(rules []rule, parallel bool, unique *uniqueKey[T]) error {
	if err := d.firstBroken(rules, parallel); err != nil {
		return err
	}
	if d.err != nil {
		return d.err
	}
	if unique != nil {
		return d.unique(unique)
	}
	return nil
}

// minPart is the fewest records the checking of a file is split into parts
// for: below it a goroutine costs more than it saves.
const minPart = 4096

// firstBroken is the error of the first record of d that breaks one of
// rules (the first of them it breaks), nil when every record keeps to all.
func (d *decoded[T]) firstBroken(rules []rule, parallel bool) *LineError {
	n := len(d.rows)
	first := func(lo, hi int) (int, string) {
		for i := lo; i < hi; i++ {
			for _, r := range rules {
				if msg := r(i); msg != "" {
					return i, msg
				}
			}
		}
		return -1, ""
	}
	parts := 1
	if parallel {
		parts = max(1, min(runtime.GOMAXPROCS(0), n/minPart))
	}
	bad, msgs := make([]int, parts), make([]string, parts)
	if parts == 1 {
		bad[0], msgs[0] = first(0, n)
	} else {
		size := (n + parts - 1) / parts
		var wg sync.WaitGroup
		for p := range parts {
			wg.Go(func() { bad[p], msgs[p] = first(p*size, min(n, (p+1)*size)) })
		}
		wg.Wait()
	}
	for p, i := range bad { // in file order
		if i >= 0 {
			return &LineError{File: d.name, Line: d.lines[i], Msg: msgs[p]}
		}
	}
	return nil
}

// completeRunHasEveryFormalRequest: a complete run holds every formal
// request run.json counts. Missing data is an error, not an absence: a
// file cut at a line boundary, or deleted, would otherwise read as a
// smaller run.
func completeRunHasEveryFormalRequest(d *decodedRun) error {
	m := d.meta.m
	if m.Status != StatusComplete {
		return nil
	}
	formal := 0
	for i := range d.requests.rows {
		if d.requests.rows[i].Phase == "formal" {
			formal++
		}
	}
	if formal < m.RequestSet.Count {
		return fmt.Errorf("%s: request_set.count is %d but %s has %d formal requests; a complete run records every formal request it sent (failed ones too), so %d missing: the file was cut or lines were deleted",
			filepath.Join(d.dir, RunFile), m.RequestSet.Count, filepath.Join(d.dir, RequestsFile), formal, m.RequestSet.Count-formal)
	}
	return nil
}

// completeRunHasPowerOfEveryDevice: a complete run holds power samples of
// every device run.json lists.
func completeRunHasPowerOfEveryDevice(d *decodedRun) error {
	m := d.meta.m
	if m.Status != StatusComplete || len(m.Hardware.Devices) == 0 {
		return nil
	}
	runFile, powerFile := filepath.Join(d.dir, RunFile), filepath.Join(d.dir, PowerFile)
	if !d.power.found {
		return fmt.Errorf("%s: missing, but %s lists %d measured devices (%s) in a complete run; missing power data is an error, not an absence",
			powerFile, runFile, len(m.Hardware.Devices), devicesList(m.Hardware.Devices))
	}
	has := make(map[string]bool, len(m.Hardware.Devices))
	for i := range d.power.rows {
		has[d.power.rows[i].Device] = true
	}
	for _, dev := range m.Hardware.Devices {
		if !has[dev.ID] {
			return fmt.Errorf("%s: no sample of device %q, which %s's hardware.devices lists (a complete run has power samples of every measured device); missing power data is an error, not an absence",
				powerFile, dev.ID, runFile)
		}
	}
	return nil
}

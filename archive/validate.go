package archive

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/joulebench/joulebench/archive/record"
)

// The validation phase: the rules of docs/archive-v1.md ("Bounds") held
// against a decoded run. Each rule is a small function named after what it
// enforces; the lists below give them in the order they are checked, which
// decides which error is reported when a line breaks two.

// metaRules are the rules on run.json.
func metaRules() []func(*metaDoc) error {
	rules := []func(*metaDoc) error{
		stageNamesUnique,
		countsNotNegative,
		intervalNotNegative,
		clockSyncWithinBounds,
		loadNotNegative,
		statusIsARunStatus,
		completeRunEndedEveryStage,
		gpuSettingsWithinBounds,
		devicesInTheirDomain,
		devicesHaveARole,
		runSpanInOrder,
		stagesAndEventsInRun,
	}
	rules = append(rules, deviceRules()...) // also checked before a run measures (CheckDevices)
	return append(rules,
		runIDIsSafeName,
		lifecycleStagesApart,
		lifecycleStagesMeet,
		warmupInsideStartup,
		managedRunHasItsLifecycle,
		eventsInTheirStage,
	)
}

// devicesHaveARole: each listed device's role, when set, is one of
// record.Roles; an unknown one (a typo, a role of a later format) would
// otherwise count the device's energy to no phase.
func devicesHaveARole(d *metaDoc) error {
	for i, dev := range d.m.Hardware.Devices {
		if dev.Role != "" && !slices.Contains(record.Roles, dev.Role) {
			return d.at(fmt.Sprintf("hardware.devices[%d] (device %q): role %q is not a device role (%s, or absent for a single-engine run)",
				i, dev.ID, dev.Role, strings.Join(record.Roles, ", ")), "hardware", "devices", i, "role")
		}
	}
	return nil
}

// powerRules are the rules on the samples of power.csv, d, under the facts
// f of their run.json.
func powerRules(f *facts, d *decoded[record.PowerSample]) []rule[record.PowerSample] {
	return []rule[record.PowerSample]{
		each(f.powerTimeInRun),
		each(powerNotNegative),
		each(energyNotNegative),
		each(f.listedDeviceWithinItsBound),
		each(energyWithinCounterBound),
		{inOrder: samplesInTimeOrder(d)},
	}
}

// requestRules are the rules on the records of requests.jsonl under the
// facts f of their run.json. None looks at another record (the ids'
// uniqueness is requestIDsUnique, held once these pass), so that they are
// applied in parallel.
func requestRules(f *facts) []rule[record.Request] {
	return []rule[record.Request]{
		each(okRequestHasItsTimes),
		each(tokenCountsMatchTokenTimes),
		each(requestCountsInBounds),
		each(failedRequestHasNoTokens),
		each(tokensWithinEvidence),
		each(firstTokenBoundNotNegative),
		each(engineTimingsNotNegative),
		each(requestTimesInRunInOrder(f.w)),
		each(firstTokenBoundWithinTTFT),
		each(f.requestInsideItsStage),
		each(outputTokensWithinEvidence),
		each(estimateWithinItsText),
		each(singleTokenChunksMatch),
	}
}

// requestIDsUnique: two requests never share a non-empty id (a line
// written twice, or two files joined).
func requestIDsUnique() *uniqueKey[record.Request] {
	return &uniqueKey[record.Request]{
		key: func(q *record.Request) (string, bool) { return q.ID, q.ID != "" }, // requests without an id are not checked
		msg: func(q *record.Request) string { return fmt.Sprintf("duplicate request id %q", q.ID) },
	}
}

// engineMetricRules are the rules on the samples of engine_metrics.jsonl
// in the run's window w.
func engineMetricRules(w window) []rule[record.EngineMetric] {
	return []rule[record.EngineMetric]{
		each(metricHasName),
		each(metricTimeInRun(w)),
	}
}

// metricTimeInRun: every engine metric sample's t lies in the run's
// window w.
func metricTimeInRun(w window) func(*record.EngineMetric) string {
	return func(m *record.EngineMetric) string { return w.check("t", m.T) }
}

// metricHasName: every engine metric sample has a name.
func metricHasName(m *record.EngineMetric) string {
	if m.Name == "" {
		return "engine metric has no name"
	}
	return ""
}

// engineMetricSamplesUnique: one series (name and labels) has one sample
// per time.
func engineMetricSamplesUnique() *uniqueKey[record.EngineMetric] {
	return &uniqueKey[record.EngineMetric]{key: engineMetricKey, msg: func(m *record.EngineMetric) string {
		return fmt.Sprintf("duplicate sample of %s at t=%v (same name and labels)", m.Name, m.T)
	}}
}

// runRules are the rules across the files of a run, held once each file
// keeps to its own.
func runRules() []func(*decodedRun) error {
	return []func(*decodedRun) error{
		completeRunHasEveryFormalRequest,
		completeRunHasPowerOfEveryDevice,
		requestsMatchImport,
		formalStageStartsAtItsFirstRequest,
		formalStageEndsAtItsLastResponse,
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
	wg.Go(func() { errs[0] = d.power.validate(powerRules(f, d.power), nil) })
	wg.Go(func() { errs[1] = d.requests.validate(requestRules(f), requestIDsUnique()) })
	wg.Go(func() { errs[2] = d.metrics.validate(engineMetricRules(f.w), engineMetricSamplesUnique()) })
	errs[3] = d.resultsErr
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	// A measured run's requests first (validate_measure.go): their error
	// says what a measured run holds, not an import's.
	for _, r := range append([]func(*decodedRun) error{measuredRequestsMatch}, runRules()...) {
		if err := r(d); err != nil {
			return err
		}
	}
	return nil
}

// validate holds run.json to metaRules; the error is the first rule's
// that is broken.
func (d *metaDoc) validate() error {
	for _, r := range append(metaRules(), measureMetaRules()...) { // a measured run's: validate_measure.go
		if err := r(d); err != nil {
			return err
		}
	}
	return nil
}

// A rule is one rule of docs/archive-v1.md ("Bounds") on the records of one
// decoded data file, saying why a record breaks it ("" when it keeps to
// it): either each, on one record alone, or inOrder, on record i, called
// on the records in file order, each once, so that it may remember the
// ones before (a device's time order); it must look at no record after i.
type rule[T any] struct {
	each    func(*T) string
	inOrder func(i int) string
}

// each is the rule check makes on each record alone.
func each[T any](check func(*T) string) rule[T] {
	return rule[T]{each: check}
}

// validate says what is wrong with the data file d: the first record, in
// file order, that breaks one of rules (on a line before the error that
// ended its decoding: d.rows stop there), else that error, else the first
// record whose key is an earlier one's (unique, when not nil).
func (d *decoded[T]) validate(rules []rule[T], unique *uniqueKey[T]) error {
	if err := d.firstBroken(rules); err != nil {
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
// The each rules check the records in as many parts as there are
// processors, and each inOrder rule all of them, all at once; the first
// broken is then chosen by line, and on one line by the order of rules.
// An inOrder rule that looks at records a rule before it refuses finds
// nothing earlier than that refusal, which is chosen.
func (d *decoded[T]) firstBroken(rules []rule[T]) *LineError {
	type broken struct {
		i, rule int // the record, the rule's place in rules
		msg     string
	}
	var (
		mu    sync.Mutex
		first = broken{i: -1}
		wg    sync.WaitGroup
	)
	note := func(b broken) {
		mu.Lock()
		defer mu.Unlock()
		if first.i < 0 || b.i < first.i || b.i == first.i && b.rule < first.rule {
			first = b
		}
	}
	n := len(d.rows)
	var each []int // the places of the each rules
	for j, r := range rules {
		if r.each != nil {
			each = append(each, j)
			continue
		}
		wg.Go(func() {
			for i := range n {
				if msg := r.inOrder(i); msg != "" {
					note(broken{i, j, msg})
					return
				}
			}
		})
	}
	if len(each) > 0 {
		parts := max(1, min(runtime.GOMAXPROCS(0), n/minPart))
		size := (n + parts - 1) / parts
		for p := range parts {
			wg.Go(func() {
				for i := p * size; i < min(n, (p+1)*size); i++ {
					for _, j := range each {
						if msg := rules[j].each(&d.rows[i]); msg != "" {
							note(broken{i, j, msg})
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	if first.i < 0 {
		return nil
	}
	return &LineError{File: d.name, Line: d.line(first.i), Msg: first.msg}
}

// completeRunHasEveryFormalRequest: a complete run holds every formal
// request run.json counts. Missing data is an error, not an absence: a
// file cut at a line boundary, or deleted, would otherwise read as a
// smaller run.
func completeRunHasEveryFormalRequest(d *decodedRun) error {
	m := d.meta.m
	if m.Status != record.StatusComplete {
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
	if m.Status != record.StatusComplete || len(m.Hardware.Devices) == 0 {
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

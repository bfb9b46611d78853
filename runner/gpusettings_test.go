//go:build cgo && unix

package runner

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/telemetry"
	"github.com/joulebench/joulebench/telemetry/gpusettings"
	"github.com/joulebench/joulebench/telemetry/nvml"
	"github.com/joulebench/joulebench/telemetry/nvml/nvmltest"
)

// gpuSpec is the tiny profile on the simulator with a 250 W limit applied,
// through NVML, to go-nvml's mock DGX (eight GPUs at 400 W); journalSeen
// reports whether the journal was on disk at the first change.
func gpuSpec(t *testing.T, msgs *syncBuffer) (Spec, *nvmltest.Server, gpusettings.Journals, func() bool) {
	t.Helper()
	srv := nvmltest.New()
	journal := gpusettings.Journals{Dirs: []string{filepath.Join(t.TempDir(), "state")}}
	seen, first := false, true
	srv.BeforeSet = func() {
		if first {
			first = false
			found, err := journal.Find()
			seen = err == nil && len(found) == 8
		}
	}
	s := testSpec(t, msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.GPU = GPUOptions{GPUSettingValues: record.GPUSettingValues{PowerLimit: "250"}, Journals: journal,
		Open: func(bool) (gpusettings.Controller, error) { return nvml.NewSettings(srv) }}
	return s, srv, journal, func() bool { return seen }
}

// readJournals reads the run's journals (none: nil).
func readJournals(t *testing.T, journal gpusettings.Journals) []*gpusettings.Journal {
	t.Helper()
	found, err := journal.Find()
	if err != nil {
		t.Errorf("journal: %v", err)
	}
	var out []*gpusettings.Journal
	for _, f := range found {
		out = append(out, f.Journal)
	}
	return out
}

// restored checks that every GPU is back at 400 W and the journal gone.
func restored(t *testing.T, srv *nvmltest.Server, journal gpusettings.Journals) {
	t.Helper()
	srv.Lock()
	defer srv.Unlock()
	for i, g := range srv.GPUs {
		if g.LimitMW != 400000 {
			t.Errorf("GPU %d: %d mW after the run, want 400000 (restored)", i, g.LimitMW)
		}
		if g.Sets != 2 {
			t.Errorf("GPU %d: %d sets, want 2 (set, restored)", i, g.Sets)
		}
	}
	if found, err := journal.Find(); err != nil || len(found) > 0 {
		t.Errorf("journals left after the run: %v, %v", found, err)
	}
}

// Success: the limit is applied after the checks with the journal on disk
// first, read back and recorded in run.json, and restored at the end.
func TestRunGPUSettingsSuccess(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, seen := gpuSpec(t, &msgs)
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	if !seen() {
		t.Error("journal not on disk at the first change")
	}
	restored(t, srv, journal)
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	g := run.Meta.GPUSettings
	if !strings.Contains(msgs.String(), "GPU settings restored (nvml): power limit 400 W on GPU 0, 1, 2, 3, 4, 5, 6, 7") || g == nil || g.Restore != record.RestoreDone {
		t.Errorf("restore not said or recorded: %+v\n%s", g, msgs.String())
	}
	if g == nil || g.PowerLimitW != "250" || g.Controller != "nvml" || len(g.Devices) != 8 {
		t.Fatalf("run.json gpu_settings %+v", g)
	}
	for _, d := range g.Devices {
		if d.PowerLimitAskedW != 250 || d.PowerLimitReadBackW != 250 || d.PowerLimitDefaultW != 400 || d.PowerLimitMinW != 100 || d.PowerLimitMaxW != 400 || d.Formal == nil {
			t.Errorf("device %+v", d)
		}
	}
	// The mock's clock never shows the power cap: the run says the limit
	// never bound.
	if !strings.Contains(msgs.String(), "GPU settings: GPU 7: power cap active in 0 % of the formal stage's") {
		t.Errorf("messages lack the formal stage's summary:\n%s", msgs.String())
	}
	if f := g.Devices[0].Formal; len(g.Notes) != 1 || !strings.Contains(g.Notes[0], "never bound") || f.CapBound == nil || *f.CapBound || f.MeanSMClockMHz != 1410 {
		t.Errorf("notes %q, formal %+v", g.Notes, g.Devices[0].Formal)
	}
}

// Failure after the change (the power source cannot open): restored.
func TestRunGPUSettingsFailure(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	s.OpenTelemetry = func(context.Context, TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		return nil, record.TelemetryInfo{}, errors.New("power source lost")
	}
	if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "power source lost") {
		t.Fatalf("run: %v", err)
	}
	restored(t, srv, journal)
}

// SIGINT during the run (the command line's signal context): the run is
// interrupted and the settings restored.
func TestRunGPUSettingsSIGINT(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	prev := srv.BeforeSet
	sent := false
	srv.BeforeSet = func() {
		prev()
		if !sent {
			sent = true
			time.AfterFunc(300*time.Millisecond, func() { _ = syscall.Kill(os.Getpid(), syscall.SIGINT) })
		}
	}
	_, err := Run(ctx, s)
	if CodeOf(err) != CodeInterrupted {
		t.Fatalf("run: %v (code %d), want interrupted", err, CodeOf(err))
	}
	restored(t, srv, journal)
	if !strings.Contains(msgs.String(), "GPU settings restored (nvml)") {
		t.Errorf("no restore said after SIGINT:\n%s", msgs.String())
	}
	if run, err := archive.Load(s.Out); err != nil || run.Meta.GPUSettings == nil || run.Meta.GPUSettings.Restore != record.RestoreDone {
		t.Errorf("run.json after SIGINT: %v", err)
	}
}

// A panic (here in the Report hook) still restores the settings.
func TestRunGPUSettingsPanic(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	s.Report = func(context.Context, Report) error { panic("report exploded") }
	func() {
		defer func() {
			if r := recover(); r != "report exploded" {
				t.Errorf("recovered %v", r)
			}
		}()
		_, _ = Run(context.Background(), s)
	}()
	restored(t, srv, journal)
}

// Refused before anything changes: a limit out of range, no permission
// (with how to grant it), a journal outstanding (any run, with settings or
// not). Exit code 2, no run directory, no set call.
func TestRunGPUSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*Spec, *nvmltest.Server, gpusettings.Journals)
		want  string
	}{
		{"out of range", func(s *Spec, _ *nvmltest.Server, _ gpusettings.Journals) { s.GPU.PowerLimit = "1000" }, "outside its allowed range 100-400 W"},
		{"no permission", func(_ *Spec, srv *nvmltest.Server, _ gpusettings.Journals) { srv.GPUs[0].SetErr = 4 /* NO_PERMISSION */ }, "needs root"},
		{"journal outstanding", func(s *Spec, _ *nvmltest.Server, journal gpusettings.Journals) {
			s.GPU.PowerLimit = ""
			if err := gpusettings.WriteJournal(filepath.Join(journal.Dirs[0], "gpu-settings-GPU-x.json"), &gpusettings.Journal{RunID: "killed", Controller: "nvml"}); err != nil {
				t.Fatal(err)
			}
		}, "run killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs syncBuffer
			s, srv, journal, _ := gpuSpec(t, &msgs)
			tc.setup(&s, srv, journal)
			_, err := Run(context.Background(), s)
			if CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v (code %d), want invalid with %q", err, CodeOf(err), tc.want)
			}
			if _, err := os.Stat(s.Out); err == nil {
				t.Error("a run directory was created")
			}
			for i, g := range srv.GPUs {
				if g.LimitMW != 400000 || i > 0 && g.Sets != 0 {
					t.Errorf("GPU %d: %d mW, %d sets", i, g.LimitMW, g.Sets)
				}
			}
		})
	}
}

// nodeSource is the simulated GPUs seen as one node's power: a boundary
// that cannot tell a GPU setting's effect apart. Its devices carry
// nothing of a GPU (no GPU uuid nor GPU power field), as a node meter's.
type nodeSource struct{ telemetry.Source }

func (s nodeSource) Devices(ctx context.Context) ([]record.Device, error) {
	devs, err := s.Source.Devices(ctx)
	for i := range devs {
		devs[i].Domain, devs[i].UUID, devs[i].PowerField = record.DomainNode, "", "node_power"
	}
	return devs, err
}

// A power source that sees no GPU: the run warns and run.json notes it.
func TestRunGPUSettingsNodeBoundary(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	s.OpenTelemetry = func(ctx context.Context, env TelemetryEnv) (telemetry.Source, record.TelemetryInfo, error) {
		src, info, err := simTelemetry(ctx, env)
		info.Source = "node-meter" // not a source of GPUs alone (sim)
		return nodeSource{src}, info, err
	}
	_, _ = Run(context.Background(), s) // the node boundary may fail the profile's GPU checks
	restored(t, srv, journal)
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Meta.GPUSettings; g == nil || len(g.Notes) == 0 || !strings.Contains(g.Notes[0], "the power source sees no GPU") {
		t.Errorf("gpu_settings %+v", g)
	}
	if !strings.Contains(msgs.String(), "sees no GPU") {
		t.Errorf("no warning:\n%s", msgs.String())
	}
}

// A profile that declares gpu_power_limit_w with a default applies it
// with no flag; the flag and a --set together are refused as given twice.
func TestRunGPUSettingsProfileParameter(t *testing.T) {
	src, err := os.ReadFile(tinyProfile)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(src), "parameters:\n", "parameters:\n  gpu_power_limit_w: {type: string, default: \"300\"}\n", 1)
	profile := filepath.Join(t.TempDir(), "capped.yaml")
	if err := os.WriteFile(profile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var msgs syncBuffer
	s, srv, _, _ := gpuSpec(t, &msgs)
	s.Profile, s.GPU.PowerLimit = profile, ""
	applied := false
	srv.BeforeSet = func() {
		srv.Lock()
		applied = applied || srv.GPUs[0].LimitMW == 400000 && srv.GPUs[0].Sets == 0
		srv.Unlock()
	}
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Meta.GPUSettings; !applied || g == nil || g.PowerLimitW != "300" || g.Devices[0].PowerLimitReadBackW != 300 {
		t.Errorf("gpu_settings %+v", g)
	}

	// --set on a profile that declares the parameter: applied, and
	// run.json's parameter says so.
	s3, _, _, _ := gpuSpec(t, &msgs)
	s3.Profile, s3.GPU.PowerLimit, s3.Sets = profile, "", []string{"gpu_power_limit_w=200"}
	if _, err := Run(context.Background(), s3); err != nil {
		t.Fatalf("run: %v", err)
	}
	if run, err := archive.Load(s3.Out); err != nil || run.Meta.GPUSettings.PowerLimitW != "200" || run.Meta.Parameters["gpu_power_limit_w"] != "200" {
		t.Errorf("--set 200: gpu_settings %+v, parameters %v, %v", run.Meta.GPUSettings, run.Meta.Parameters, err)
	}

	s2, _, _, _ := gpuSpec(t, &msgs)
	s2.Sets = []string{"gpu_power_limit_w=200"}
	if _, err := Run(context.Background(), s2); CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("flag and --set: %v", err)
	}
}

// --gpu-mem-clocks through NVML: locked for the run, recorded, unlocked.
func TestRunGPUMemClocks(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	s.GPU.PowerLimit, s.GPU.MemClocks = "", "1215,1215"
	locked := false
	srv.BeforeSet = func() {
		srv.Lock()
		locked = locked || srv.GPUs[0].Sets == 0
		srv.Unlock()
	}
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	if g := run.Meta.GPUSettings; !locked || g == nil || g.MemClocksMHz != "1215,1215" || g.Devices[0].MemClocksAskedMHz != "1215,1215" {
		t.Errorf("gpu_settings %+v", g)
	}
	srv.Lock()
	defer srv.Unlock()
	for i, g := range srv.GPUs {
		if g.MemLocked != [2]uint32{} || g.Sets != 2 {
			t.Errorf("GPU %d: memory clocks %v after the run, %d sets", i, g.MemLocked, g.Sets)
		}
	}
	if found, _ := journal.Find(); len(found) > 0 {
		t.Error("journal left")
	}
}

// The driver cannot read the clock-event reasons: whether the limit bound
// is unknown, and the run says so; it never says the limit never bound.
func TestRunGPUSettingsReasonsUnknown(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	for _, g := range srv.GPUs {
		g.ReasonsErr = 3 // NOT_SUPPORTED
	}
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	restored(t, srv, journal)
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	g := run.Meta.GPUSettings
	if strings.Contains(msgs.String(), "never bound") || len(g.Notes) != 1 || strings.Contains(g.Notes[0], "never bound") ||
		!strings.Contains(g.Notes[0], "unknown") || !strings.Contains(msgs.String(), "GPU settings: GPU 3: power cap unknown") {
		t.Errorf("notes %q, messages:\n%s", g.Notes, msgs.String())
	}
	for _, d := range g.Devices {
		if f := d.Formal; f == nil || f.CapBound != nil || f.PowerCapShare != nil || f.ReasonsUnread != f.Samples || f.Samples == 0 {
			t.Errorf("GPU %d: formal %+v: want cap_bound and power_cap_share absent, every reading's reasons unread", d.Index, f)
		}
	}
}

// The journal names the run that exists: a clock that moves a second at
// every reading used to give the journal one run id and run.json another
// (the id was built twice).
func TestRunGPUSettingsJournalRunID(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	var mu sync.Mutex
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	s.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t0 = t0.Add(time.Second)
		return t0
	}
	var journalled []string
	prev := srv.BeforeSet
	srv.BeforeSet = func() {
		prev()
		// Every GPU's journal names the same run.
		var ids []string
		for _, j := range readJournals(t, journal) {
			ids = append(ids, j.RunID)
		}
		if len(ids) > 0 && ids[0] == ids[len(ids)-1] {
			journalled = append(journalled, ids[0])
		}
	}
	if _, err := Run(context.Background(), s); err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	// 8 sets see the journal written before them, 8 restores too.
	if len(journalled) != 16 {
		t.Fatalf("journal seen %d times, want 16", len(journalled))
	}
	// The restores (the last 8 sets) see the id of the run that exists.
	for _, id := range journalled[8:] {
		if id != run.Meta.RunID {
			t.Errorf("journal names run %q, run.json %q", id, run.Meta.RunID)
		}
	}
}

// A restore that fails (the driver refuses GPU 0's limit after the run)
// is recorded in run.json and said on the console; the journal keeps it.
func TestRunGPUSettingsRestoreFails(t *testing.T) {
	var msgs syncBuffer
	s, srv, journal, _ := gpuSpec(t, &msgs)
	sets := 0
	prev := srv.BeforeSet
	srv.BeforeSet = func() {
		prev()
		if sets++; sets == 9 { // the first restore
			srv.Lock()
			srv.GPUs[0].SetErr = 4 // NO_PERMISSION
			srv.Unlock()
		}
	}
	_, err := Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "not restored") {
		t.Fatalf("run: %v", err)
	}
	run, lerr := archive.Load(s.Out)
	if lerr != nil {
		t.Fatal(lerr)
	}
	g := run.Meta.GPUSettings
	if g == nil || g.Restore != record.RestoreFailed || !strings.Contains(g.RestoreError, "GPU 0: restore power limit 400 W") {
		t.Errorf("run.json gpu_settings restore %q %q", g.Restore, g.RestoreError)
	}
	if !strings.Contains(msgs.String(), "GPU settings NOT restored") || !strings.Contains(msgs.String(), "joulebench restore") {
		t.Errorf("console:\n%s", msgs.String())
	}
	if len(readJournals(t, journal)) == 0 {
		t.Error("the journal is gone though GPU 0 was not restored")
	}
}

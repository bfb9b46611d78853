package runner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulebench/joulebench/archive"
	"github.com/joulebench/joulebench/archive/record"
	"github.com/joulebench/joulebench/internal/runprogress"
)

// A run of the tiny profile on the simulator writes a complete archive
// with what the spec asked to record (labels, the quick set, the extra
// body, the host's state, the image digest), tells the progress and log
// hooks, and hands the archive to Report.
func TestRunSimulatedArchive(t *testing.T) {
	var msgs, console syncBuffer
	s := testSpec(t, &msgs)
	s.Out = filepath.Join(t.TempDir(), "run")
	s.Labels = []string{"scenario=chat"}
	s.ModelParams = "8e9"
	s.ExtraBody = `{"think": false}`
	s.ImageDigest = "sha256:" + strings.Repeat("ab", 32)
	s.Console = &console
	s.Host = fakeHost{swap: "12 MiB", procs: "vllm (pid 7)"}
	progressed, finished := 0, false
	s.StartProgress = func(tel record.TelemetryInfo, sim bool) (func(runprogress.Snapshot), func()) {
		if !sim || tel.Source != "sim" {
			t.Errorf("progress: simulated %v, telemetry %+v", sim, tel)
		}
		return func(runprogress.Snapshot) { progressed++ }, func() { finished = true }
	}
	var reported Report
	s.Report = func(_ context.Context, r Report) error { reported = r; return nil }
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, msgs.String())
	}
	if len(res.Dirs) != 1 || res.Dirs[0] != s.Out || reported.Dir != s.Out || reported.OneOfMany || reported.Loaded == nil {
		t.Fatalf("result %+v, report %+v", res, reported)
	}
	run, err := archive.Load(s.Out)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.Status != record.StatusComplete || !m.Simulated || run.Results == nil {
		t.Fatalf("status %q simulated %v results %v", m.Status, m.Simulated, run.Results != nil)
	}
	for k, want := range map[string]string{
		"scenario": "chat", "model_params": "8e9", "quick_parameters": "max_tokens=8",
		"extra_body": `{"think":false}`, "host_swap_used": "12 MiB", "other_engine_processes": "vllm (pid 7)",
	} {
		if m.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, m.Labels[k], want)
		}
	}
	if m.Engine.Extra["image_digest"] != s.ImageDigest {
		t.Errorf("image digest %v", m.Engine.Extra)
	}
	if m.Parameters["max_tokens"] != 8.0 && m.Parameters["max_tokens"] != 8 {
		t.Errorf("max_tokens %v (%T), want the quick set's 8", m.Parameters["max_tokens"], m.Parameters["max_tokens"])
	}
	if progressed == 0 || !finished {
		t.Errorf("progress: %d updates, finished %v", progressed, finished)
	}
	if !strings.Contains(console.String(), "step 2 (baseline)") || !strings.Contains(msgs.String(), "SIMULATED") {
		t.Errorf("console:\n%s\nmessages:\n%s", console.String(), msgs.String())
	}
	// The side path kept only the family the profile names.
	for _, em := range run.EngineMetrics {
		if em.Name != "vllm:num_requests_running" {
			t.Errorf("engine metric %s kept; the profile names one family", em.Name)
			break
		}
	}
	// Report's error is the run's.
	s.Out = filepath.Join(t.TempDir(), "run")
	want := WithCode(CodeChecks, errors.New("check failed"))
	s.Report = func(context.Context, Report) error { return want }
	if _, err := Run(context.Background(), s); !errors.Is(err, want) || CodeOf(err) != CodeChecks {
		t.Errorf("report error: got %v (code %d)", err, CodeOf(err))
	}
}
